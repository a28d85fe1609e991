"""holo-tune's engine settings from the search flags: ``--settings FILE``, then the flags over it.

``serve``, ``search --runtime serve`` and ``eval --runtime serve`` read them with these functions,
so the three search with the same settings for the same flags:

- ``--settings FILE``: :func:`~workbench.search.holo.settings.read_settings` (the settings, or a
  whole ``tune --runtime serve --json`` report); without it the engine's defaults;
- ``--top-k K``, ``--max-tokens N`` (without ``--top-k``: the budget alone decides),
  ``--threshold T`` (the confidence below which no tool fits; 0: none, as the dashboard's knob)
  override the file's key;
- ``--method``: ``bm25`` turns the dense signal off (no embedding model starts), ``semantic`` and
  ``hybrid`` keep the settings' weights (HoloDeck's names, kept so that a ``.mcp.json`` written
  by an older ``tune --apply`` keeps working; :func:`~workbench.search.holo.knobs.knob_settings`
  maps the dashboard's knobs the same way);
- ``--pin``/``--pin-file``, and HoloDeck's ``--always-include``/``--always-include-file`` (tools
  always sent: serve pins them), replace the file's pins; ``--no-always-include`` and
  ``--top-n-used 0`` (what older ``.mcp.json`` files carry) change nothing;
- ``--embedder``, else the settings' ``embedder``, else ``HOLO_TUNE_EMBEDDER`` or the agent's.

A relative ``cases`` path in the file is relative to the file.

Every command reads its flags into :class:`SearchFlags` (``commands/``); the runtimes and serve
take them from there, and a client's ``.mcp.json`` entry is read back with
:func:`read_serve_argv`, from the same declaration of serve's flags the command line is made of
(:func:`add_serve_flags`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import HoloTuneError, InputError

if TYPE_CHECKING:  # heavy (the embedders, numpy): imported where used, so that --help is quick
    from workbench.config import AgentConfig
    from workbench.search.embedders import EmbedderChoice
    from workbench.search.holo.settings import HoloSettings


@dataclass(frozen=True)
class SearchFlags:
    """The search flags of ``search``, ``eval`` and ``serve`` as the user gave them (None: not
    given): HoloDeck's block's (``method``, ``top_k``, ``threshold``, ``always_include``...),
    a search runtime's (``variant``), holo-tune's engine's (``settings``, ``max_tokens``,
    ``pin``...) and the ``embedder``."""

    method: str | None = None
    top_k: int | None = None
    threshold: float | None = None
    always_include: tuple[str, ...] | None = None
    always_include_file: str | None = None
    top_n_used: int | None = None
    enabled: str | None = None
    variant: str | None = None
    usage: str | None = None
    settings: str | None = None
    max_tokens: int | None = None
    pin: tuple[str, ...] | None = None
    pin_file: str | None = None
    embedder: str | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> SearchFlags:
        """The flags among ``values`` (a command line's, ``vars(args)``); lists become tuples."""
        given: dict[str, Any] = {}
        for f in fields(cls):
            value = values.get(f.name)
            given[f.name] = tuple(value) if isinstance(value, list) else value
        return cls(**given)


def add_serve_flags(p: argparse.ArgumentParser, settings_help: str, budget_help: str) -> None:
    """serve's search flags (``--settings FILE``, the flags over it, HoloDeck's older ones and
    the pins): the command line's ``serve`` and :func:`read_serve_argv` are made of this."""
    g = p.add_argument_group("search (--settings FILE, the flags over it; docs/serve.md)")
    g.add_argument("--settings", metavar="FILE", help=settings_help)
    g.add_argument(
        "--top-k", type=int, metavar="K", help="the most tools one search returns (1-100)"
    )
    g.add_argument("--max-tokens", type=int, metavar="N", help=budget_help)
    g.add_argument(
        "--threshold",
        type=float,
        metavar="T",
        help="below this confidence a search answers 'no tool fits' (0-1, 0: none; the best "
        "tool's cosine, or without embeddings the share of the query's words the best tool has)",
    )
    g.add_argument(
        "--method",
        choices=["semantic", "bm25", "hybrid"],
        help="kept for .mcp.json files an older tune --apply wrote: bm25 turns the dense signal "
        "off (no embedding model starts), semantic and hybrid keep the settings' weights",
    )
    old = p.add_argument_group("HoloDeck's filter flags, read for older .mcp.json files")
    old.add_argument(
        "--always-include",
        action="append",
        metavar="NAME",
        help="a tool always sent: pinned, as --pin (repeatable)",
    )
    old.add_argument(
        "--always-include-file", metavar="FILE", help="tools always sent, from a file: pinned"
    )
    old.add_argument(
        "--no-always-include", action="store_true", help="changes nothing (no YAML block is read)"
    )
    old.add_argument(
        "--top-n-used", type=int, metavar="N", help="ignored (the engine counts no usage)"
    )
    p.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="TOOL",
        help="a tool listed with its full definition beside the two search tools, full or bare "
        "name (repeatable)",
    )
    p.add_argument(
        "--pin-file",
        metavar="FILE",
        help="pinned tools from a file: one name a line, or a tuner's --json output "
        "(tune --runtime serve --json)",
    )


