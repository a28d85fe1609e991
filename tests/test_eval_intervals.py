"""The 95 % intervals: Wilson for proportions, a seeded bootstrap for means, paired differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from workbench.evaluate import intervals
from workbench.evaluate.intervals import (
    bootstrap_mean,
    contains_zero,
    interval_text,
    paired_difference,
    paired_standard_error,
    wilson,
)


def test_wilson_known_values() -> None:
    # the example: 16 of 20 is 0.58-0.92
    low, high = wilson(16, 20)
    assert (round(low, 4), round(high, 4)) == (0.584, 0.9193)
    assert interval_text((low, high)) == "0.58-0.92"
    # Wilson (1927) / Newcombe (1998) table: 81 of 263 -> 0.2553-0.3662
    low, high = wilson(81, 263)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    assert wilson(0, 10) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert wilson(10, 10) == (pytest.approx(0.7225, abs=1e-4), 1.0)
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(3, 2)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_equals_scipy(kn: tuple[int, int]) -> None:
    k, n = kn
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson(k, n)
    assert low == pytest.approx(ref.low, abs=1e-9) and high == pytest.approx(ref.high, abs=1e-9)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_bootstrap_is_seeded_and_degenerates_to_a_point() -> None:
    values = [1.0, 0.5, 0.0, 1.0, 1.0, 0.25, 1.0, 0.0]
    assert bootstrap_mean(values) == bootstrap_mean(values)
    spread = np.random.default_rng(3).random(30)
    assert bootstrap_mean(spread, seed=1) != bootstrap_mean(spread, seed=2)
    assert bootstrap_mean([0.7] * 30) == (0.7, 0.7)
    assert bootstrap_mean([0.3]) == (0.3, 0.3)
    assert bootstrap_mean([]) == (0.0, 0.0)


def test_bootstrap_matches_the_normal_interval_on_a_large_sample() -> None:
    """On 400 recall-like values the percentile bootstrap is the t interval to within 0.01."""
    rng = np.random.default_rng(7)
    values = rng.choice([0.0, 0.5, 1.0], size=400, p=[0.2, 0.3, 0.5])
    mean, sd = values.mean(), values.std(ddof=1)
    half = 1.96 * sd / math.sqrt(values.size)
    low, high = bootstrap_mean(values)
    assert low == pytest.approx(mean - half, abs=0.01)
    assert high == pytest.approx(mean + half, abs=0.01)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=60))
def test_bootstrap_brackets_the_mean_within_the_range(values: list[float]) -> None:
    low, high = bootstrap_mean(values, resamples=300)
    mean = sum(values) / len(values)
    assert min(values) - 1e-12 <= low <= high <= max(values) + 1e-12
    # the percentile interval of a mean nearly always holds the sample mean
    if len(values) >= 5:
        assert low - 0.05 <= mean <= high + 0.05


def test_bootstrap_narrows_with_more_cases() -> None:
    rng = np.random.default_rng(1)
    small, large = rng.random(30), rng.random(3000)
    lo_s, hi_s = bootstrap_mean(small)
    lo_l, hi_l = bootstrap_mean(large)
    assert lo_s <= float(np.mean(small)) <= hi_s and lo_l <= float(np.mean(large)) <= hi_l
    assert hi_l - lo_l < (hi_s - lo_s) / 3


def test_bootstrap_draws_the_same_resamples_whatever_the_chunk() -> None:
    """The resamples are drawn ``CHUNK`` at a time to bound memory; the stream is the one a
    single draw would give, so the interval does not depend on the chunk size."""
    values = np.random.default_rng(5).random(37)
    rng = np.random.default_rng(intervals.SEED)
    picks = rng.integers(0, values.size, size=(intervals.RESAMPLES, values.size))
    expected = np.percentile(values[picks].mean(axis=1), [2.5, 97.5])
    assert bootstrap_mean(values) == pytest.approx(tuple(expected), abs=1e-12)


def test_paired_difference_excludes_zero_only_for_a_clear_gain() -> None:
    clear = np.array([0.5] * 20 + [0.0] * 5)
    low, high = paired_difference(clear, np.zeros(25))
    assert 0 < low < clear.mean() < high <= 0.5
    noise = np.array([0.5, -0.5] * 20)
    assert contains_zero(paired_difference(noise, np.zeros(40)))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]), min_size=1, max_size=60))
def test_paired_difference_holds_the_mean(diffs: list[float]) -> None:
    values = np.array(diffs)
    low, high = paired_difference(values, np.zeros(values.size), resamples=200)
    assert values.min() - 1e-12 <= low <= values.mean() + 1e-12 <= high + 2e-12
    assert high <= values.max() + 1e-12


def test_paired_difference() -> None:
    a = [1.0] * 20 + [0.0] * 5
    same = paired_difference(a, a)
    assert same == (0.0, 0.0) and contains_zero(same)
    better = [1.0] * 25
    low, high = paired_difference(better, a)
    assert 0.0 < low <= high <= 1.0 and not contains_zero((low, high))
    # one case of 25 flips: indistinguishable
    one = [1.0] * 21 + [0.0] * 4
    assert contains_zero(paired_difference(one, a))
    with pytest.raises(ValueError):
        paired_difference([1.0], [1.0, 0.0])


def test_paired_standard_error_is_the_t_tests() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.random(60), rng.random(60)
    want = stats.ttest_rel(a, b)
    # the t statistic is the mean difference over its standard error
    assert paired_standard_error(a, b) == pytest.approx(float((a - b).mean() / want.statistic))
    assert paired_standard_error([0.5], [0.2]) == 0.0
    assert paired_standard_error([0.1, 0.4], [0.1, 0.4]) == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        paired_standard_error([0.1, 0.2], [0.1])
