"""The bar a set-keeping tuner proposes at (workbench.evaluate.generalise): the least general
whose in-sample/held-out gap holds, else the smallest gap, among the held-out ties of the first
bar at their own cost. A unit test of the choice; the tuners themselves are run on real data
sets in test_tuner_gap.py (and HoloDeck 0.7's allowlist on bfcl in test_allowlist_bars.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.evaluate.generalise import BARS, MAX_GAP, Bars, Point, Trial, generalising
from workbench.evaluate.tuner import MIN_CASES, Recurrence


@dataclass(frozen=True)
class Fig:
    hit: float
    recall: float


@dataclass(frozen=True)
class Out:
    """A rule's run: its bar, the cap it was run within, its figures and held-out tokens."""

    bar: int
    cap: float | None
    insample: Fig
    heldout: Fig
    tokens: float = 1000.0


Run = Callable[[Recurrence, float | None], Out]


def _figures(out: Out) -> tuple[Fig, Fig]:
    return out.insample, out.heldout


def _tokens(out: Out) -> float:
    return out.tokens


def _choose(run: Run) -> tuple[Out, Bars]:
    return generalising(run, _figures, _tokens, 94, 5)


def _rule(gaps: dict[int, float]) -> tuple[Run, list[Recurrence]]:
    runs: list[Recurrence] = []

    def run(recurrence: Recurrence, cap: float | None) -> Out:
        assert cap is None, "no bar fell below the first: nothing is run again at a cost"
        runs.append(recurrence)
        g = gaps[recurrence.per_training]
        return Out(recurrence.per_training, cap, Fig(0.8, 0.6 + g), Fig(0.8, 0.6))

    return run, runs


def test_the_first_bar_that_holds_is_kept_and_no_higher_one_is_run() -> None:
    run, runs = _rule({2: 0.03, 3: 0.0})
    out, bars = _choose(run)
    assert out.bar == MIN_CASES and bars.chosen == MIN_CASES and bars.held
    assert [r.per_training for r in runs] == [MIN_CASES]
    assert bars.text() == ""  # nothing to say when the first bar held


def test_a_gap_over_the_bound_asks_more_cases_and_says_so() -> None:
    run, runs = _rule({2: 0.073, 3: 0.049, 5: 0.0})
    out, bars = _choose(run)
    assert out.bar == 3 and bars.chosen == 3 and bars.held
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


def _front(
    held: dict[int, Fig], gap: dict[int, float], spend: dict[int, float], first_within: Fig
) -> tuple[Run, list[tuple[int, float | None]]]:
    """Each bar's held-out figures, gap and tokens; the first bar's rule within a cap holds out
    ``first_within``."""
    runs: list[tuple[int, float | None]] = []

    def run(recurrence: Recurrence, cap: float | None) -> Out:
        bar = recurrence.per_training
        runs.append((bar, cap))
        if cap is not None:
            assert bar == MIN_CASES, "only the first bar's rule is run within a cap"
            return Out(bar, cap, Fig(1.0, 1.0), first_within, cap - 20)
        h = held[bar]
        return Out(bar, cap, Fig(h.hit + gap[bar], h.recall + gap[bar]), h, spend[bar])

    return run, runs


def test_a_bar_that_loses_held_out_at_its_own_cost_is_never_proposed() -> None:
    """On a few cases a high bar can keep less than the first bar's rule would within the same
    tokens: its gap is zero, but held out it falls more than the bound below the first bar's
    rule at its cost, so it is not a held-out tie of it and the climb stops."""
    run, runs = _front(
        {2: Fig(0.8, 0.6), 3: Fig(0.8, 0.53)},
        {2: 0.09, 3: 0.0},
        {2: 4000.0, 3: 3000.0},
        first_within=Fig(0.8, 0.59),
    )
    out, bars = _choose(run)
    assert out.bar == 2 and bars.chosen == 2 and not bars.held
    assert runs == [(2, None), (3, None), (2, 3000.0)]  # five is not run
    assert bars.tried[1].worse
    assert bars.tried[1].against == Point(2980.0, 0.8, 0.59)
    assert bars.text() == (
        "what 2 cases of each training set expect: no bar held the gap within 0.05, this one's "
        "is the smallest (at 3 the gap was hit +0.000, recall +0.000 but held-out fell more "
        "than 0.05 below hit 0.800, recall 0.590 at 2,980 tokens)"
    )