class _Refused(Exception):
    """What the entry reader's parser raises instead of exiting."""


class _Reader(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # never exits: the entry is not serve's
        raise _Refused(message)


def read_serve_argv(argv: Sequence[str]) -> SearchFlags | None:
    """The search flags of a client's entry that starts serve (``serve AGENT --flag ...``, as
    ``tune --apply`` writes it), None when it is not one or its flags do not parse. serve's
    other flags (``--catalog``, ``--transport`` ...) are passed over."""
    if not argv or argv[0] != "serve":
        return None
    reader = _Reader(add_help=False)
    reader.add_argument("agent")
    reader.add_argument("--embedder")
    add_serve_flags(reader, "", "")
    try:
        parsed, _ = reader.parse_known_intermixed_args(list(argv[1:]))
    except (_Refused, HoloTuneError):
        return None
    return SearchFlags.of(vars(parsed))


#: The settings' keys as the flags that override them name them (for a refused flag's line).
FLAGS = {"top_k": "--top-k", "max_tokens": "--max-tokens", "threshold": "--threshold"}
#: ``--method``: the signal each of HoloDeck's search methods turns off.
METHOD_OFF = {"bm25": "dense"}


def settings_file(flags: SearchFlags) -> HoloSettings:
    """The ``--settings`` file's settings (the engine's defaults without one), its ``cases``
    made relative to the file."""
    from workbench.search.holo.settings import HoloSettings, read_settings

    path = flags.settings
    if not path:
        return HoloSettings()
    settings = read_settings(path)
    if settings.cases and not Path(settings.cases).is_absolute():
        settings = settings.with_(cases=str(Path(path).parent / settings.cases))
    return settings


def serve_settings(flags: SearchFlags, warn: Callable[[str], None] | None = None) -> HoloSettings:
    """The settings ``flags`` search with: the file's (:func:`settings_file`), the flags over
    them. ``warn`` (a function of one line) is told of a flag that is read but changes
    nothing."""
    settings = settings_file(flags)
    changes: dict[str, Any] = {}
    top_k = flags.top_k
    max_tokens = flags.max_tokens
    if max_tokens is not None:
        changes["max_tokens"] = max_tokens
        changes["top_k"] = top_k  # without --top-k the budget alone decides
    if top_k is not None:
        changes["top_k"] = top_k
    threshold = flags.threshold
    if threshold is not None:
        changes["threshold"] = threshold if threshold > 0.0 else None
    method = flags.method
    if method in METHOD_OFF:
        changes["weights"] = {**settings.weights, METHOD_OFF[method]: 0.0}
    pins = flag_pins(flags)
    if pins is not None:
        changes["pins"] = tuple(pins)
    top_n = flags.top_n_used
    if top_n and warn is not None:
        warn(f"--top-n-used {top_n}: holo-tune's engine counts no usage; ignored")
    try:
        return settings.with_(**changes)
    except InputError as err:
        flag = FLAGS.get(err.field or "", err.field)
        raise InputError(err.message, field=flag) from None


def flag_pins(flags: SearchFlags) -> list[str] | None:
    """The tools the flags pin (``--pin``, ``--pin-file``, ``--always-include``,
    ``--always-include-file``, in that order, each once), None when no flag names one."""
    from workbench.config.namesfile import read_names

    names: list[str] = []
    given = False
    for values in (flags.pin, flags.always_include):
        if values:
            names += list(values)
            given = True
    for flag, path in (
        ("--pin-file", flags.pin_file),
        ("--always-include-file", flags.always_include_file),
    ):
        if path:
            names += read_names(path, flag)
            given = True
    return list(dict.fromkeys(names)) if given else None


def embedder_spec(flags: SearchFlags, settings: HoloSettings) -> str | None:
    """What scores the dense signal: ``--embedder``, else the settings' ``embedder`` (None:
    ``HOLO_TUNE_EMBEDDER``, else the agent's, as every command resolves it)."""
    flag = flags.embedder
    return flag if flag is not None else settings.embedder


def check_embedder(
    flags: SearchFlags, settings: HoloSettings, agent: AgentConfig
) -> EmbedderChoice:
    """The embedder choice for ``settings`` (:func:`embedder_spec`), or the settings file's line
    when its ``embedder`` cannot be built."""
    from workbench.search.embedders import resolve_embedder

    spec = embedder_spec(flags, settings)
    try:
        return resolve_embedder(agent, spec)
    except InputError as err:
        if flags.embedder is not None or not flags.settings:
            raise
        raise InputError(err.message, file=flags.settings, field="embedder") from None
