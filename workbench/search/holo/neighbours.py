"""The neighbour signal: how like the query are the labelled queries that expected each tool.

A user's labelled cases say which tools answered which queries. A new query close to a labelled
one probably wants the same tools, or at least the same server. Per tool the signal is the mean of
two parts: the best similarity of the query to a labelled query that expected the tool, and the
best to one that expected any tool of its server. Similarities are cosines of the query vectors
(the engine's embedder) or, without one, of TF-IDF vectors of the queries' words.

In every held-out figure the labelled queries are only those of the other folds (cross-fitted):
:func:`neighbour_scores` takes which labelled queries count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.search.types import FloatArray, IntArray


@dataclass(frozen=True)
class Labelled:
    """Which catalog tools each labelled query expected, as flat pairs (query i, tool j)."""

    queries: tuple[str, ...]
    pair_query: IntArray
    pair_tool: IntArray

    @classmethod
    def of(cls, queries: Sequence[str], expected: Sequence[Sequence[int]]) -> Labelled:
        qs = [i for i, tools in enumerate(expected) for _ in tools]
        ts = [int(t) for tools in expected for t in tools]
        return cls(tuple(queries), np.asarray(qs, dtype=np.int64), np.asarray(ts, dtype=np.int64))


def neighbour_scores(
    similarity: FloatArray,
    labelled: Labelled,
    server_of: IntArray,
    servers: int,
    use: IntArray | None = None,
) -> FloatArray:
    """Per tool: the mean of the best ``similarity`` (one per labelled query) among the labelled
    queries that expected it, and among those that expected a tool of its server. ``use`` (a
    boolean mask or indices of labelled queries) limits which count: the training folds."""
    size = server_of.shape[0]
    sims = np.maximum(np.asarray(similarity, dtype=np.float64), 0.0)
    pq, pt = labelled.pair_query, labelled.pair_tool
    if use is not None:
        allowed = np.zeros(len(labelled.queries), dtype=bool)
        allowed[use] = True
        keep = allowed[pq]
        pq, pt = pq[keep], pt[keep]
    tool_best = np.zeros(size, dtype=np.float64)
    server_best = np.zeros(max(servers, 1), dtype=np.float64)
    if pq.size:
        values = sims[pq]
        np.maximum.at(tool_best, pt, values)
        np.maximum.at(server_best, server_of[pt], values)
    return 0.5 * tool_best + 0.5 * server_best[server_of]


def tfidf_similarity(queries: Sequence[str], labelled: Sequence[str]) -> FloatArray:
    """Cosines of TF-IDF vectors (the engine's words) of ``queries`` against ``labelled``: one
    row per query."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from workbench.search.holo.text import words

    if not labelled or not queries:
        return np.zeros((len(queries), len(labelled)), dtype=np.float64)
    vectorizer = TfidfVectorizer(analyzer=words, norm="l2")
    try:
        known = vectorizer.fit_transform(list(labelled))
    except ValueError:  # no labelled query has a word
        return np.zeros((len(queries), len(labelled)), dtype=np.float64)
    asked = vectorizer.transform(list(queries))
    return np.asarray((asked @ known.T).toarray(), dtype=np.float64)
