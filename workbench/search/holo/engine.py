"""holo-tune's own engine: the tool search ``serve`` runs, built from small parts.

One engine per catalog and field weights (:attr:`~.settings.HoloSettings.fields`): a lexical
index (:mod:`.lexical`), the names (:mod:`.names`), the tool vectors of the dense text
(:meth:`HoloEngine.prepare`, through the embedding cache: a restart embeds nothing), and,
when labelled cases are given, the neighbour signal (:mod:`.neighbours`). A query's raw signals
are computed once and cached; a change of weights, ``top_k``, budget or threshold only fuses and
selects again (:meth:`HoloEngine.rank`, :meth:`HoloEngine.search`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.catalog.models import Catalog
from workbench.search.embedders.cache import ToolEmbeddingCache, embed_cached
from workbench.search.engine import CACHE_QUERY_CHARS
from workbench.search.holo.fusion import cost_signal, fuse
from workbench.search.holo.lexical import LexicalIndex
from workbench.search.holo.names import NameIndex, selected
from workbench.search.holo.neighbours import Labelled, neighbour_scores, tfidf_similarity
from workbench.search.holo.settings import DEFAULT_FIELDS, HoloSettings
from workbench.search.holo.text import documents, name_words, words
from workbench.search.lru import LRU
from workbench.search.types import BoolArray, Embedder, FloatArray, IntArray

NAME = "holo"
#: Signals that score every tool for every query (cosines): with one, every tool is found.
EVERY_TOOL_SIGNALS = ("dense", "server_text")
#: Signals that score only the tools sharing something with the query: a tool is found when one
#: of them is above 0.
EVIDENCE_SIGNALS = ("lexical", "name", "neighbour")
SIGNAL_CACHE_SIZE = 1024


@dataclass(frozen=True)
class Signals:
    """A query's raw signals (by name, one score per tool), its confidence, and the tools it
    names outright."""

    raw: Mapping[str, FloatArray]
    confidence: float
    named: tuple[int, ...]
    #: ``dense`` when the confidence is the best cosine, ``lexical`` when it is the share of the
    #: query's words the best BM25 tool has.
    confidence_of: str


@dataclass(frozen=True)
class HoloRanking:
    """Every tool's fused score for one query under one setting, best first, and why."""

    query: str
    scores: FloatArray
    order: IntArray
    shares: Mapping[str, FloatArray]
    confidence: float
    named: tuple[int, ...] = ()
    #: The tools a ``select:`` query names (then exactly these are returned), else None.
    selected: tuple[int, ...] | None = None
    #: The tools with evidence of their own for the query, in ``order``: every tool when the
    #: dense signal is scored, else those sharing a word or a name part with it (or a
    #: labelled neighbour). A search returns only these.
    found: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True)
class HoloResult:
    """What one search returns: the tools, best first, or none because none fits."""

    ranking: HoloRanking
    indices: tuple[int, ...]
    refused: bool = False
    reasons: Mapping[int, str] = field(default_factory=dict)


