"""Whole runs over a case set, as the CLI and the dashboard's Evaluate view use them.

Each function takes the workspace parts (engine, catalog, token table) and an optional
``on_progress(done, total)`` so a UI can show a progress bar; none of them prints or imports UI
code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from workbench.catalog.models import Catalog
from workbench.config.filtering import SEARCH_METHODS, ToolFiltering
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.metrics import Metrics, Progress, Ranker, TokenCounts, evaluate
from workbench.evaluate.sweep import (
    CaseScores,
    SweepResult,
    default_depth,
    pareto_front,
    score_cases,
    sweep,
)
from workbench.evaluate.tuner import Budget, TuneOutcome, fold_assignment, tune
from workbench.search.types import IntArray


def score_methods(
    engine: Ranker,
    cases: CaseSet,
    size: int,
    *,
    methods: Sequence[str] = SEARCH_METHODS,
    always_include: int = 0,
    on_progress: Progress | None = None,
) -> list[CaseScores]:
    """Rank every case once per method (the slow part; the sweep after it is arithmetic)."""
    total = len(cases) * len(methods)
    out: list[CaseScores] = []
    for i, method in enumerate(methods):
        done = i * len(cases)

        def step(n: int, _: int, done: int = done) -> None:
            if on_progress is not None:
                on_progress(done + n, total)

        out.append(
            score_cases(
                engine,
                cases,
                method,
                size,
                depth=default_depth(size, always_include),
                on_progress=step,
            )
        )
    return out


def sweep_settings(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    base: ToolFiltering,
    *,
    methods: Sequence[str] = SEARCH_METHODS,
    usage: IntArray | None = None,
    on_progress: Progress | None = None,
) -> SweepResult:
    """Every method x top_k x threshold with ``base``'s always_include and top_n_used held."""
    scores = score_methods(
        engine,
        cases,
        len(catalog),
        methods=methods,
        always_include=len(base.always_include),
        on_progress=on_progress,
    )
    return sweep(scores, cases, tokens, base, catalog, usage=usage)


def fixed_variants(current: ToolFiltering) -> list[ToolFiltering]:
    """The always-sent parts the tuner tries: the agent's own, and without top-N-used tools.

    ``always_include`` is the user's intent and is kept; ``always_include_top_n_used`` at a cold
    start only sends the first N catalog tools, so the tuner also tries 0.
    """
    base = current.with_(enabled=True)
    variants = [base]
    if base.always_include_top_n_used > 0:
        variants.append(base.with_(always_include_top_n_used=0))
    return variants


@dataclass(frozen=True)
class TuneReport:
    """The tuner's outcome with the agent's current setting measured beside it."""

    cases: int
    current: ToolFiltering
    outcome: TuneOutcome
    default: Metrics
    scored_by: dict[str, str]
    #: Methods left out of the proposal because the runtime runs them as BM25 (no embedding
    #: service at run time, whatever embedder scored them here).
    disguised: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """DESIGN.md's ``tune --json`` object."""
        o = self.outcome
        return {
            "cases": self.cases,
            "budget": o.budget.to_json(),
            "setting": o.setting.block(),
            "heldout": o.heldout.to_json(),
            "default": self.default.to_json(),
            "front": [
                {"setting": p.setting.block(), "recall": p.recall, "tokens_selected_mean": p.tokens}
                for p in o.front
            ],
        }


def tune_cases(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    current: ToolFiltering,
    budget: Budget,
    *,
    folds: int = 5,
    methods: Sequence[str] = SEARCH_METHODS,
    runtime_methods: Sequence[str] = SEARCH_METHODS,
    on_progress: Progress | None = None,
) -> TuneReport:
    """Score, sweep each fixed variant with k folds, tune, and measure the current setting.

    Only methods in ``runtime_methods`` (those the runtime would score as they are scored here:
    without an embedding service at run time, just bm25) and not BM25 in disguise are proposed.
    """
    fold_of = fold_assignment(len(cases), folds)
    variants = fixed_variants(current)
    # rank only what can be proposed, and the current method (to measure it from the sweep)
    needed = [m for m in methods if m in runtime_methods or m == current.search_method]
    scores = score_methods(
        engine,
        cases,
        len(catalog),
        methods=needed,
        always_include=len(current.always_include),
        on_progress=on_progress,
    )
    sweeps = [sweep(scores, cases, tokens, v, catalog, folds=fold_of) for v in variants]
    disguised = tuple(m for m in methods if m not in runtime_methods) + tuple(
        s.method
        for s in scores
        if s.method in runtime_methods and s.all_fallback and s.method != "bm25"
    )
    honest = [without(result, disguised) for result in sweeps]
    outcome = tune(honest, budget, folds, pareto_front(honest))
    default = measure_setting(engine, catalog, tokens, cases, current, sweeps)
    return TuneReport(
        cases=len(cases),
        current=current,
        outcome=outcome,
        default=default,
        scored_by={s.method: s.scored_by for s in scores},
        disguised=disguised,
    )


def without(result: SweepResult, methods: Sequence[str]) -> SweepResult:
    """``result`` without ``methods`` (those that were BM25 in disguise for every case).

    With no embedding service the runtime's semantic *is* BM25 and its hybrid fuses BM25 with
    itself; proposing them would name a method that does not run.
    """
    kept = {m: ms for m, ms in result.methods.items() if m not in methods}
    return replace(result, methods=kept)


def measure_setting(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    setting: ToolFiltering,
    sweeps: Sequence[SweepResult] = (),
) -> Metrics:
    """A setting's figures on every case: read off a sweep when it is a grid point, else run."""
    for result in sweeps:
        found = result.metrics_of(setting)
        if found is not None:
            return found
    return evaluate(engine, catalog, tokens, cases, setting).metrics
