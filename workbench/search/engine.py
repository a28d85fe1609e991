"""The ``holodeck`` engine: HoloDeck 0.6.40's tool search over a whole catalog, with numpy.

Built once per catalog: BM25 postings now, tool embeddings on :meth:`HoloDeckEngine.prepare` (slow:
the TUI runs it in a worker; an embedding cache makes a second start instant). A query is then
scored for every tool in a few array operations, and the ranking is cached per (query, method), so
a change of top_k, threshold, always_include or top_n_used only re-runs the selection.

Every fallback of the runtime (``holodeck.lib.tool_filter.index.ToolIndex``) is reproduced:

- no embedding service: semantic is BM25 (normalised), and hybrid fuses BM25 with itself;
- the query embedding fails: the same, for that query;
- a tool without an embedding (the tool batch failed at start): that tool scores its *raw*,
  un-normalised BM25 next to the other tools' cosines.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config.filtering import SearchMethod
from workbench.search.bm25 import BM25Index, normalise
from workbench.search.embedders.cache import ToolEmbeddingCache, embed_cached
from workbench.search.hybrid import best_first, rrf
from workbench.search.lru import LRU
from workbench.search.semantic import ToolVectors
from workbench.search.tokenize import tokenize
from workbench.search.types import Embedder, FloatArray, Ranking

RANKING_CACHE_SIZE = 512
QUERY_CACHE_SIZE = 2048
#: The characters of query text each cache keeps at most: typing at a 64 KiB query makes a new
#: 64 KiB key per key, and 2,048 of them held 128 MB.
CACHE_QUERY_CHARS = 4 * 1024 * 1024


@dataclass(frozen=True)
class _Semantic:
    """The semantic half of a query: scores, what really produced them, and why if not cosine."""

    scores: FloatArray
    method: str
    fallback: str | None
    model_id: str | None
    cacheable: bool = True


class HoloDeckEngine:
    """HoloDeck's filter ranking (semantic, bm25, hybrid) for one catalog and one embedder."""

    name = "holodeck"

    def __init__(
        self,
        catalog: Catalog,
        embedder: Embedder | None,
        *,
        embedding_cache: ToolEmbeddingCache | None = None,
        no_embedder_reason: str | None = None,
    ) -> None:
        self.catalog = catalog
        self.embedder = embedder
        self._store = embedding_cache
        #: Why there is no embedder (the embedder choice's note), shown as the fallback reason.
        self._no_embedder = no_embedder_reason or "no embedding service: HoloDeck ranks by BM25"
        self._texts = [tool.search_text for tool in catalog.tools]
        self.bm25 = BM25Index(self._texts)
        self._vectors: ToolVectors | None = None
        self._tool_error: str | None = None
        self._prepared = embedder is None
        self._prepare_lock = threading.Lock()
        self._rankings: LRU[tuple[str, str], Ranking] = LRU(
            RANKING_CACHE_SIZE, lambda key: len(key[0]), CACHE_QUERY_CHARS
        )
        self._queries: LRU[str, FloatArray] = LRU(QUERY_CACHE_SIZE, len, CACHE_QUERY_CHARS)

    # -- tool embeddings -------------------------------------------------------------------
    @property
    def embedding_cache(self) -> ToolEmbeddingCache | None:
        """Where tool vectors are kept between runs (None: not kept)."""
        return self._store

    @property
    def prepared(self) -> bool:
        """True once the tool embeddings exist (or failed, or there is no embedder)."""
        return self._prepared

    @property
    def tool_embedding_error(self) -> str | None:
        """Why the tool embeddings failed at start (the runtime then scores raw BM25), if so."""
        return self._tool_error

    def prepare(self) -> None:
        """Embed every tool's searchable text once, as the runtime does at start (idempotent).

        A failure is not raised: the runtime logs it and runs on without tool embeddings, and so
        does this engine (see :attr:`tool_embedding_error`).
        """
        if self._prepared:
            return
        with self._prepare_lock:
            if self._prepared:
                return
            try:
                self._vectors = self._embed_tools()
            except Exception as err:  # the runtime catches everything here too
                self._tool_error = _one_line(err)
            self._prepared = True

    def _embed_tools(self) -> ToolVectors | None:
        """All tool vectors in one batch, as the runtime asks for them (through the disk cache)."""
        embedder = self.embedder
        if embedder is None or not self._texts:
            return None
        if self._store is not None:
            vectors = embed_cached(embedder, self._texts, self._store)
        else:
            vectors = np.asarray(embedder.embed(self._texts), dtype=np.float64)
        if vectors.ndim != 2:
            raise ValueError(f"the embedder returned an array of shape {vectors.shape}")
        # Like the runtime's zip(strict=False): tools past the last vector get none.
        found: list[FloatArray | None] = [None] * len(self._texts)
        for index in range(min(len(found), vectors.shape[0])):
            found[index] = vectors[index]
        return _stack(found)

    # -- ranking ---------------------------------------------------------------------------
    def rank(self, query: str, method: SearchMethod | str) -> Ranking:
        """Every tool's score for ``query`` by ``method`` and the runtime's order (cached)."""
        key = (query, method)
        cached = self._rankings.get(key)
        if cached is not None:
            return cached
        ranking, cacheable = self._rank(query, method)
        if cacheable:
            self._rankings.put(key, ranking)
        return ranking

    def compute(self, query: str, method: SearchMethod | str) -> Ranking:
        """:meth:`rank` without its ranking cache (query vectors stay cached): for benchmarks."""
        return self._rank(query, method)[0]

    def _rank(self, query: str, method: str) -> tuple[Ranking, bool]:
        if method not in ("semantic", "bm25", "hybrid"):
            raise ValueError(f"unknown search method {method!r}")
        raw = self.bm25.raw_scores(tokenize(query))
        bm25 = normalise(raw)
        if method == "bm25":
            return Ranking(query, method, "bm25", bm25, best_first(bm25)), True
        semantic = self._semantic(query, raw, bm25)
        if method == "semantic":
            ranking = Ranking(
                query,
                method,
                semantic.method,
                semantic.scores,
                best_first(semantic.scores),
                fallback=semantic.fallback,
                model_id=semantic.model_id,
            )
            return ranking, semantic.cacheable
        fused, order = rrf(semantic.scores, bm25)
        fallback = semantic.fallback and f"its semantic half is BM25: {semantic.fallback}"
        ranking = Ranking(
            query, method, "hybrid", fused, order, fallback=fallback, model_id=semantic.model_id
        )
        return ranking, semantic.cacheable

    def _semantic(self, query: str, raw: FloatArray, bm25: FloatArray) -> _Semantic:
        """The runtime's ``_semantic_search``, fallbacks included, for every tool at once."""
        embedder = self.embedder
        if embedder is None:
            return _Semantic(bm25, "bm25", self._no_embedder, None)
        self.prepare()
        try:
            query_vector = self._query_vector(query, embedder)
        except Exception as err:  # the runtime falls back on any error
            reason = f"the query embedding failed ({_one_line(err)})"
            return _Semantic(bm25, "bm25", reason, None, cacheable=False)
        vectors = self._vectors
        if vectors is None or not vectors.present.any():
            why = self._tool_error or "no tool has an embedding"
            reason = f"tool embeddings unavailable ({why}): every tool scores its raw BM25"
            return _Semantic(raw, "bm25", reason, None)
        scores = np.where(vectors.present, vectors.cosine(query_vector), raw)
        missing = int((~vectors.present).sum())
        partial = f"{missing} tools have no embedding and score their raw BM25" if missing else None
        return _Semantic(scores, "semantic", partial, embedder.model_id)

    def _query_vector(self, query: str, embedder: Embedder) -> FloatArray:
        cached = self._queries.get(query)
        if cached is None:
            cached = np.asarray(embedder.embed([query])[0], dtype=np.float64)
            self._queries.put(query, cached)
        return cached


def _stack(found: Sequence[FloatArray | None]) -> ToolVectors | None:
    """One matrix of the tool vectors; a tool without one (or with an empty one) is absent."""
    dims = {int(np.asarray(v).size) for v in found if v is not None and np.asarray(v).size}
    if not dims:
        return None
    if len(dims) > 1:
        raise ValueError(f"tool embeddings of different sizes: {sorted(dims)}")
    dim = dims.pop()
    matrix = np.zeros((len(found), dim), dtype=np.float64)
    present = np.zeros(len(found), dtype=bool)
    for index, vector in enumerate(found):
        if vector is not None and np.asarray(vector).size == dim:
            matrix[index] = np.asarray(vector, dtype=np.float64).reshape(-1)
            present[index] = True
    return ToolVectors(matrix, present)


def _one_line(err: BaseException) -> str:
    text = str(err).strip().replace("\n", " ") or type(err).__name__
    return text if len(text) <= 200 else text[:197] + "..."
