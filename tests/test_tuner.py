"""The tuner: hand-made sweeps where the right answer is known, budgets, folds, held-out honesty."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_sweep import _random_world

from workbench.config.filtering import ToolFiltering
from workbench.errors import InputError
from workbench.evaluate.metrics import evaluate
from workbench.evaluate.runs import fixed_variants, tune_cases
from workbench.evaluate.sweep import (
    THRESHOLDS,
    TOP_KS,
    MethodSweep,
    SweepResult,
    score_cases,
    sweep,
)
from workbench.evaluate.tuner import (
    Budget,
    choose,
    cross_validate,
    fold_assignment,
)
from workbench.search.types import Ranking

N = 100  # cases per fold
TOKENS_ALL = 100_000
Grid = Callable[[int, float, int], float]


def _hand(
    method: str, recall: Grid, tokens: Callable[[int, float], float], folds: int = 2
) -> MethodSweep:
    """A method whose mean recall at (k, t) on fold f is ``recall(k, t, f)``."""
    k = TOP_KS[:, None].astype(float)
    t = THRESHOLDS[None, :]
    shape = (folds, TOP_KS.size, THRESHOLDS.size)
    r = np.zeros(shape)
    for f in range(folds):
        r[f] = np.round(np.vectorize(recall)(k, t, f) * N)
    tok = np.broadcast_to(np.vectorize(tokens)(k, t) * N, shape).copy()
    return MethodSweep(
        method=method,
        scored_by=method,
        fixed=(),
        recall=r,
        hit=r.copy(),
        tokens=tok,
        counts=np.full(folds, N),
        recall_scale=1,
        fold_of=np.repeat(np.arange(folds), N),
        top1_case=np.zeros(folds * N, dtype=bool),
        mrr_case=np.ones(folds * N),
    )


def _result(*methods: MethodSweep) -> SweepResult:
    base = ToolFiltering(enabled=True, always_include_top_n_used=0)
    return SweepResult(base=base, tokens_all=TOKENS_ALL, methods={m.method: m for m in methods})


def _linear(k: float, t: float, f: int) -> float:
    return min(1.0, 0.5 + 0.01 * k)


def test_best_recall_within_the_budget() -> None:
    result = _result(_hand("bm25", _linear, lambda k, t: 100 * k))
    choice = choose([result], [0, 1], Budget(max_tokens=1000))
    # every threshold gives the same figures here: the middle of that plateau is taken
    assert (choice.method, choice.top_k, choice.threshold) == ("bm25", 10, 50)
    assert choice.within_budget and choice.robust_tokens == 1000
    setting = choice.setting([result])
    assert setting.top_k == 10 and setting.similarity_threshold == 0.5 and setting.enabled


def test_ties_across_thresholds_take_the_middle_of_the_run() -> None:
    # thresholds 0.00..0.20 select the same; above, fewer tokens but much less recall
    def recall(k: float, t: float, f: int) -> float:
        return 0.9 if t <= 0.2 else 0.3

    result = _result(_hand("bm25", recall, lambda k, t: 100.0 if t <= 0.2 else 50.0))
    choice = choose([result], [0, 1], Budget(max_tokens=100))
    # robust recall holds for t + 0.03 <= 0.20, so the run is 0.00..0.17: its middle is 0.08
    assert (choice.top_k, choice.threshold) == (1, 8)


def test_min_reduction_is_a_budget_too() -> None:
    result = _result(_hand("bm25", _linear, lambda k, t: 100 * k))
    # 99.5 % fewer than 100,000 tokens -> at most 500 -> top_k 5
    assert choose([result], [0, 1], Budget(min_reduction=0.995)).top_k == 5
    both = Budget(max_tokens=300, min_reduction=0.995)
    assert choose([result], [0, 1], both).top_k == 3


def test_on_equal_recall_fewer_tokens_win() -> None:
    # recall saturates at k=20, tokens keep growing: k=20 is the cheapest of the best
    result = _result(_hand("bm25", lambda k, t, f: min(k, 20) / 20, lambda k, t: 100 * k))
    assert choose([result], [0, 1], Budget(max_tokens=4000)).top_k == 20


def test_a_threshold_keeps_its_margin_from_a_cliff() -> None:
    # recall holds up to t = 0.50 then collapses; tokens fall as t rises
    def recall(k: float, t: float, f: int) -> float:
        return 0.9 if t <= 0.5 else 0.2

    result = _result(_hand("bm25", recall, lambda k, t: 1000 * (1 - t)))
    choice = choose([result], [0, 1], Budget(max_tokens=10_000))
    assert choice.top_k == 1
    # 0.50 itself sits on the cliff; the tuner keeps three steps of margin: 0.47
    assert choice.threshold == 47


def test_fold_variance_is_penalised() -> None:
    shaky = _hand("bm25", lambda k, t, f: (0.9, 0.5)[f], lambda k, t: 100 * k)
    steady = _hand("semantic", lambda k, t, f: 0.68, lambda k, t: 100 * k)
    choice = choose([_result(shaky, steady)], [0, 1], Budget(max_tokens=1000))
    assert choice.method == "semantic"


def test_equal_figures_prefer_bm25() -> None:
    a = _hand("hybrid", _linear, lambda k, t: 100 * k)
    b = _hand("bm25", _linear, lambda k, t: 100 * k)
    assert choose([_result(a, b)], [0, 1], Budget(max_tokens=700)).method == "bm25"


def test_an_impossible_budget_offers_the_cheapest() -> None:
    result = _result(_hand("bm25", _linear, lambda k, t: 100 * k + 50))
    choice = choose([result], [0, 1], Budget(max_tokens=10))
    assert not choice.within_budget and choice.top_k == 1


def test_default_budget_is_the_knee() -> None:
    """No budget flag: the knee of the front against every tool's tokens (budget.knee). Recall
    climbs fast then flattens, and reaches every expected tool at k 19, 1,900 of 100,000
    tokens: each token up to there buys more recall than the line to sending every tool, so
    the knee takes it (the old default stopped 0.02 short of the best, at k 13). The same front
    on a catalog of 3,000 tokens bends earlier (k 12, 0.98): sending every tool is cheap
    there."""

    def recall(k: float, t: float, f: int) -> float:
        return 1 - 0.5 * np.exp(-k / 4)

    result = _result(_hand("bm25", recall, lambda k, t: 100 * k))
    choice = choose([result], [0, 1], Budget())
    assert (choice.top_k, choice.robust_recall, choice.within_budget) == (19, 1.0, True)
    small = dataclasses.replace(result, tokens_all=3_000)
    assert choose([small], [0, 1], Budget()).top_k == 12
    assert Budget().limit(TOKENS_ALL) == float("inf")


def test_budget_bounds() -> None:
    with pytest.raises(InputError, match="--max-tokens"):
        Budget(max_tokens=-1)
    with pytest.raises(InputError, match="--min-reduction"):
        Budget(min_reduction=1.5)


def test_fold_assignment_is_deterministic_and_balanced() -> None:
    a = fold_assignment(103, 5)
    assert np.array_equal(a, fold_assignment(103, 5))
    assert sorted(np.bincount(a).tolist()) == [20, 20, 21, 21, 21]
    assert not np.array_equal(a, np.arange(103) % 5)  # shuffled, not striped by file order
    with pytest.raises(InputError, match="--folds"):
        fold_assignment(10, 1)
    with pytest.raises(InputError, match="--folds"):
        fold_assignment(3, 5)


def test_held_out_figures_are_each_folds_choice_measured_on_that_fold() -> None:
    catalog, tokens, ranker, cases = _random_world(7, 30, cases=20)
    folds = fold_assignment(len(cases), 4)
    scores = score_cases(ranker, cases, "bm25", 30)
    current = ToolFiltering(enabled=True, search_method="bm25", always_include_top_n_used=2)
    sweeps = [
        sweep([scores], cases, tokens, v, catalog, folds=folds) for v in fixed_variants(current)
    ]
    assert [s.base.always_include_top_n_used for s in sweeps] == [2, 0]
    budget = Budget(max_tokens=400)
    heldout, choices = cross_validate(sweeps, 4, budget)
    per_case = []
    for held, choice in enumerate(choices):
        fold_cases = cases.subset(np.flatnonzero(folds == held).tolist())
        setting = choice.setting(sweeps)
        per_case += evaluate(ranker, catalog, tokens, fold_cases, setting).per_case
    from workbench.evaluate.metrics import aggregate

    assert heldout == aggregate(per_case, tokens.all)


class TwoMethods:
    """semantic ranks each case's expected tool first; bm25 ranks by a random table (a fake)."""

    def __init__(self, cases: Any, size: int) -> None:
        rng = np.random.default_rng(5)
        self.size = size
        self.expected = {c.query: c.groups[0][0] for c in cases.cases}
        self.noise = {c.query: rng.random(size) for c in cases.cases}

    def rank(self, query: str, method: str) -> Ranking:
        s = self.noise[query].copy()
        if method == "semantic":
            s[self.expected[query]] = 2.0
            s /= 2.0
        return Ranking(query, method, method, s, np.argsort(-s, kind="stable").astype(np.int64))


def test_only_methods_the_runtime_runs_are_proposed() -> None:
    catalog, tokens, _, cases = _random_world(8, 30, cases=20)
    ranker = TwoMethods(cases, 30)
    current = ToolFiltering(enabled=True, search_method="bm25", always_include_top_n_used=0)
    free = tune_cases(ranker, catalog, tokens, cases, current, Budget(max_tokens=300), folds=4)
    assert free.outcome.setting.search_method == "semantic" and not free.disguised
    bm25_only = tune_cases(
        ranker,
        catalog,
        tokens,
        cases,
        current,
        Budget(max_tokens=300),
        folds=4,
        runtime_methods=("bm25",),
    )
    assert bm25_only.outcome.setting.search_method == "bm25"
    assert bm25_only.disguised == ("semantic", "hybrid")
    assert {p.setting.search_method for p in bm25_only.outcome.front} == {"bm25"}
