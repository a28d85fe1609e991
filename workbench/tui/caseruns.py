"""What the views that run labelled cases share (Evaluate, Compare engines).

Where the cases come from (the CLI's one default order: ``--cases``, the agent's own
``test_cases``, ``<agent stem>.cases.yaml`` beside it), which path each view was
last given (kept for the session, one path for both views), why a run has nothing to run (in
the TUI's words: a path is typed above, not passed as ``--cases``), and how a
thread worker reports progress: it posts :class:`RunProgress` to its screen (it never touches a
widget) and stops at the next progress call once the worker is cancelled (the core lets a
progress callback raise to stop a run).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual.message import Message
from textual.message_pump import MessagePump

from workbench.config import AgentConfig
from workbench.errors import HoloTuneError, InputError
from workbench.evaluate import CaseSet, cases_from_agent, load_cases, resolve_cases
from workbench.evaluate.cases import CasesSource
from workbench.evaluate.casesource import default_cases_path, default_source
from workbench.workspace import Workspace

#: The value of the path input that means "the agent's own test_cases".
AGENT_CASES = "(the agent's test_cases)"

#: Nothing to run: the agent has no labelled test_cases and no file is named (``eval`` says
#: "pass --cases FILE"; here the path input above the results takes the file).
NO_CASES = (
    "no cases: type a cases file path above (YAML or JSON Lines), "
    "or give the agent test_cases with expected_tools"
)
#: How else to get cases, after :data:`NO_CASES`.
GET_CASES = "label queries in the dashboard or run 'holo-tune cases generate'"
#: The cases name no tool of the catalog (``eval``'s words).
NO_TOOL_CASES = "no case names a tool of this catalog"

Progress = Callable[[int, int], None]


@dataclass
class CasesMemory:
    """The cases path last typed, for the session: the dashboard keeps one for every view
    (Evaluate, Compare engines, Which runtime?), so each opens on what was typed in another
    (``None``: nothing typed yet; each view then has its own default)."""

    path: str | None = None
    #: The cases file a label was saved to in this session: both views open on it (while no
    #: path is typed), so the next run measures the new case.
    labels: Path | None = None


@dataclass
class RunProgress(Message):
    """``done`` of ``total`` steps of a run (posted from a thread worker)."""

    done: int
    total: int


class Stopped(Exception):
    """The run was cancelled (raised from the progress callback, as the core allows)."""


def view_default(agent: AgentConfig, flag: Path | None = None) -> str:
    """The path a view opens on, by the one default order of the CLI
    (:mod:`workbench.evaluate.casesource`): ``--cases``, the agent's own test_cases
    (:data:`AGENT_CASES`), ``<agent stem>.cases.yaml`` or a data set's ``cases.jsonl`` beside
    it; :data:`AGENT_CASES` when there is none (running it says how to get cases)."""
    if flag is not None:
        return str(flag)
    source = default_source(agent)
    if source is None or source.kind == "agent":
        return AGENT_CASES
    return str(source.path)


def source_text(path: str, agent: AgentConfig, flag: Path | None = None) -> str:
    """Where the cases of the path input come from, for the view header."""
    if is_agent_cases(path):
        source = default_source(agent)
        if source is not None and source.kind == "agent":
            return f"cases: {source.describe()}"
        return "cases: none yet"
    if flag is not None and path == str(flag):
        return f"cases: {CasesSource('flag', flag).describe()}"
    source = default_source(agent)
    if source is not None and source.kind != "agent" and path == str(source.path):
        return f"cases: {source.describe()}"
    beside = default_cases_path(agent.path)
    if path == str(beside):  # labelled in this session, though the agent has test_cases
        return f"cases: {CasesSource('beside', beside).describe()}"
    return f"cases: {path}"


def agent_cases_first(agent: AgentConfig, agent_path: Path | None = None) -> str:
    """:func:`view_default` without ``--cases`` (kept for callers of the old name)."""
    return view_default(agent)


def is_agent_cases(path: str) -> bool:
    """The path input names the agent's own test_cases (the placeholder, or nothing)."""
    return path in ("", AGENT_CASES)


def nothing_to_run(path: str, agent: AgentConfig) -> str | None:
    """Why running ``path`` would run nothing, when that is known without reading a file (the
    agent's own test_cases are in memory): :data:`NO_CASES`, or why they are malformed."""
    if not is_agent_cases(path):
        return None
    try:
        own = cases_from_agent(agent)
    except HoloTuneError as err:
        return str(err)
    return None if own else f"{NO_CASES}; or {GET_CASES}"


def read_cases(path: str, ws: Workspace) -> CaseSet:
    """The cases the path input names, resolved against the catalog (slow on a large file: call
    from the worker). Raises InputError when there is nothing to run, as ``eval`` does."""
    if is_agent_cases(path):
        raw = cases_from_agent(ws.agent)
        if not raw:
            raise InputError(f"{NO_CASES}; or {GET_CASES}")
        source = default_source(ws.agent)
    else:
        raw = load_cases(path)
        source = CasesSource("flag", Path(path))
    cases = resolve_cases(raw, ws.catalog)
    cases.source = source
    if not len(cases):
        raise InputError(NO_TOOL_CASES, file=path if not is_agent_cases(path) else None)
    return cases


def progress_poster(target: MessagePump, is_cancelled: Callable[[], bool]) -> Progress:
    """An ``on_progress(done, total)`` for the core that posts :class:`RunProgress` to
    ``target`` and raises :class:`Stopped` once ``is_cancelled()``."""

    def progress(done: int, total: int) -> None:
        if is_cancelled():
            raise Stopped
        target.post_message(RunProgress(done, total))

    return progress
