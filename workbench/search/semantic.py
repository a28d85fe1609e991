"""Cosine similarity of one query against every tool embedding, as HoloDeck computes it.

The runtime (``index._cosine_similarity``) sums ``a * b`` over the dimensions one after another in
Python, on numpy float64 elements (so Python 3.12's compensated ``sum`` does not apply). Here the
sums run over a (dimensions x tools) matrix along axis 0, which numpy reduces row after row: the
same additions in the same order, for all tools in one call.
"""

from __future__ import annotations

import numpy as np

from workbench.search.types import FloatArray


def sequential_sum(values: FloatArray) -> FloatArray:
    """Sum over axis 0 in index order (never pairwise): row after row into one accumulator.

    ``np.add.reduce`` over axis 0 of a C-ordered matrix with two or more columns walks the rows in
    order; with one column (or a vector) it would sum pairwise, so those take ``accumulate``.
    """
    if values.ndim == 1 or values.shape[1] < 2:
        if values.shape[0] == 0:
            return np.zeros(values.shape[1:], dtype=np.float64)
        last: FloatArray = np.add.accumulate(values, axis=0)[-1]
        return last
    summed: FloatArray = np.add.reduce(values, axis=0)
    return summed


class ToolVectors:
    """Tool embeddings laid out for one-call cosine: transposed, with their norms precomputed.

    ``present[i]`` is False for a tool the runtime holds no embedding for (``tool.embedding``
    empty or None): HoloDeck scores such a tool by its raw BM25 instead.
    """

    def __init__(self, vectors: FloatArray, present: np.ndarray) -> None:
        self.dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
        self.present = present.astype(bool)
        self.columns = np.ascontiguousarray(vectors.T, dtype=np.float64)
        self.norms = np.sqrt(sequential_sum(self.columns * self.columns))

    def cosine(self, query: FloatArray) -> FloatArray:
        """Cosine of ``query`` with every tool; 0.0 where a norm is 0 or the dimensions differ."""
        count = self.columns.shape[1]
        query = np.asarray(query, dtype=np.float64).reshape(-1)
        if query.size != self.dim:
            return np.zeros(count, dtype=np.float64)
        dots = sequential_sum(self.columns * query[:, None])
        query_norm = float(np.sqrt(sequential_sum(query * query)))  # a 0-d array
        if query_norm == 0.0:
            return np.zeros(count, dtype=np.float64)
        zero = self.norms == 0.0
        denominators = np.where(zero, 1.0, query_norm * self.norms)
        return np.where(zero, 0.0, dots / denominators)
