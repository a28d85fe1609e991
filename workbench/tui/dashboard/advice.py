"""The advice beyond the knobs that the dashboard shows (issue 12), as plain data: free of
Textual, computed by the core.

- :func:`read_catalog` (once per catalog, in a thread): the catalog findings
  (:func:`~workbench.evaluate.catalog_findings.catalog_findings`: confusable pairs, one-word
  descriptions, bill dominators), the query reader
  (:class:`~workbench.evaluate.query_findings.QueryReader`, built once per catalog so reading a
  keystroke's query is a few set operations) and the labelled cases, resolved.
- :func:`unreachable` (once per setting, in a thread, when there are cases): the tools the cases
  expect that the setting never sends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.errors import HoloTuneError
from workbench.evaluate import CaseSet, Finding, evaluate, resolve_cases
from workbench.evaluate.casesource import find_cases_source
from workbench.evaluate.catalog_findings import catalog_findings, unreachable_tools
from workbench.evaluate.query_findings import QueryReader
from workbench.search.delivery import runtime_engine
from workbench.tui.lab import Lab


@dataclass(frozen=True, eq=False)
class Advice:
    """What is known of one catalog (compared by identity)."""

    catalog: Catalog
    findings: list[Finding]
    reader: QueryReader
    cases: CaseSet | None = None
    #: Why the cases could not be read (None: read, or there are none).
    cases_error: str | None = None
    #: The setting :attr:`unreachable` was measured under (None: not measured).
    setting: ToolFiltering | None = None
    unreachable: list[Finding] = field(default_factory=list)

    @property
    def shown(self) -> list[Finding]:
        """Every catalog finding, unreachable tools first."""
        return [*self.unreachable, *self.findings]


def read_catalog(lab: Lab, cases_flag: Path | None) -> Advice:
    """The catalog's findings, its query reader and its labelled cases (slow on big catalogs:
    the confusable pairs compare every tool with every other)."""
    ws = lab.workspace
    findings = catalog_findings(ws.catalog, ws.tokens)
    reader = QueryReader(ws.catalog)
    cases, error = read_cases(lab, cases_flag)
    return Advice(ws.catalog, findings, reader, cases, error)


def read_cases(lab: Lab, cases_flag: Path | None) -> tuple[CaseSet | None, str | None]:
    """The labelled cases of the one default order resolved on the lab's catalog (None: none),
    and why they could not be read (None: read, or there are none)."""
    ws = lab.workspace
    try:
        found = find_cases_source(ws.agent, cases_flag)
        if found is None:
            return None, None
        resolved = resolve_cases(found[1], ws.catalog)
        return (resolved if len(resolved) else None), None
    except HoloTuneError as err:
        return None, str(err)


def unreachable(lab: Lab, cases: CaseSet, setting: ToolFiltering) -> list[Finding]:
    """The tools the cases expect that ``setting`` sends for none of them."""
    ws = lab.workspace
    engine = runtime_engine(ws.engine, ws.agent.agent)  # what the runtime runs
    report = evaluate(engine, ws.catalog, ws.tokens, cases, setting, usage=lab.usage)
    return unreachable_tools(ws.catalog, ws.tokens, report.per_case)
