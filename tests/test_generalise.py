"""The bar a set-keeping tuner proposes at (workbench.evaluate.generalise): the least general
whose in-sample/held-out gap holds, else the smallest gap. A unit test of the choice; the tuners
themselves are run on real data sets in test_tuner_gap.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.evaluate.generalise import BARS, MAX_GAP, Bars, Trial, generalising
from workbench.evaluate.tuner import MIN_CASES, Recurrence


@dataclass(frozen=True)
class Fig:
    hit: float
    recall: float


Run = Callable[[Recurrence], tuple[int, Fig, Fig]]


def _rule(gaps: dict[int, float]) -> tuple[Run, list[Recurrence]]:
    runs: list[Recurrence] = []

    def run(recurrence: Recurrence) -> tuple[int, Fig, Fig]:
        runs.append(recurrence)
        g = gaps[recurrence.per_training]
        return recurrence.per_training, Fig(0.8, 0.6 + g), Fig(0.8, 0.6)

    return run, runs


def test_the_first_bar_that_holds_is_kept_and_no_higher_one_is_run() -> None:
    run, runs = _rule({2: 0.03, 3: 0.0})
    out, bars = generalising(run, lambda r: (r[1], r[2]), 94, 5)
    assert out[0] == MIN_CASES and bars.chosen == MIN_CASES and bars.held
    assert [r.per_training for r in runs] == [MIN_CASES]
    assert bars.text() == ""  # nothing to say when the first bar held


def test_a_gap_over_the_bound_asks_more_cases_and_says_so() -> None:
    run, runs = _rule({2: 0.073, 3: 0.049, 5: 0.0})
    out, bars = generalising(run, lambda r: (r[1], r[2]), 94, 5)
    assert out[0] == 3 and bars.chosen == 3 and bars.held
    assert [r.per_training for r in runs] == list(BARS[:2])  # five is never run
    # 94 cases in 5 folds: 3 of each 75-case training set is 4 of all 94 for the proposal
    assert runs[1].need(75) == 3 and runs[1].need(94) == 4
    assert bars.text() == (
        "only what 3 cases of each training set expect (at 2 the gap was hit +0.000, recall +0.073)"
    )
    assert bars.to_json()["tried"][0] == {
        "bar": 2,
        "gap": {"hit": 0.0, "recall": 0.073},
        "heldout_worse": False,
    }


def test_a_bar_that_loses_held_out_is_never_proposed_and_stops_the_climb() -> None:
    """On a few cases a high bar keeps nothing: its gap is zero, but its held-out recall fell
    more than the bound below the first bar's, so it is not a held-out tie of it."""
    runs: list[Recurrence] = []

    def run(recurrence: Recurrence) -> tuple[int, Fig, Fig]:
        runs.append(recurrence)
        held = {2: Fig(0.8, 0.6), 3: Fig(0.8, 0.54)}[recurrence.per_training]
        gap = {2: 0.09, 3: 0.0}[recurrence.per_training]
        return recurrence.per_training, Fig(held.hit, held.recall + gap), held

    out, bars = generalising(run, lambda r: (r[1], r[2]), 94, 5)
    assert out[0] == 2 and bars.chosen == 2 and not bars.held
    assert [r.per_training for r in runs] == [2, 3]  # five is not run
    assert bars.tried[1].worse
    assert "held-out fell more than 0.05" in bars.text()


def test_when_no_bar_holds_the_smallest_gap_is_proposed_and_said() -> None:
    run, runs = _rule({2: 0.06, 3: 0.08, 5: 0.07})
    out, bars = generalising(run, lambda r: (r[1], r[2]), 94, 5)
    assert out[0] == 2 and bars.chosen == 2 and not bars.held
    assert [r.per_training for r in runs] == list(BARS)
    assert f"no bar held the gap within {MAX_GAP:g}" in bars.text()
    assert "at 3 the gap was hit +0.000, recall +0.080; at 5" in bars.text()


def test_the_bars_ask_more_cases_each_time_starting_at_min_cases() -> None:
    assert BARS[0] == MIN_CASES
    assert list(BARS) == sorted(set(BARS))


def test_when_no_bar_holds_a_middle_bar_with_the_smallest_gap_is_proposed() -> None:
    run, runs = _rule({2: 0.08, 3: 0.06, 5: 0.07})
    out, bars = generalising(run, lambda r: (r[1], r[2]), 94, 5)
    assert out[0] == 3 and bars.chosen == 3 and not bars.held
    assert len(runs) == len(BARS)
    assert bars.text().startswith("what 3 cases of each training set expect: no bar held")


def test_a_negative_gap_holds() -> None:
    assert Trial(2, -0.1, -0.2).worst <= MAX_GAP
    assert Bars((Trial(2, -0.1, 0.02),), 2).held