def test_a_cheaper_bar_on_the_first_bars_front_is_a_tie_and_proposed() -> None:
    """bfcl's knee, HoloDeck 0.7's allowlist: the first bar's 0.589 at 36,625 tokens has a gap
    of 0.063; five cases keep a set with 0.396 at 9,054 and no gap. Within 9,054 tokens the
    first bar's rule holds out 0.388: the cheaper set is a tie at its cost, and proposed."""
    run, runs = _front(
        {2: Fig(0.6, 0.589), 3: Fig(0.5, 0.495), 5: Fig(0.4, 0.396)},
        {2: 0.063, 3: 0.058, 5: 0.0},
        {2: 36625.0, 3: 20757.0, 5: 9054.0},
        first_within=Fig(0.397, 0.388),
    )
    out, bars = _choose(run)
    assert out.bar == 5 and bars.chosen == 5 and bars.held
    assert runs == [(2, None), (3, None), (2, 20757.0), (5, None), (2, 9054.0)]
    assert not any(t.worse for t in bars.tried)
    assert bars.text().endswith(
        "; within its tokens the rule at 2 holds out hit 0.397, recall 0.388 at 9,034 tokens"
    )
    assert bars.to_json()["tried"][2]["first_bar_at_its_tokens"] == {
        "tokens": 9034.0,
        "hit": 0.397,
        "recall": 0.388,
    }


def test_within_a_budget_a_bar_below_the_first_bars_own_point_is_never_proposed() -> None:
    """With a budget the user gave, the first bar's own point within it is the one to tie: a
    higher bar that keeps less leaves budget unspent and loses recall for it, and no rule is run
    again at its cost."""
    run, runs = _front(
        {2: Fig(0.8, 0.6), 3: Fig(0.8, 0.53)},
        {2: 0.09, 3: 0.0},
        {2: 4000.0, 3: 3000.0},
        first_within=Fig(0.8, 0.53),  # would be a tie at its cost
    )
    out, bars = generalising(run, _figures, None, 94, 5)
    assert out.bar == 2 and bars.chosen == 2 and not bars.held
    assert runs == [(2, None), (3, None)]
    assert bars.tried[1].worse and bars.tried[1].against is None
    assert bars.text().endswith(
        "(at 3 the gap was hit +0.000, recall +0.000 but held-out fell more than 0.05 below the "
        "first bar's)"
    )


def test_when_no_bar_holds_the_smallest_gap_is_proposed_and_said() -> None:
    run, runs = _rule({2: 0.06, 3: 0.08, 5: 0.07})
    out, bars = _choose(run)
    assert out.bar == 2 and bars.chosen == 2 and not bars.held
    assert [r.per_training for r in runs] == list(BARS)
    assert f"no bar held the gap within {MAX_GAP:g}" in bars.text()
    assert "at 3 the gap was hit +0.000, recall +0.080; at 5" in bars.text()


def test_the_bars_ask_more_cases_each_time_starting_at_min_cases() -> None:
    assert BARS[0] == MIN_CASES
    assert list(BARS) == sorted(set(BARS))


def test_when_no_bar_holds_a_middle_bar_with_the_smallest_gap_is_proposed() -> None:
    run, runs = _rule({2: 0.08, 3: 0.06, 5: 0.07})
    out, bars = _choose(run)
    assert out.bar == 3 and bars.chosen == 3 and not bars.held
    assert len(runs) == len(BARS)
    assert bars.text().startswith("what 3 cases of each training set expect: no bar held")


def test_a_negative_gap_holds() -> None:
    assert Trial(2, -0.1, -0.2).worst <= MAX_GAP
    assert Bars((Trial(2, -0.1, 0.02),), 2).held
