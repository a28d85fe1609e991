"""The one budget type and the one k-fold loop every tuner shares."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.errors import InputError
from workbench.evaluate.budget import (
    FILTER_FIELDS,
    KNEE_TOLERANCE,
    SET_FIELDS,
    TIE_TOLERANCE,
    Budget,
    front,
    knee,
)
from workbench.evaluate.folds import Fold, cross_fit, folds_of
from workbench.evaluate.tuner import fold_assignment

ALL = 10_000


def test_limit_is_the_smallest_cap_or_none() -> None:
    # no budget flag: no cap (the tuner takes the knee of its front), not a share of all tokens
    assert Budget().limit(ALL) == math.inf
    assert Budget(max_tokens=500).limit(ALL) == 500.0
    assert Budget(min_reduction=0.9).limit(ALL) == pytest.approx(1_000.0)
    assert Budget(max_tokens=500, min_reduction=0.99).limit(ALL) == pytest.approx(100.0)
    # a hit target alone has no cap; with a cap, the cap
    assert Budget(min_hit=0.9).limit(ALL) == math.inf
    assert Budget(max_tokens=700, min_hit=0.9).limit(ALL) == 700.0


def test_capped_keeps_the_smaller_cap_and_the_other_fields() -> None:
    """A rule run again within a higher bar's tokens (workbench.evaluate.generalise): the knee
    becomes a cap of those tokens, rounded up; a smaller cap given stays; the hit target and
    the reduction stay."""
    assert Budget().capped(None) == Budget()
    assert Budget().capped(9053.2) == Budget(max_tokens=9054)
    assert Budget().capped(9054.0) == Budget(max_tokens=9054)
    assert Budget(max_tokens=5000).capped(9053.2) == Budget(max_tokens=5000)
    assert Budget(min_reduction=0.5, min_hit=0.8).capped(100.5) == Budget(101, 0.5, 0.8)
    assert Budget().capped(9053.2).explicit


def test_explicit_and_tolerance() -> None:
    assert not Budget().explicit
    assert Budget().tolerance == KNEE_TOLERANCE
    for flags in (Budget(max_tokens=1), Budget(min_reduction=0.5), Budget(min_hit=0.5)):
        assert flags.explicit
        assert flags.tolerance == TIE_TOLERANCE


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"max_tokens": -1}, "--max-tokens"),
        ({"min_reduction": 1.5}, "--min-reduction"),
        ({"min_hit": -0.1}, "--min-hit"),
    ],
)
def test_a_bad_budget_names_its_flag(kwargs: dict[str, float], flag: str) -> None:
    with pytest.raises(InputError) as caught:
        Budget(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == flag


def test_json_holds_the_fields_the_tuner_reports() -> None:
    budget = Budget(max_tokens=9_000, min_hit=0.8)
    assert budget.to_json(FILTER_FIELDS) == {"max_tokens": 9_000, "min_reduction": None}
    assert budget.to_json(SET_FIELDS) == {"max_tokens": 9_000, "min_hit": 0.8}


def test_folds_follow_the_seeded_assignment() -> None:
    assignment = fold_assignment(23, 5)
    rounds = folds_of(23, 5)
    assert [f.index for f in rounds] == list(range(5))
    for fold in rounds:
        assert fold.test == np.flatnonzero(assignment == fold.index).tolist()
        assert sorted(fold.train + fold.test) == list(range(23))


def test_cross_fit_fits_without_the_fold_and_orders_results() -> None:
    seen: list[tuple[int, list[int]]] = []

    def fit(fold: Fold) -> int:
        seen.append((fold.index, fold.train))
        return fold.index

    held = cross_fit(12, 3, fit, lambda setting, fold: [(setting, c) for c in fold.test])
    assert held.settings == (0, 1, 2)
    assert all(not set(train) & set(held.folds[i].test) for i, train in seen)
    assert [c for _, c in held.case_order()] == list(range(12))
    assert [c for _, c in held.fold_order()] == [c for f in held.folds for c in f.test]
    assert all(setting == held.folds[setting].index for setting, _ in held.fold_order())


def test_cross_fit_refuses_too_few_cases() -> None:
    with pytest.raises(InputError):
        cross_fit(2, 3, lambda fold: 0, lambda setting, fold: [])


# ------------------------------------------------------------------------ the knee of a front

_tokens = st.floats(min_value=0.0, max_value=1e6, allow_nan=False)
_recall = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
_points = st.lists(st.tuples(_tokens, _recall), min_size=1, max_size=40)
_all = st.floats(min_value=1.0, max_value=2e6, allow_nan=False)


def _bend(k: int) -> float:
    """Recall that climbs fast, then slowly: 0.1 at one step, 0.55 at fifty."""
    return 0.1 + 0.45 * (1 - math.exp(-k / 12)) / (1 - math.exp(-50 / 12))


def test_the_knee_is_read_for_the_catalog_not_the_fronts_own_end() -> None:
    """livemcpbench's shape (holodeck-0.6: top_k 1 to 50, recall 0.10 to 0.55 over 200 to
    9,200 tokens of a 65,790-token catalog): the line to every tool (recall 1 at 65,790) is
    what a token buys on average there, and recall comes faster than that nearly to the
    front's end. The knee of the front on its own (its end as the best) sat at a third of its
    tokens, 0.46 recall, where a few thousand tokens more still bought 0.07; on a catalog that
    costs little more than the front's end the same front bends earlier."""
    tokens = [200.0 + 180.0 * (k - 1) for k in range(1, 51)]
    recall = [_bend(k) for k in range(1, 51)]
    far = knee(tokens, recall, 65_790)
    assert recall[far] >= max(recall) - 0.025 and tokens[far] > 0.6 * max(tokens)
    near = knee(tokens, recall, 9_500)
    assert recall[near] < recall[far] - 0.1 and tokens[near] < 0.5 * tokens[far]


