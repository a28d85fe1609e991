"""95 % intervals for the figures measured on labelled cases (pure functions, no I/O): the one
place every error bar of holo-tune comes from (``eval``'s ``ci95``, ``tune``'s verdict and what-if
rows, the compare tables, ``compare --runtimes``).

With 20 cases a hit rate of 0.80 means anything from 0.58 to 0.92: the figures come with error
bars so that nobody tunes on noise.

- *Proportions* (hit, top1: one yes/no per case) get the Wilson score interval, which stays inside
  [0, 1] and behaves at 0 and n successes, where the normal approximation collapses to a point.
- *Means of per-case figures* (recall, mrr, tokens per request) get a percentile bootstrap:
  cases resampled with replacement, ``RESAMPLES`` times, from a fixed seed, so that a run prints
  the same interval every time.
- *A paired difference* (two settings on the same cases) is bootstrapped on the per-case
  differences: ``tune`` says its proposal is not distinguishable from the file's setting when the
  interval of the difference contains 0, and lists a what-if row only when the interval of its
  gain lies above 0.
- *The standard error of a paired difference* (:func:`paired_standard_error`): the band of the
  engine fit's one-standard-error rule (which signals earn their place).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: The two-sided 95 % normal quantile.
Z95 = 1.959963984540054
#: Bootstrap resamples (the percentile ends move by well under 0.01 from one seed to another).
RESAMPLES = 2000
#: The bootstrap's seed (any fixed value: the intervals must not change between runs).
SEED = 20240611
#: Resamples drawn at once (bounds memory to ``CHUNK x cases`` indices).
CHUNK = 250

Interval = tuple[float, float]


def wilson(successes: int, trials: int, z: float = Z95) -> Interval:
    """The Wilson score interval of ``successes / trials`` (``(0, 1)`` for no trials)."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")
    if trials == 0:
        return (0.0, 1.0)
    n = float(trials)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return (low, high)


def bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    level: float = 0.95,
) -> Interval:
    """Percentile bootstrap interval of the mean of ``values`` (the value twice when they are
    all equal; ``(0, 0)`` for none)."""
    data = np.asarray(values, dtype=np.float64)
    n = data.size
    if n == 0:
        return (0.0, 0.0)
    if np.all(data == data[0]):  # one value, or all equal: every resample's mean is that value
        value = float(data[0])
        return (value, value)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, CHUNK):
        stop = min(start + CHUNK, resamples)
        picks = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[picks].mean(axis=1)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return (float(low), float(high))


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
) -> Interval:
    """95 % interval of ``mean(a - b)`` for two figures of the same cases (bootstrap of the
    per-case differences, so that what the cases share cancels out)."""
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"paired figures differ in length: {left.size} and {right.size}")
    return bootstrap_mean(left - right, seed=seed, resamples=resamples)


def paired_standard_error(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray
) -> float:
    """The standard error of ``mean(a - b)`` for two figures of the same cases: the per-case
    differences' standard deviation (``ddof=1``) over the square root of their number (0.0 for
    fewer than two cases). One such error either side is the band the one-standard-error rule
    reads (:mod:`workbench.evaluate.holo_fit`)."""
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"paired figures differ in length: {left.size} and {right.size}")
    if left.size < 2:
        return 0.0
    return float((left - right).std(ddof=1) / math.sqrt(left.size))


def contains_zero(interval: Interval) -> bool:
    return interval[0] <= 0.0 <= interval[1]


def interval_text(interval: Interval, digits: int = 2) -> str:
    """``0.58-0.92``: an interval in a table cell or a card."""
    return f"{interval[0]:.{digits}f}-{interval[1]:.{digits}f}"
