"""The budget every tuner is tuned against: one type for every runtime.

``--max-tokens`` N caps the mean tokens sent, ``--min-reduction`` R caps them at ``(1 - R)`` of
all tokens, ``--min-hit`` H asks the set tuners (allowlists, deferred loading) for the fewest
tokens reaching hit H. With none of them the rule is the *knee*: at most :data:`DEFAULT_SHARE`
of all tokens, and the cheapest setting within :data:`KNEE_TOLERANCE` of the best recall there.

Each tuner reports the fields it reads (:meth:`Budget.to_json`): the ``tool_filtering`` tuner
its two flags (:data:`FILTER_FIELDS`), the set tuners a cap and the hit target
(:data:`SET_FIELDS`: they fold ``--min-reduction`` into the cap,
:func:`~workbench.commands.common.max_tokens_of`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.errors import InputError

#: Robust recalls this close count as equal (then fewer tokens win).
TIE_TOLERANCE = 0.001
#: With no budget: at most this share of all tokens ...
DEFAULT_SHARE = 0.30
#: ... and the cheapest setting this close to the best recall there (the knee).
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

    def capped(self, tokens: float | None) -> Budget:
        """This budget, also within ``tokens`` (rounded up to a whole token; None: as it is)."""
        if tokens is None:
            return self
        cap = math.ceil(tokens - 1e-9)
        if self.max_tokens is not None:
            cap = min(cap, self.max_tokens)
        return Budget(max(cap, 0), self.min_reduction, self.min_hit)

    def limit(self, tokens_all: int) -> float:
        """The largest mean tokens sent allowed: the smallest cap given, none (infinite) for a
        hit target alone, the default share when no budget is given."""
        limits = [math.inf]
        if self.max_tokens is not None:
            limits.append(float(self.max_tokens))
        if self.min_reduction is not None:
            limits.append((1.0 - self.min_reduction) * tokens_all)
        if not self.explicit:
            limits.append(DEFAULT_SHARE * tokens_all)
        return min(limits)

    @property
    def tolerance(self) -> float:
        return TIE_TOLERANCE if self.explicit else KNEE_TOLERANCE

    def to_json(self, fields: Sequence[str]) -> dict[str, Any]:
        """The ``fields`` the tuner reports (:data:`FILTER_FIELDS`, :data:`SET_FIELDS`)."""
        return {name: getattr(self, name) for name in fields}
