"""95 % error bars for the figures of a comparison (pure; numpy only).

* :func:`wilson`: the Wilson score interval of a proportion (hit: cases with a hit out of all),
  which stays inside [0, 1] and is honest for small samples and proportions near 0 or 1.
* :func:`bootstrap_mean`: the percentile bootstrap of a mean (recall, tokens per request): the
  cases resampled with replacement, a fixed seed so the same figures give the same bars.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Z95 = 1.959963984540054
RESAMPLES = 2000
SEED = 20261124


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes / n`` ((0, 1) for no trials)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # At 0 and n the bound is exactly 0 or 1; floating point would leave 1e-16 off.
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return low, high


def bootstrap_mean(
    values: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean over ``resamples`` resamples."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, data.size, size=(resamples, data.size))
    means = data[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)
