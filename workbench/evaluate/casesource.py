"""Which labelled cases a run uses: one rule for ``eval``, ``tune``, ``compare``, ``check`` and the
dashboard's Evaluate and Compare-engines views.

In order:

1. ``--cases FILE`` (the dashboard's ``--cases`` too);
2. the agent's own HoloDeck ``test_cases`` (or its ``test_cases_file``) that name
   ``expected_tools``;
3. ``<agent stem>.cases.yaml`` beside the agent (where the dashboard saves the queries you label
   and ``holo-tune cases generate`` writes by default);
4. a ``cases.jsonl`` / ``cases.yaml`` beside the agent (the layout of the labelled data sets:
   ``agent.yaml``, ``catalog.json``, ``cases.jsonl``).

Every caller says which one was used (:meth:`CasesSource.describe`): a stderr line for the CLI,
the view header in the dashboard.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from workbench.catalog.models import Catalog
from workbench.errors import HoloTuneError, InputError
from workbench.evaluate.cases import (
    AgentCases,
    Case,
    CasesSource,
    Kind,
    ResolvedCase,
    cases_from_agent,
    load_cases,
    resolve_cases,
)

#: Case files of the data-set layout looked for beside the agent (after ``<stem>.cases.yaml``).
DATASET_NAMES = ("cases.jsonl", "cases.yaml", "cases.yml")
#: The agent's own cases file: ``research-agent.yaml`` -> ``research-agent.cases.yaml``.
SUFFIX = ".cases.yaml"


def default_cases_path(agent_path: str | Path) -> Path:
    """``<agent stem>.cases.yaml`` beside the agent: where labels are saved and cases generated."""
    agent_path = Path(agent_path)
    return agent_path.with_name(agent_path.stem + SUFFIX)


def no_cases_message(agent_path: str | Path) -> str:
    """Why there is nothing to measure, and the three ways to get cases."""
    beside = default_cases_path(agent_path).name
    return (
        "no cases: pass --cases FILE, give the agent test_cases with expected_tools, label "
        f"queries in the dashboard (saved to {beside}) or run 'holo-tune cases generate'"
    )


def find_cases_source(
    agent: AgentCases, cases: str | Path | None = None
) -> tuple[CasesSource, list[Case]] | None:
    """The first source of the module's order that holds cases, and its cases (None: none).

    A ``--cases`` file is read as given (a missing or malformed file is a :class:`CasesError`);
    a file beside the agent is read only when it exists.
    """
    if cases is not None and str(cases) != "":
        path = Path(cases)
        return CasesSource("flag", path), load_cases(path)
    own = cases_from_agent(agent)
    if own:
        cases_file = getattr(agent, "cases_file", None)
        holder = cases_file.path if cases_file is not None else agent.path
        return CasesSource("agent", Path(holder)), own
    for kind, path in _beside(agent.path):
        if path.is_file():
            return CasesSource(kind, path), load_cases(path)
    return None


def labelled_cases(
    agent: AgentCases, catalog: Catalog, cases: str | Path | None = None
) -> list[ResolvedCase]:
    """The cases of :func:`find_cases_source` resolved against ``catalog`` (empty: no source,
    or no case naming a tool of it): what a write measures its setting on before it asks."""
    found = find_cases_source(agent, cases)
    if found is None:
        return []
    return list(resolve_cases(found[1], catalog).cases)


def resolve_cases_source(
    agent: AgentCases, cases: str | Path | None = None
) -> tuple[CasesSource, list[Case]]:
    """:func:`find_cases_source`, or an :class:`InputError` saying how to get cases."""
    found = find_cases_source(agent, cases)
    if found is None:
        raise InputError(no_cases_message(agent.path), file=agent.path)
    return found


def default_source(agent: AgentCases) -> CasesSource | None:
    """The source a run without ``--cases`` would use, without reading a cases file (for a view
    that opens on a path): the agent's test_cases when it names tools, else the first file
    beside it that exists. None when there is none. A malformed test_cases counts as the
    agent's own (running them says what is wrong)."""
    try:
        own = cases_from_agent(agent)
    except HoloTuneError:
        own = [Case("", ())]
    if own:
        cases_file = getattr(agent, "cases_file", None)
        holder = cases_file.path if cases_file is not None else agent.path
        return CasesSource("agent", Path(holder))
    for kind, path in _beside(agent.path):
        if path.is_file():
            return CasesSource(kind, path)
    return None


def _beside(agent_path: Path) -> Sequence[tuple[Kind, Path]]:
    out: list[tuple[Kind, Path]] = [("beside", default_cases_path(agent_path))]
    out += [("dataset", agent_path.parent / name) for name in DATASET_NAMES]
    return out
