"""What the dashboard was opened with (the CLI's arguments, or a test's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Options:
    agent: Path
    catalog: Path | None = None
    timeout: float | None = None
    embedder: str | None = None
    usage: Path | None = None
    #: ``--cases FILE``: where labels are saved and what Evaluate / Compare engines run
    #: (None: the one default order of ``workbench.evaluate.casesource``).
    cases: Path | None = None
    #: A query typed in at start (demo, screenshots, tests).
    query: str = ""
    environ: Mapping[str, str] | None = None
    #: ``--runtime NAME``: what runs the agent (None: detected, docs/runtimes.md).
    runtime: str | None = None
    #: Show how long scoring took (off for snapshots and screenshots, which must not vary).
    show_timing: bool = True
    #: ``--debug``: an internal error shows its traceback instead of one line.
    debug: bool = False