def test_a_front_that_climbs_no_faster_than_every_tool_bends_at_its_cheapest() -> None:
    assert knee([500.0], [0.4], 9_000) == 0
    # under the line from the cheapest point to every tool (recall 1 at 1,000) by more than
    # the tolerance: the cheapest
    assert knee([100.0, 200.0, 300.0], [0.5, 0.52, 0.54], 1_000) == 0
    # on the line (every point as far above it, 0) or within the tolerance under it: the most
    # recall
    assert knee([0.0, 250.0, 500.0], [0.0, 0.25, 0.5], 1_000) == 2
    assert knee([100.0, 200.0, 300.0], [0.5, 0.55, 0.6], 1_000) == 2
    # recall that comes faster the more is spent: the dearer point is the farther above
    assert knee([100.0, 200.0, 300.0], [0.0, 0.1, 0.3], 1_000) == 2
    # a point that reaches every expected tool is the knee when nothing beats the line more
    assert knee([100.0, 200.0, 300.0], [0.5, 1.0, 1.0], 9_000) == 1
    # the cheapest point already at recall 1, or no cheaper than every tool: itself
    assert knee([100.0, 200.0], [1.0, 1.0], 9_000) == 0
    assert knee([9_000.0, 9_500.0], [0.3, 0.4], 9_000) == 0


def test_dominated_points_are_never_the_knee() -> None:
    """A dearer point with no more recall is off the front (the cheaper one is taken)."""
    tokens = [100.0, 150.0, 400.0, 1000.0, 1600.0]
    recall = [0.3, 0.8, 0.8, 0.9, 0.9]
    assert front(tokens, recall) == [0, 1, 3]
    assert knee(tokens, recall, 1_600) == 1
    with pytest.raises(ValueError):
        knee([], [], 1_000)


@given(_points, _all)
def test_the_knee_is_a_point_of_the_front(
    points: list[tuple[float, float]], tokens_all: float
) -> None:
    tokens, recall = [t for t, _ in points], [r for _, r in points]
    at = knee(tokens, recall, tokens_all)
    assert at in front(tokens, recall)
    # no point beats it on both
    assert not any(
        (t <= tokens[at] and r > recall[at]) or (t < tokens[at] and r >= recall[at])
        for t, r in points
    )


@given(_points, _all, st.sampled_from([0.001, 0.25, 3.0, 1000.0]))
def test_the_knee_is_invariant_to_scaling_tokens(
    points: list[tuple[float, float]], tokens_all: float, scale: float
) -> None:
    """The tokens of a request or of a task, the same front: the same point."""
    tokens, recall = [t for t, _ in points], [r for _, r in points]
    at = knee(tokens, recall, tokens_all)
    scaled = knee([t * scale for t in tokens], recall, tokens_all * scale)
    assert (tokens[scaled], recall[scaled]) == (tokens[at], recall[at])


def test_within_the_budget_is_the_cap_and_the_hit_target_both() -> None:
    """The one within-budget rule every tuner's report says (allowlists, search tools, PizzaPi)."""
    from workbench.evaluate.budget import Budget

    assert Budget().met_by(10**9, 0.0)  # no budget: anything
    assert Budget(max_tokens=100).met_by(100, 0.0)
    assert not Budget(max_tokens=100).met_by(100.5, 1.0)
    assert Budget(min_hit=0.8).met_by(10**9, 0.8)
    assert not Budget(min_hit=0.8).met_by(0, 0.79)
    assert not Budget(max_tokens=100, min_hit=0.8).met_by(50, 0.5)