class HoloEngine:
    """holo-tune's engine for one catalog, token table, embedder and field weights."""

    name = NAME

    def __init__(
        self,
        catalog: Catalog,
        tokens: Sequence[float] | FloatArray,
        embedder: Embedder | None = None,
        *,
        fields: Mapping[str, int] | None = None,
        embedding_cache: ToolEmbeddingCache | None = None,
        labelled: Labelled | None = None,
    ) -> None:
        self.catalog = catalog
        self.embedder = embedder
        self.fields = dict(fields or DEFAULT_FIELDS)
        self.tokens = np.asarray(tokens, dtype=np.float64)
        if self.tokens.shape[0] != len(catalog.tools):
            raise ValueError("one token count per catalog tool")
        docs = documents(catalog.tools)
        corpus = [doc.tokens(self.fields) for doc in docs]
        self.lexical = LexicalIndex(docs, self.fields, corpus)
        self.names = NameIndex(catalog)
        self._doc_words = [set(words) for words in corpus]
        self._dense_texts = [
            doc.dense_text(self.fields) or tool.name
            for doc, tool in zip(docs, catalog.tools, strict=True)
        ]
        servers: dict[str, int] = {}
        self.server_of = np.asarray(
            [servers.setdefault(t.server, len(servers)) for t in catalog.tools], dtype=np.int64
        )
        self.servers = len(servers)
        self._server_texts = server_texts(catalog, servers)
        self._server_unit: FloatArray | None = None
        self.cost = cost_signal(self.tokens)
        self._store = embedding_cache
        self._unit: FloatArray | None = None
        self.tool_error: str | None = None
        self._prepared = embedder is None
        self._lock = threading.Lock()
        self.labelled = labelled
        self._labelled_vectors: FloatArray | None = None
        self._signals: LRU[str, Signals] = LRU(SIGNAL_CACHE_SIZE, len, CACHE_QUERY_CHARS)

    # -- tool vectors -------------------------------------------------------------------------
    @property
    def prepared(self) -> bool:
        return self._prepared

    @property
    def dense(self) -> bool:
        """Whether the dense signal is scored (an embedder, and the tool vectors exist)."""
        self.prepare()
        return self._unit is not None

    def prepare(self) -> None:
        """Embed every tool's dense text once (through the disk cache), and the labelled queries.
        A failure is kept in :attr:`tool_error` and the engine runs without the dense signal."""
        if self._prepared:
            return
        with self._lock:
            if self._prepared:
                return
            embedder = self.embedder
            try:
                if embedder is not None and self._dense_texts:
                    store = self._store
                    vectors = (
                        embed_cached(embedder, self._dense_texts, store)
                        if store is not None
                        else np.asarray(embedder.embed(self._dense_texts), dtype=np.float64)
                    )
                    self._unit = _unit_rows(vectors)
                    texts = self._server_texts
                    served = (
                        embed_cached(embedder, texts, store)
                        if store is not None
                        else np.asarray(embedder.embed(texts), dtype=np.float64)
                    )
                    self._server_unit = _unit_rows(served)
                    if self.labelled is not None and self.labelled.queries:
                        queries = list(self.labelled.queries)
                        self._labelled_vectors = _unit_rows(np.asarray(embedder.embed(queries)))
            except Exception as err:  # an embedding service down: lexical signals only
                self._unit = None
                self._server_unit = None
                self.tool_error = " ".join(str(err).split())[:200] or type(err).__name__
            self._prepared = True

    def query_vector(self, query: str) -> FloatArray | None:
        """The query's unit vector, or None without the dense signal."""
        if self.embedder is None or not self.dense:
            return None
        vector = np.asarray(self.embedder.embed([query])[0], dtype=np.float64)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def query_vectors(self, queries: Sequence[str]) -> FloatArray | None:
        """The queries' unit vectors, one row each, embedded in one call (None without the
        dense signal): what a fit over many cases embeds once and hands to every engine of the
        same embedder (:meth:`signals_many`)."""
        if self.embedder is None or not self.dense:
            return None
        if not queries:
            return np.zeros((0, 0), dtype=np.float64)
        return _unit_rows(np.asarray(self.embedder.embed(list(queries)), dtype=np.float64))

    # -- signals ------------------------------------------------------------------------------
    def signals(self, query: str) -> Signals:
        """The query's raw signals (cached per query)."""
        found = self._signals.get(query)
        if found is None:
            found = self._compute(query)
            self._signals.put(query, found)
        return found

    def signals_many(
        self, queries: Sequence[str], vectors: FloatArray | None = None
    ) -> list[Signals]:
        """Every query's raw signals, as :meth:`signals` gives them, the queries not cached
        embedded in one call, or read from ``vectors`` (one unit row per query, as
        :meth:`query_vectors` gives them for an engine of the same embedder)."""
        found: list[Signals | None] = [self._signals.get(q) for q in queries]
        todo = [i for i, sig in enumerate(found) if sig is None]
        rows: FloatArray | None = None
        if todo and self.embedder is not None and self.dense:
            if vectors is not None:
                rows = np.asarray(vectors, dtype=np.float64)[todo]
            else:
                rows = self.query_vectors([queries[i] for i in todo])
        for j, i in enumerate(todo):
            vector = rows[j] if rows is not None else None
            sig = self._compute(queries[i], vector, given=True)
            self._signals.put(queries[i], sig)
            found[i] = sig
        return [sig for sig in found if sig is not None]

    def _compute(
        self, query: str, given_vector: FloatArray | None = None, *, given: bool = False
    ) -> Signals:
        raw: dict[str, FloatArray] = {
            "lexical": self.lexical.scores(query),
            "name": self.names.scores(query),
        }
        if given:
            vector = given_vector
        else:
            vector = self.query_vector(query) if self.embedder is not None else None
        unit = self._unit
        if vector is not None and unit is not None:
            raw["dense"] = unit @ vector
            if self._server_unit is not None:
                raw["server_text"] = (self._server_unit @ vector)[self.server_of]
            confidence, of = float(raw["dense"].max()) if raw["dense"].size else 0.0, "dense"
        else:
            confidence, of = self._word_share(query, raw["lexical"]), "lexical"
        if self.labelled is not None and self.labelled.queries:
            raw["neighbour"] = neighbour_scores(
                self._similarity(query, vector), self.labelled, self.server_of, self.servers
            )
        return Signals(raw, confidence, tuple(self.names.named(query)), of)

    def _similarity(self, query: str, vector: FloatArray | None) -> FloatArray:
        known = self._labelled_vectors
        if vector is not None and known is not None:
            return np.asarray(known @ vector, dtype=np.float64)
        assert self.labelled is not None
        row: FloatArray = tfidf_similarity([query], self.labelled.queries)[0]
        return row

    def _word_share(self, query: str, lexical: FloatArray) -> float:
        """The share of the query's words that the best lexical tool has (0 with none)."""
        asked = set(words(query))
        if not asked or lexical.size == 0 or float(lexical.max()) <= 0.0:
            return 0.0
        best = self._doc_words[int(np.argmax(lexical))]
        return len(asked & best) / len(asked)

    # -- ranking and selection ----------------------------------------------------------------
    def rank(self, query: str, settings: HoloSettings) -> HoloRanking:
        """Every tool fused under ``settings``' weights, best first (named tools first when
        ``name_first``; a ``select:`` query's tools first, in the order written)."""
        sig = self.signals(query)
        total, shares = fuse(sig.raw, settings.weights, self.server_of, self.servers, self.cost)
        order = np.argsort(-total, kind="stable").astype(np.int64)
        picked = selected(query, self.catalog)
        first: Sequence[int] = ()
        if picked is not None:
            first = picked
        elif settings.name_first and sig.named:
            first = sorted(sig.named, key=lambda i: -total[i])
        if first:
            head = np.asarray(first, dtype=np.int64)
            order = np.concatenate([head, order[~np.isin(order, head)]])
        evidence = _evidence(sig.raw, settings.weights, self.server_of, self.servers)
        return HoloRanking(
            query,
            total,
            order,
            shares,
            sig.confidence,
            sig.named,
            tuple(picked) if picked is not None else None,
            order[evidence[order]],
        )

    def search(self, query: str, settings: HoloSettings) -> HoloResult:
        """The tools one search returns under ``settings``: a ``select:``'s tools exactly; none
        when the confidence is below the threshold and the query names no tool, or when no tool
        has evidence of its own (:attr:`HoloRanking.found`); else the found tools in ranked order
        up to ``top_k`` and within ``max_tokens`` (a tool that does not fit is passed over; the
        best tool is returned even if it alone is over the budget)."""
        ranking = self.rank(query, settings)
        if ranking.selected is not None:
            chosen = ranking.selected
            return HoloResult(ranking, chosen, reasons={i: "select" for i in chosen})
        threshold = settings.threshold
        if threshold is not None and ranking.confidence < threshold and not ranking.named:
            return HoloResult(ranking, (), refused=True)
        if ranking.found.size == 0:
            return HoloResult(ranking, (), refused=True)
        picked = pick(ranking.found, self.tokens, settings.top_k, settings.max_tokens)
        named = set(ranking.named) if settings.name_first else set()
        reasons = {i: ("name" if i in named else "search") for i in picked}
        return HoloResult(ranking, picked, reasons=reasons)


