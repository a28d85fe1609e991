"""The one budget type and the one k-fold loop every tuner shares."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.evaluate.budget import (
    DEFAULT_SHARE,
    FILTER_FIELDS,
    KNEE_TOLERANCE,
    SET_FIELDS,
    TIE_TOLERANCE,
    Budget,
)
from workbench.evaluate.folds import Fold, cross_fit, folds_of
from workbench.evaluate.tuner import fold_assignment

ALL = 10_000


def test_limit_is_the_smallest_cap_or_the_knee() -> None:
    assert Budget().limit(ALL) == DEFAULT_SHARE * ALL
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
    for given in (Budget(max_tokens=1), Budget(min_reduction=0.5), Budget(min_hit=0.5)):
        assert given.explicit
        assert given.tolerance == TIE_TOLERANCE


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
