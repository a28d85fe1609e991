"""Whole runs over a case set, as the CLI and the dashboard's Evaluate view use them.

Each function takes the workspace parts (engine, catalog, token table) and an optional
``on_progress(done, total)`` so a UI can show a progress bar; none of them prints or imports UI
code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from workbench.catalog.models import Catalog
from workbench.config.filtering import SEARCH_METHODS, ToolFiltering
from workbench.evaluate.budget import FILTER_FIELDS, Budget
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.folds import CrossFit, cross_fit
from workbench.evaluate.generalise import SetReport
from workbench.evaluate.intervals import Interval, contains_zero, paired_difference
from workbench.evaluate.metrics import (
    CaseResult,
    Metrics,
    Progress,
    Ranker,
    TokenCounts,
    aggregate,
    by_origin,
    evaluate,
    only_generated,
)
from workbench.evaluate.sweep import (
    CaseScores,
    SweepResult,
    default_depth,
    pareto_front,
    score_cases,
    sweep,
)
from workbench.evaluate.tuner import SweepOutcome, fold_assignment, gap, tune
from workbench.evaluate.verdict import Verdict, judge
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


@dataclass(frozen=True, kw_only=True)
class TuneReport(SetReport[ToolFiltering, Metrics]):
    """The block's tuner's report (:class:`~workbench.evaluate.generalise.SetReport`: the
    sweep's proposal; ``current`` is the file's block and ``default`` its figures; a case's
    tokens are one request's): the sweep's outcome (its front and choice), the cases, the
    engine that scored each method, and the paired difference."""

    unit: ClassVar[str] = "request"

    cases: int
    outcome: SweepOutcome
    scored_by: dict[str, str]
    #: Methods left out of the proposal because the runtime runs them as BM25 (no embedding
    #: service at run time, whatever embedder scored them here).
    disguised: tuple[str, ...] = ()
    #: 95 % intervals of the paired difference proposal - current, per case: ``recall`` and
    #: ``tokens`` (the proposal held-out, each case under the setting chosen without it).
    difference: dict[str, Interval] = field(default_factory=dict)

    @property
    def block(self) -> ToolFiltering:
        """The file's block (the tuner starts from it)."""
        return self.current or ToolFiltering()

    @property
    def heldout_by_case(self) -> list[CaseResult]:
        """:attr:`heldout_cases` in case order (paired with :attr:`current_cases`)."""
        pos = {id(r.case): i for i, r in enumerate(self.current_cases)}
        return sorted(self.heldout_cases, key=lambda r: pos.get(id(r.case), -1))

    @property
    def distinguishable(self) -> bool:
        """The proposal differs from the file's setting beyond the noise of these cases: the
        interval of the paired difference of recall or of tokens excludes 0 (True when the
        difference was not measured)."""
        if not self.difference:
            return True
        return not all(contains_zero(i) for i in self.difference.values())

    def same(self) -> bool:
        """The proposal is the file's own setting (nothing to change)."""
        return self.setting.block() == self.block.block()

    def to_json(self) -> dict[str, Any]:
        """docs/json.md's ``tune --json`` object."""
        o = self.outcome
        return {
            "cases": self.cases,
            "budget": self.budget.to_json(FILTER_FIELDS),
            "setting": self.setting.block(),
            "heldout": self.heldout.to_json(),
            "insample": self.insample.to_json(),
            "gap": gap(self.insample, self.heldout),
            "default": self.default.to_json(),
            "front": [
                {"setting": p.setting.block(), "recall": p.recall, "tokens_selected_mean": p.tokens}
                for p in o.front
            ],
            "difference": {
                name: {"mean": mean, "ci95": list(self.difference[name])}
                for name, mean in self.mean_difference().items()
            },
            "distinguishable": self.distinguishable,
            "verdict": self.verdict.to_json(),
            **self.origin_json(),
        }

    def by_origin(self) -> dict[str, tuple[Metrics, Metrics]]:
        """Held-out proposal and current setting per case origin (``labelled``, ``generated``)
        when the cases hold both kinds, else ``{}``."""
        tokens_all = self.default.tokens_all
        held = self.heldout_by_case
        split = by_origin(held, tokens_all)
        if not split:
            return {}
        paired = dict(zip(map(id, held), self.current_cases, strict=True))
        return {
            name: (
                aggregate(part, tokens_all),
                aggregate([paired[id(r)] for r in part], tokens_all),
            )
            for name, part in split.items()
        }

    def origin_json(self) -> dict[str, Any]:
        split = self.by_origin()
        if not split:
            return {}
        return {
            "by_source": {
                name: {"cases": h.cases, "heldout": h.to_json(), "default": d.to_json()}
                for name, (h, d) in split.items()
            }
        }

    @property
    def only_generated(self) -> bool:
        return only_generated(self.heldout_cases)

    def mean_difference(self) -> dict[str, float]:
        """Mean per-case difference proposal - current of recall and tokens."""
        if not self.difference or not self.heldout_cases:
            return {}
        n = len(self.heldout_cases)
        pairs = list(zip(self.heldout_by_case, self.current_cases, strict=True))
        return {
            "recall": math.fsum(a.recall - b.recall for a, b in pairs) / n,
            "tokens": math.fsum(a.tokens - b.tokens for a, b in pairs) / n,
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
    held = heldout_results(engine, catalog, tokens, cases, outcome.fold_choices)
    current_cases = evaluate(engine, catalog, tokens, cases, current).per_case
    return TuneReport(
        setting=outcome.setting,
        budget=outcome.budget,
        heldout=outcome.heldout,
        insample=outcome.insample,
        default=default,
        folds=outcome.folds,
        within_budget=outcome.choice.within_budget,
        fold_settings=tuple(outcome.fold_choices),
        heldout_cases=tuple(held.fold_order()),
        current=current,
        current_cases=tuple(current_cases),
        cases=len(cases),
        outcome=outcome,
        scored_by={s.method: s.scored_by for s in scores},
        disguised=disguised,
        difference=paired_intervals(held.case_order(), current_cases),
    )


def heldout_results(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    fold_choices: Sequence[ToolFiltering],
) -> CrossFit[ToolFiltering, CaseResult]:
    """Each case under the setting the tuner chose on the other folds (``fold_choices``, fold
    order: the sweep's k-fold, :func:`~workbench.evaluate.tuner.cross_validate`; their means are
    the tuner's held-out figures). Rankings are the engine's cached ones."""
    held = cross_fit(
        len(cases),
        len(fold_choices),
        lambda fold: fold_choices[fold.index],
        lambda setting, fold: (
            evaluate(engine, catalog, tokens, cases.subset(fold.test), setting).per_case
        ),
    )
    return held


def paired_intervals(
    proposal: Sequence[CaseResult], current: Sequence[CaseResult]
) -> dict[str, Interval]:
    """95 % intervals of the per-case difference proposal - current of recall and tokens."""
    if not proposal or len(proposal) != len(current):
        return {}
    return {
        "recall": paired_difference([r.recall for r in proposal], [r.recall for r in current]),
        "tokens": paired_difference(
            [float(r.tokens) for r in proposal], [float(r.tokens) for r in current]
        ),
    }


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


def setting_verdict(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    new: ToolFiltering,
    current: ToolFiltering,
) -> Verdict:
    """``new`` against ``current`` on every case (two fixed settings: nothing is fitted, so
    every case is held out), judged by the rule every tuner shares
    (:mod:`workbench.evaluate.verdict`): ``apply --cases``, the dashboard's Write and Evaluate's
    adopt read its :attr:`~workbench.evaluate.verdict.Verdict.worse`."""
    proposal = evaluate(engine, catalog, tokens, cases, new).per_case
    now = evaluate(engine, catalog, tokens, cases, current).per_case
    return judge(
        proposal,
        now,
        budget=Budget(max_tokens=0),
        tokens_all=int(tokens.all),
        same=new.block() == current.block(),
    )
