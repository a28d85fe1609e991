"""Which runtime reads the agent, and why.

Each runtime (:mod:`workbench.runtimes`: HoloDeck 0.6 and 0.7, Anthropic's API, Claude Code,
OpenAI's Responses API, ...) says what evidence names it; the strongest wins:

* ``--runtime NAME`` when the user says so;
* else an installed package (``holodeck-ai`` where holo-tune runs names its generation);
* else a pin beside the agent (``uv.lock``, ``requirements*.txt``, ``pyproject.toml`` in the
  agent's folder or a parent, up to the project's root);
* else the YAML (an ``openai:`` block exists only in HoloDeck 0.7+ configs; a ``tool_filtering``
  block only in 0.4-0.6 ones);
* else the default runtime (HoloDeck 0.6, today's ``tool_filtering`` behaviour).

:func:`detect_runtime` answers with a :class:`RuntimeInfo` (the name and the reason, for headers,
``check`` and every ``--json``; :attr:`RuntimeInfo.plugin` is the runtime itself);
:func:`check_writable` says whether a write suits the runtime (``None``) or why not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.runtimes.base import SOURCES, Change, Probe, Runtime, Source
from workbench.runtimes.holodeck_versions import PACKAGE, installed_holodeck, installed_version
from workbench.runtimes.holodeck_versions import find_pin as _find_pin
from workbench.runtimes.holodeck_versions import spec_generation as _spec_generation
from workbench.runtimes.registry import all_runtimes, default_runtime, get_runtime, runtime_names

__all__ = [
    "Change",
    "RuntimeInfo",
    "Source",
    "check_writable",
    "detect_runtime",
    "find_pin",
    "parse_runtime",
    "spec_generation",
]


@dataclass(frozen=True, slots=True)
class RuntimeInfo:
    """The runtime the agent is tuned for, and the evidence for it."""

    name: str
    reason: str
    source: Source

    @property
    def plugin(self) -> Runtime:
        """The runtime itself (its module's :class:`~workbench.runtimes.base.Runtime`)."""
        return get_runtime(self.name)

    @property
    def reads_tool_filtering(self) -> bool:
        """Only HoloDeck 0.4-0.6 reads a ``tool_filtering`` block."""
        return self.plugin.reads_tool_filtering

    @property
    def deferred(self) -> bool:
        """Whether the model finds tools through a search tool (the rest deferred)."""
        return self.plugin.searches

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "reason": self.reason, "source": self.source}

    def line(self) -> str:
        """``runtime NAME (the reason)``: for headers and reports."""
        return f"runtime {self.name} ({self.reason})"


def parse_runtime(name: str) -> str:
    """A ``--runtime`` value (InputError naming the known ones otherwise)."""
    return get_runtime(name).name


def detect_runtime(
    agent_path: str | Path,
    data: Mapping[str, Any] | None,
    *,
    explicit: str | None = None,
    installed: Callable[[], str | None] = installed_holodeck,
) -> RuntimeInfo:
    """The runtime of the agent at ``agent_path`` (``data``: its parsed YAML), strongest evidence
    first: ``explicit`` (the flag), an installed package, a pin beside the agent, the YAML, the
    default. ``installed`` gives the installed ``holodeck-ai`` (a stand-in in tests)."""
    if explicit is not None:
        return RuntimeInfo(parse_runtime(explicit), "--runtime", "flag")

    def version(dist: str) -> str | None:
        return installed() if dist == PACKAGE else installed_version(dist)

    probe = Probe(Path(agent_path), data, version)
    best: tuple[int, int, RuntimeInfo] | None = None
    for runtime in all_runtimes():
        evidence = runtime.detect(probe)
        if evidence is None:
            continue
        rank = (-SOURCES.index(evidence.source), runtime.detect_priority)
        if best is None or rank > best[:2]:
            best = (*rank, RuntimeInfo(runtime.name, evidence.reason, evidence.source))
    if best is not None:
        return best[2]
    return RuntimeInfo(
        default_runtime().name, "nothing says 0.7+: HoloDeck 0.4-0.6 assumed", "default"
    )


def check_writable(runtime: RuntimeInfo, change: Change) -> str | None:
    """Why writing ``change`` into the agent YAML would not suit ``runtime`` (None: it does).

    The one line says why and what to use instead; callers refuse the write (exit 2, file
    untouched) unless the user forces it (the command line says how: ``--force``).
    """
    return runtime.plugin.refusal(runtime, change)


def _name_of_generation(generation: str) -> str:
    return next(r.name for r in all_runtimes() if getattr(r, "generation", None) == generation)


def find_pin(folder: Path) -> tuple[str, str] | None:
    """The runtime a HoloDeck pin beside the agent names, and where (None: no pin says)."""
    found = _find_pin(folder)
    return None if found is None else (_name_of_generation(found[0]), found[1])


def spec_generation(spec: str) -> str | None:
    """The HoloDeck runtime a version specifier admits: one of 0.6.40 and 0.7.1, not both."""
    generation = _spec_generation(spec)
    return None if generation is None else _name_of_generation(generation)


def __getattr__(name: str) -> Any:
    """``RUNTIMES``: every registered runtime's name, in display order (read from the registry
    when asked, so that plugins are included)."""
    if name == "RUNTIMES":
        return runtime_names()
    raise AttributeError(name)
