"""Runtimes as plugins: one module per runtime behind one interface (:mod:`.base`), found through
the registry (:mod:`.registry`); :mod:`.detect` says which one runs an agent. See
docs/architecture.md, "Runtimes", for adding one."""

from workbench.runtimes.base import (
    Change,
    EngineNote,
    Evidence,
    Knob,
    Probe,
    Runtime,
    SearchRanking,
    ToolConfig,
)
from workbench.runtimes.registry import (
    all_runtimes,
    default_runtime,
    get_runtime,
    runtime_names,
    searching_runtimes,
)

__all__ = [
    "Change",
    "EngineNote",
    "Evidence",
    "Knob",
    "Probe",
    "Runtime",
    "SearchRanking",
    "ToolConfig",
    "all_runtimes",
    "default_runtime",
    "get_runtime",
    "runtime_names",
    "searching_runtimes",
]
