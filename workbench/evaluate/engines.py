"""One strategy engine at one setting, measured on labelled queries (``eval --engine``).

The figures are :mod:`workbench.evaluate.metrics`' (hit, recall, top1, mrr, mean tokens sent,
reduction) with each engine's own token accounting, per case by the same rules as
:func:`workbench.evaluate.compare.case_result`, so a number here equals the ``default`` row of
``compare`` for the same parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.catalog.models import Catalog
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.compare import case_result, params_json
from workbench.evaluate.metrics import (
    CaseResult,
    Metrics,
    Progress,
    aggregate,
    by_category,
    ci95,
    ci95_json,
    origin_json,
    per_case_json,
)
from workbench.search.strategies import Strategy


@dataclass(slots=True)
class EngineReport:
    """An engine's setting measured on a case set: overall, per category and per case."""

    engine: str
    params: dict[str, Any]
    metrics: Metrics
    per_case: list[CaseResult]
    by_category: dict[str, Metrics] = field(default_factory=dict)

    @property
    def misses(self) -> list[CaseResult]:
        return [r for r in self.per_case if not all(r.sent)]

    def to_json(self, catalog: Catalog) -> dict[str, Any]:
        """``eval --json``'s object, with ``engine`` and the engine's parameters as ``setting``."""
        return {
            "cases": self.metrics.cases,
            "engine": self.engine,
            "setting": self.params,
            "metrics": self.metrics.to_json(),
            "ci95": ci95_json(ci95(self.per_case)),
            **origin_json(self.per_case, self.metrics.tokens_all),
            "per_case": per_case_json(self.per_case, catalog),
        }


def evaluate_engine(
    strategy: Strategy,
    cases: CaseSet,
    tokens_all: int,
    *,
    on_progress: Progress | None = None,
    search_as: Callable[[str], str] | None = None,
) -> EngineReport:
    """Run ``strategy`` on every case and score what the model could call afterwards.
    ``search_as`` maps a case's message to the query searched (default: the message)."""
    results: list[CaseResult] = []
    for done, case in enumerate(cases.cases, start=1):
        query = case.query if search_as is None else search_as(case.query)
        results.append(case_result(case, strategy.run(query)))
        if on_progress is not None:
            on_progress(done, len(cases.cases))
    return EngineReport(
        engine=strategy.name,
        params=params_json(strategy.params),
        metrics=aggregate(results, tokens_all),
        per_case=results,
        by_category=by_category(results, tokens_all),
    )
