"""Rank orders and HoloDeck's reciprocal rank fusion, with the runtime's tie order.

The runtime sorts ``(tool, score)`` lists with ``list.sort(key=score, reverse=True)``: stable, so
ties keep the order the list was built in. ``np.argsort(-scores, kind="stable")`` is the same order.
"""

from __future__ import annotations

import numpy as np

from workbench.search.types import FloatArray, IntArray

#: The RRF constant HoloDeck uses.
RRF_K = 60


def best_first(scores: FloatArray, base: IntArray | None = None) -> IntArray:
    """Indices by score descending, ties in ``base`` order (catalog order when ``base`` is None)."""
    if base is None:
        return np.argsort(-scores, kind="stable").astype(np.int64)
    return base[np.argsort(-scores[base], kind="stable")].astype(np.int64)


def rrf(semantic: FloatArray, bm25: FloatArray) -> tuple[FloatArray, IntArray]:
    """HoloDeck's hybrid: ``1/(k + rank)`` from each ranking, summed, divided by the max.

    Returns the fused scores (by catalog index) and the runtime's order. The runtime fills its
    score dict while walking the semantic ranking, then sorts that dict's items stably, so ties
    between fused scores keep the semantic ranking's order.
    """
    count = semantic.size
    if count == 0:
        return semantic.copy(), np.zeros(0, dtype=np.int64)
    semantic_order = best_first(semantic)
    bm25_order = best_first(bm25)
    first = np.arange(RRF_K + 1, RRF_K + 1 + count, dtype=np.float64)
    from_semantic = np.empty(count, dtype=np.float64)
    from_semantic[semantic_order] = 1 / first
    from_bm25 = np.empty(count, dtype=np.float64)
    from_bm25[bm25_order] = 1 / first
    fused = from_semantic + from_bm25
    top = float(fused.max())
    if top > 0:
        fused = fused / top
    return fused, best_first(fused, semantic_order)
