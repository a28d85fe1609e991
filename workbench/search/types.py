"""Shared types of the search layer: a ranking, a selection, an embedder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

Reason = Literal["always_include", "top_n_used", "search"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Implementations: openai, azure_openai, ollama, local."""

    @property
    def spec(self) -> str:
        """What ``--embedder`` takes to get this one, e.g. ``local:all-MiniLM-L6-v2``."""
        ...

    @property
    def model_id(self) -> str:
        """Identifies the vector space: the cache key and what the UI names as the score source."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """One row per text (float64). Raises EmbeddingError on failure."""
        ...


@dataclass(frozen=True)
class Ranking:
    """The scores of every tool for one query and one method, and the runtime's order.

    ``scores[i]`` belongs to catalog tool ``i``; ``order`` lists tool indices best first, ties in
    the runtime's order. ``method`` is what actually produced the scores: when HoloDeck falls back
    from semantic/hybrid to BM25, ``requested`` keeps what was asked and ``fallback`` says why.
    """

    query: str
    requested: str
    method: str
    scores: FloatArray
    order: IntArray
    fallback: str | None = None
    model_id: str | None = None

    def rank_of(self, index: int) -> int:
        """1-based rank of catalog tool ``index``."""
        return int(np.flatnonzero(self.order == index)[0]) + 1


@dataclass(frozen=True)
class Selection:
    """What the runtime would send for one query: catalog indices, in the order they were added,
    with the reason each one is in."""

    indices: tuple[int, ...]
    reasons: dict[int, Reason] = field(default_factory=dict)
    #: How many ranked tools passed the threshold (for drawing the cut line).
    passing: int = 0

    def __contains__(self, index: object) -> bool:
        return index in self.reasons
