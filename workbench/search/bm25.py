"""HoloDeck's BM25, for every tool at once.

The runtime scores one tool at a time in Python (``ToolIndex._bm25_score_single``). Here each term's
contribution ``idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * dl / avgdl))`` is computed once per
catalog with the same float operations in the same order, and a query adds, token by token in query
order (repeats included), the contributions of the tools that contain the token. Adding ``0.0`` is
exact in IEEE arithmetic, so the sums are bit-identical to the runtime's per-tool loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.search.tokenize import tokenize
from workbench.search.types import FloatArray, IntArray

K1 = 1.5
B = 0.75


@dataclass(frozen=True)
class Posting:
    """The tools that contain one term and what the term adds to each one's score."""

    docs: IntArray
    contributions: FloatArray


class BM25Index:
    """Postings of every term of a catalog's searchable texts (built once per catalog)."""

    def __init__(self, texts: Sequence[str]) -> None:
        docs = [tokenize(text) for text in texts]
        self.size = len(docs)
        self.lengths = np.array([len(tokens) for tokens in docs], dtype=np.int64)
        total = int(self.lengths.sum())
        #: ``total / n`` as Python divides it (correctly rounded), like the runtime.
        self.avgdl = total / self.size if self.size else 0.0
        self.idf = _idf(docs)
        self.postings = _postings(docs, self.idf, self.lengths, self.avgdl)

    def raw_scores(self, query_tokens: Sequence[str]) -> FloatArray:
        """Un-normalised BM25 of every tool (the runtime's ``_bm25_score_single``)."""
        scores = np.zeros(self.size, dtype=np.float64)
        for token in query_tokens:
            posting = self.postings.get(token)
            if posting is not None:
                scores[posting.docs] += posting.contributions
        return scores

    def scores(self, query_tokens: Sequence[str]) -> FloatArray:
        """BM25 divided by the best score when that is > 0 (the runtime's ``_bm25_search``)."""
        return normalise(self.raw_scores(query_tokens))


def normalise(scores: FloatArray) -> FloatArray:
    """``scores / max`` when the max is positive, else the scores unchanged (like the runtime)."""
    if scores.size == 0:
        return scores
    top = float(scores.max())
    return scores / top if top > 0 else scores


def _idf(docs: Sequence[Sequence[str]]) -> dict[str, float]:
    """``ln((N - df + 0.5) / (df + 0.5) + 1)`` by ``math.log`` (numpy's log may be an ulp off)."""
    df: dict[str, int] = {}
    for tokens in docs:
        for term in set(tokens):
            df[term] = df.get(term, 0) + 1
    n = len(docs)
    return {term: math.log((n - count + 0.5) / (count + 0.5) + 1) for term, count in df.items()}


def _postings(
    docs: Sequence[Sequence[str]], idf: dict[str, float], lengths: IntArray, avgdl: float
) -> dict[str, Posting]:
    """Per term: the tools holding it and ``idf * (tf*(k1+1)) / (tf + k1*(1 - b + b*dl/avgdl))``."""
    rows: dict[str, tuple[list[int], list[int]]] = {}
    for index, tokens in enumerate(docs):
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for term, count in counts.items():
            where, tfs = rows.setdefault(term, ([], []))
            where.append(index)
            tfs.append(count)
    postings: dict[str, Posting] = {}
    for term, (where, tfs) in rows.items():
        docs_of = np.array(where, dtype=np.int64)
        tf = np.array(tfs, dtype=np.float64)
        dl = lengths[docs_of].astype(np.float64)
        # The runtime's expression, operation for operation: K1 * ((1 - B) + (B * dl) / avgdl).
        denominator = tf + K1 * ((1 - B) + (B * dl) / avgdl)
        contributions = idf[term] * ((tf * (K1 + 1)) / denominator)
        postings[term] = Posting(docs=docs_of, contributions=contributions)
    return postings
