"""holo-tune's engine settings from the command line: ``--settings FILE``, then the flags over it.

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
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.config import AgentConfig
from workbench.errors import InputError
from workbench.search.embedders import EmbedderChoice
from workbench.search.holo.settings import HoloSettings, read_settings

#: The settings' keys as the flags that override them name them (for a refused flag's line).
FLAGS = {"top_k": "--top-k", "max_tokens": "--max-tokens", "threshold": "--threshold"}
#: ``--method``: the signal each of HoloDeck's search methods turns off.
METHOD_OFF = {"bm25": "dense"}


def settings_file(args: argparse.Namespace) -> HoloSettings:
    """The ``--settings`` file's settings (the engine's defaults without one), its ``cases``
    made relative to the file."""
    path = getattr(args, "settings", None)
    if not path:
        return HoloSettings()
    settings = read_settings(path)
    if settings.cases and not Path(settings.cases).is_absolute():
        settings = settings.with_(cases=str(Path(path).parent / settings.cases))
    return settings


def serve_settings(
    args: argparse.Namespace, warn: Callable[[str], None] | None = None
) -> HoloSettings:
    """The settings ``args`` search with: the file's (:func:`settings_file`), the flags over
    them. ``warn`` (a function of one line) is told of a flag that is read but changes
    nothing."""
    settings = settings_file(args)
    changes: dict[str, Any] = {}
    top_k = getattr(args, "top_k", None)
    max_tokens = getattr(args, "max_tokens", None)
    if max_tokens is not None:
        changes["max_tokens"] = max_tokens
        changes["top_k"] = top_k  # without --top-k the budget alone decides
    if top_k is not None:
        changes["top_k"] = top_k
    threshold = getattr(args, "threshold", None)
    if threshold is not None:
        changes["threshold"] = threshold if threshold > 0.0 else None
    method = getattr(args, "method", None)
    if method in METHOD_OFF:
        changes["weights"] = {**settings.weights, METHOD_OFF[method]: 0.0}
    pins = flag_pins(args)
    if pins is not None:
        changes["pins"] = tuple(pins)
    top_n = getattr(args, "top_n_used", None)
    if top_n and warn is not None:
        warn(f"--top-n-used {top_n}: holo-tune's engine counts no usage; ignored")
    try:
        return settings.with_(**changes)
    except InputError as err:
        flag = FLAGS.get(err.field or "", err.field)
        raise InputError(err.message, field=flag) from None


def flag_pins(args: argparse.Namespace) -> list[str] | None:
    """The tools the flags pin (``--pin``, ``--pin-file``, ``--always-include``,
    ``--always-include-file``, in that order, each once), None when no flag names one."""
    from workbench.config.namesfile import read_names

    names: list[str] = []
    given = False
    for attr in ("pin", "always_include"):
        values = getattr(args, attr, None)
        if values:
            names += list(values)
            given = True
    for flag, attr in (
        ("--pin-file", "pin_file"),
        ("--always-include-file", "always_include_file"),
    ):
        path = getattr(args, attr, None)
        if path:
            names += read_names(path, flag)
            given = True
    return list(dict.fromkeys(names)) if given else None


def embedder_spec(args: argparse.Namespace, settings: HoloSettings) -> str | None:
    """What scores the dense signal: ``--embedder``, else the settings' ``embedder`` (None:
    ``HOLO_TUNE_EMBEDDER``, else the agent's, as every command resolves it)."""
    flag: str | None = getattr(args, "embedder", None)
    return flag if flag is not None else settings.embedder


def check_embedder(
    args: argparse.Namespace, settings: HoloSettings, agent: AgentConfig
) -> EmbedderChoice:
    """The embedder choice for ``settings`` (:func:`embedder_spec`), or the settings file's line
    when its ``embedder`` cannot be built."""
    from workbench.search.embedders import resolve_embedder

    spec = embedder_spec(args, settings)
    try:
        return resolve_embedder(agent, spec)
    except InputError as err:
        if getattr(args, "embedder", None) is not None or not getattr(args, "settings", None):
            raise
        raise InputError(err.message, file=args.settings, field="embedder") from None
