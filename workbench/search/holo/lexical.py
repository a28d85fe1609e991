"""The lexical signal: BM25 (``bm25s``, Lucene's variant) over the tools' weighted documents.

``bm25s`` keeps the index as sparse arrays and scores a query for every tool in one pass, which
is what a search of 1,000 tools per keystroke needs; the words are :func:`~.text.words`, so a
name's parts and a query's words meet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from workbench.search.bm25s_lib import bm25s, new_index
from workbench.search.holo.text import ToolDocument, words
from workbench.search.types import FloatArray


class LexicalIndex:
    """BM25 of every tool for a query's words (built once per catalog and field weights)."""

    def __init__(
        self,
        docs: Sequence[ToolDocument],
        weights: Mapping[str, int],
        corpus: Sequence[list[str]] | None = None,
    ) -> None:
        """``corpus``: each document's words under ``weights`` when the caller has them
        already (:meth:`ToolDocument.tokens`; the engine reads them too)."""
        self.size = len(docs)
        if corpus is None:
            corpus = [doc.tokens(weights) for doc in docs]
        self._retriever: bm25s.BM25 | None = None
        if any(corpus):
            retriever = new_index()
            retriever.index(corpus, show_progress=False)
            self._retriever = retriever

    def scores(self, query: str) -> FloatArray:
        """Every tool's BM25 for ``query`` (0 for a tool that shares no word with it)."""
        terms = words(query)
        if self._retriever is None or not terms:
            return np.zeros(self.size, dtype=np.float64)
        known = [t for t in terms if t in self._retriever.vocab_dict]
        if not known:
            return np.zeros(self.size, dtype=np.float64)
        return np.asarray(self._retriever.get_scores(known), dtype=np.float64)