def _evidence(
    raw: Mapping[str, FloatArray],
    weights: Mapping[str, float],
    server_of: IntArray,
    servers: int,
) -> BoolArray:
    """Which tools have evidence of their own in the signals that count (a weight not 0): all
    with a dense score, else a positive lexical, name or neighbour score, and with the server
    signal, every tool of a server one of whose tools has such a score."""
    size = server_of.shape[0]
    if any(name in raw and weights.get(name, 0.0) for name in EVERY_TOOL_SIGNALS):
        return np.ones(size, dtype=bool)
    mask = np.zeros(size, dtype=bool)
    for name in EVIDENCE_SIGNALS:
        values = raw.get(name)
        if values is not None and weights.get(name, 0.0):
            mask |= values > 0.0
    if weights.get("server", 0.0) and servers > 1:
        answered = np.zeros(servers, dtype=bool)
        answered[server_of[mask]] = True
        mask = answered[server_of]
    return mask


def server_texts(catalog: Catalog, servers: Mapping[str, int]) -> list[str]:
    """Each server's document for the ``server_text`` signal, in server order: its name in
    words, then its tools' names in words (what the server is for, in one text)."""
    names: list[list[str]] = [[] for _ in servers]
    for tool in catalog.tools:
        names[servers[tool.server]].append(" ".join(name_words(tool.name)))
    return [
        " ".join(name_words(server)) + "\n" + "; ".join(names[index])
        for server, index in servers.items()
    ]


def pick(
    order: IntArray, tokens: FloatArray, top_k: int | None, max_tokens: int | None
) -> tuple[int, ...]:
    """Tools in ``order`` up to ``top_k`` and within ``max_tokens`` (one that does not fit is
    passed over; the first is kept even alone over the budget)."""
    if max_tokens is None:
        return tuple(int(i) for i in order[: top_k or len(order)])
    limit = top_k or len(order)
    smallest = float(tokens.min()) if tokens.size else 0.0
    chosen: list[int] = []
    spent = 0.0
    for raw in order:
        i = int(raw)
        cost = float(tokens[i])
        if chosen and spent + cost > max_tokens:
            continue
        chosen.append(i)
        spent += cost
        if len(chosen) >= limit or spent + smallest > max_tokens:
            break
    return tuple(chosen)


def _unit_rows(vectors: FloatArray) -> FloatArray:
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"the embedder returned an array of shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)
