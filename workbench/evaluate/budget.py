"""The budget every tuner is tuned against: one type for every runtime.

``--max-tokens`` N caps the mean tokens sent, ``--min-reduction`` R caps them at ``(1 - R)`` of
all tokens, ``--min-hit`` H asks the set tuners (allowlists, deferred loading) for the fewest
tokens reaching hit H. With none of them the rule is the *knee* of the catalog's own front
(:func:`knee`): no share of the tokens is fixed, the point is read off the recall the settings
reach against the tokens they send.

Each tuner reports the fields it reads (:meth:`Budget.to_json`): the ``tool_filtering`` tuner
its two flags (:data:`FILTER_FIELDS`), the set tuners a cap and the hit target
(:data:`SET_FIELDS`: they fold ``--min-reduction`` into the cap,
:meth:`Budget.cap`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.errors import InputError

#: Robust recalls this close count as equal (then fewer tokens win).
TIE_TOLERANCE = 0.001
#: With no budget flag the tuner does not trade away more recall than this for tokens: the
#: knee's tolerance (:func:`knee`) and the verdict's (a proposal this far below the current
#: setting is not recommended).
KNEE_TOLERANCE = 0.02

#: The budget fields the ``tool_filtering`` tuner reports.
FILTER_FIELDS = ("max_tokens", "min_reduction")
#: The budget fields the set tuners (allowlists, deferred loading) report.
SET_FIELDS = ("max_tokens", "min_hit")


@dataclass(frozen=True, slots=True)
class Budget:
    """Mean tokens sent per request (or per task) the proposed setting may cost, and the hit
    the set tuners must reach."""

    max_tokens: int | None = None
    min_reduction: float | None = None
    min_hit: float | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 0:
            raise InputError("must be at least 0", field="--max-tokens")
        if self.min_reduction is not None and not 0.0 <= self.min_reduction <= 1.0:
            raise InputError("must be between 0 and 1", field="--min-reduction")
        if self.min_hit is not None and not 0.0 <= self.min_hit <= 1.0:
            raise InputError("must be between 0 and 1", field="--min-hit")

    @property
    def explicit(self) -> bool:
        """Whether any budget was given (else the knee rule)."""
        given = (self.max_tokens, self.min_reduction, self.min_hit)
        return any(value is not None for value in given)

    def met_by(self, tokens: float, hit: float) -> bool:
        """Whether figures of ``tokens`` sent and ``hit`` are within this budget (its cap and its
        hit target; the rule every tuner's ``within_budget`` says)."""
        within = self.max_tokens is None or tokens <= self.max_tokens
        return within and (self.min_hit is None or hit >= self.min_hit)

    def capped(self, tokens: float | None) -> Budget:
        """This budget, also within ``tokens`` (rounded up to a whole token; None: as it is)."""
        if tokens is None:
            return self
        cap = math.ceil(tokens - 1e-9)
        if self.max_tokens is not None:
            cap = min(cap, self.max_tokens)
        return Budget(max(cap, 0), self.min_reduction, self.min_hit)

    def cap(self, tokens_all: float) -> int | None:
        """The whole-token cap of ``max_tokens`` and ``min_reduction`` (the smaller when both
        are given; None when neither is), for the tuners whose budget is a cap."""
        caps = [self.max_tokens] if self.max_tokens is not None else []
        if self.min_reduction is not None:
            caps.append(round((1.0 - self.min_reduction) * tokens_all))
        return min(caps) if caps else None

    def limit(self, tokens_all: int) -> float:
        """The largest mean tokens sent allowed: the smallest cap given, none (infinite) for a
        hit target alone or when no budget is given (then the tuner takes the :func:`knee` of
        what it can reach)."""
        limits = [math.inf]
        if self.max_tokens is not None:
            limits.append(float(self.max_tokens))
        if self.min_reduction is not None:
            limits.append((1.0 - self.min_reduction) * tokens_all)
        return min(limits)

    @property
    def tolerance(self) -> float:
        return TIE_TOLERANCE if self.explicit else KNEE_TOLERANCE

    def to_json(self, fields: Sequence[str]) -> dict[str, Any]:
        """The ``fields`` the tuner reports (:data:`FILTER_FIELDS`, :data:`SET_FIELDS`)."""
        return {name: getattr(self, name) for name in fields}


def front(tokens: Sequence[float], recall: Sequence[float]) -> list[int]:
    """The indices of the points no other beats on recall and tokens (fewer or as many tokens
    and more recall, or fewer tokens and as much), cheapest first; of points with the very same
    figures, the first."""
    order = sorted(range(len(tokens)), key=lambda i: (tokens[i], -recall[i], i))
    out: list[int] = []
    for i in order:
        if not out or recall[i] > recall[out[-1]]:
            out.append(i)
    return out


def knee(tokens: Sequence[float], recall: Sequence[float], tokens_all: float) -> int:
    """The knee of the front of the points (``tokens[i]``, ``recall[i]``) on a catalog whose
    every tool costs ``tokens_all``: the index of the point where recall stops coming cheaply
    (docs/runtimes.md, the default budget).

    Sending every tool is a setting of every runtime, at recall 1 for ``tokens_all`` tokens: the
    line from the front's cheapest point (:func:`front`) to it is what a token buys on average
    on this catalog. The knee is the front point farthest above that line (the most recall
    over the line's at its tokens): up to it the front buys recall faster than the average,
    past it slower. A front measured on a few dozen cases is flat near that point, so every
    point within :data:`KNEE_TOLERANCE` of the farthest counts, and of those the one with the
    most recall is the knee: the default does not give up recall for less than the verdict's
    tolerance. A front with no point above the line nor within that tolerance under it (no
    dearer setting buys recall about as fast as sending every tool would) bends at its cheapest
    point. Nothing in it is a fixed share of the
    tokens, and it is the same point when every token count is scaled (the tokens of a request
    or of a task).
    """
    if len(tokens) != len(recall) or not tokens:
        raise ValueError("knee: tokens and recall must be non-empty and of one length")
    points = front(tokens, recall)
    t0, r0 = tokens[points[0]], recall[points[0]]
    if tokens_all <= t0 or r0 >= 1.0:
        return points[0]
    above = [recall[i] - r0 - (1.0 - r0) * (tokens[i] - t0) / (tokens_all - t0) for i in points]
    farthest = max(above)
    return max(
        (i for i, a in zip(points, above, strict=True) if a >= farthest - KNEE_TOLERANCE - 1e-12),
        key=lambda i: recall[i],
    )
