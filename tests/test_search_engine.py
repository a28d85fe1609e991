"""The ``holodeck`` engine's own logic on small hand-made catalogs (values worked out by hand).

The oracle test (test_oracle_holodeck.py) checks the same engine against HoloDeck's module on the
real data sets; these tests pin the behaviours one at a time so a regression names itself.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from oracle.embedders import Failing, HashedBagEmbedder, Memo

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.search.bm25 import BM25Index
from workbench.search.embedders import ToolEmbeddingCache
from workbench.search.engine import CACHE_QUERY_CHARS, HoloDeckEngine
from workbench.search.hybrid import rrf
from workbench.search.semantic import ToolVectors, sequential_sum
from workbench.search.tokenize import tokenize
from workbench.search.types import FloatArray


def make_catalog(*specs: tuple[str, str, str, Sequence[str]]) -> Catalog:
    """Tools from (plugin, name, description, parameters), in the given order."""
    tools = [
        Tool(
            full_name=f"{plugin}-{name}",
            plugin=plugin,
            name=name,
            description=description,
            parameters=tuple(params),
            kind="mcp",
        )
        for plugin, name, description, params in specs
    ]
    servers = [
        ServerStatus(p, "snapshot", "snapshot") for p in dict.fromkeys(t.plugin for t in tools)
    ]
    return Catalog(tools=tools, servers=servers)


WEB = make_catalog(
    ("brave", "brave_web_search", "Search the web", ["query", "count"]),
    ("brave", "brave_news_search", "Search news articles", ["query"]),
    ("memory", "read_graph", "Read the knowledge graph", []),
)


class TableEmbedder:
    """Fixed vectors per text (anything else: the default vector); counts its calls."""

    def __init__(self, table: dict[str, list[float]], default: list[float]) -> None:
        self.table = table
        self.default = default
        self.calls: list[list[str]] = []

    @property
    def spec(self) -> str:
        return "test:table"

    @property
    def model_id(self) -> str:
        return "test-table"

    def embed(self, texts: Sequence[str]) -> FloatArray:
        self.calls.append(list(texts))
        return np.array([self.table.get(t, self.default) for t in texts], dtype=np.float64)


def test_tokenizer_is_holodecks() -> None:
    assert tokenize("brave_web_search") == ["brave", "web", "search"]
    assert tokenize("getUserById v2.0") == ["getuserbyid", "v2", "0"]
    assert tokenize("Größe café") == ["gr", "e", "caf"]
    assert tokenize("\u212a") == ["k"]  # the Kelvin sign lowercases to an ASCII k
    assert tokenize("  --  ") == []


def test_bm25_matches_the_formula_by_hand() -> None:
    index = BM25Index(["a b b", "b c", "d"])
    # N=3, avgdl=2; df(b)=2 -> idf=ln(1.5/2.5+1); doc 0: tf=2, dl=3.
    idf_b = math.log((3 - 2 + 0.5) / (2 + 0.5) + 1)
    doc0 = idf_b * (2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / 2)))
    doc1 = idf_b * (1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 2 / 2)))
    raw = index.raw_scores(["b", "b", "zzz"])  # repeats count, unknown tokens add nothing
    assert raw.tolist() == [doc0 + doc0, doc1 + doc1, 0.0]
    assert index.scores(["b"]).tolist() == [1.0, doc1 / doc0, 0.0]
    assert index.scores([]).tolist() == [0.0, 0.0, 0.0]  # max 0: not normalised


def test_bm25_ranking_normalised_with_catalog_order_ties() -> None:
    engine = HoloDeckEngine(WEB, None)
    ranking = engine.rank("search", "bm25")
    assert ranking.method == "bm25" and ranking.fallback is None
    assert ranking.scores.max() == 1.0
    nothing = engine.rank("unrelated words", "bm25")
    assert nothing.scores.tolist() == [0.0, 0.0, 0.0]
    assert nothing.order.tolist() == [0, 1, 2]  # all tied: catalog order


def test_no_embedder_semantic_is_bm25_and_says_why() -> None:
    engine = HoloDeckEngine(WEB, None)
    semantic = engine.rank("news", "semantic")
    bm25 = engine.rank("news", "bm25")
    assert semantic.requested == "semantic" and semantic.method == "bm25"
    assert semantic.fallback and "no embedding service" in semantic.fallback
    assert np.array_equal(semantic.scores, bm25.scores)
    hybrid = engine.rank("news", "hybrid")
    assert hybrid.method == "hybrid" and hybrid.fallback


def test_semantic_is_raw_cosine() -> None:
    texts = [t.search_text for t in WEB.tools]
    table = {texts[0]: [1.0, 0.0], texts[1]: [0.0, 1.0], texts[2]: [0.0, 0.0]}
    embedder = TableEmbedder(table, default=[1.0, 1.0])
    ranking = HoloDeckEngine(WEB, embedder).rank("anything", "semantic")
    half = 1 / math.sqrt(2)
    assert ranking.scores.tolist() == pytest.approx([half, half, 0.0], abs=1e-15)
    assert ranking.order.tolist() == [0, 1, 2]
    assert ranking.method == "semantic" and ranking.model_id == "test-table"


def test_negative_cosine_is_kept() -> None:
    texts = [t.search_text for t in WEB.tools]
    table = {texts[0]: [1.0, 0.0], texts[1]: [-1.0, 0.0], texts[2]: [0.0, 1.0]}
    ranking = HoloDeckEngine(WEB, TableEmbedder(table, [1.0, 0.0])).rank("q", "semantic")
    assert ranking.scores.tolist() == [1.0, -1.0, 0.0]
    assert ranking.order.tolist() == [0, 2, 1]


def test_tool_batch_failure_scores_raw_bm25() -> None:
    embedder = Failing(HashedBagEmbedder(), tools=True)
    engine = HoloDeckEngine(WEB, embedder)
    engine.prepare()
    assert engine.tool_embedding_error == "503 Service Unavailable"
    ranking = engine.rank("search the web", "semantic")
    raw = engine.bm25.raw_scores(tokenize("search the web"))
    assert np.array_equal(ranking.scores, raw) and raw.max() > 1.0
    assert ranking.fallback and "raw BM25" in ranking.fallback


def test_query_failure_falls_back_and_is_not_cached() -> None:
    class Flaky(HashedBagEmbedder):
        failing = True

        def embed(self, texts: Sequence[str]) -> FloatArray:
            if self.failing and len(texts) == 1:
                raise RuntimeError("timeout")
            return super().embed(texts)

    embedder = Flaky()
    engine = HoloDeckEngine(WEB, embedder)
    first = engine.rank("web", "semantic")
    assert first.method == "bm25" and first.fallback and "timeout" in first.fallback
    embedder.failing = False
    second = engine.rank("web", "semantic")
    assert second.method == "semantic" and second.fallback is None


def test_fewer_vectors_than_tools_leave_the_rest_on_raw_bm25() -> None:
    class Short(HashedBagEmbedder):
        def embed(self, texts: Sequence[str]) -> FloatArray:
            return super().embed(texts)[:2] if len(texts) > 1 else super().embed(texts)

    ranking = HoloDeckEngine(WEB, Short()).rank("read the knowledge graph", "semantic")
    raw = BM25Index([t.search_text for t in WEB.tools]).raw_scores(
        tokenize("read the knowledge graph")
    )
    assert ranking.scores[2] == raw[2] and raw[2] > 1.0
    assert ranking.method == "semantic" and ranking.fallback and "1 tools" in ranking.fallback


def test_rankings_and_query_vectors_are_cached() -> None:
    embedder = TableEmbedder({}, default=[1.0, 2.0])
    engine = HoloDeckEngine(WEB, embedder)
    first = engine.rank("web", "hybrid")
    assert engine.rank("web", "hybrid") is first
    engine.rank("web", "semantic")
    assert embedder.calls == [[t.search_text for t in WEB.tools], ["web"]]


def test_prepare_uses_the_disk_cache(tmp_path: Path) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    first = Memo(HashedBagEmbedder())
    HoloDeckEngine(WEB, first, embedding_cache=cache).prepare()
    assert first.calls == 1 and cache.count("test-hashed-bag-64") == 3
    second = Memo(HashedBagEmbedder())
    engine = HoloDeckEngine(WEB, second, embedding_cache=cache)
    engine.prepare()
    assert second.calls == 0  # every tool vector came from disk
    fresh = HoloDeckEngine(WEB, HashedBagEmbedder())
    assert np.array_equal(
        engine.rank("web", "semantic").scores, fresh.rank("web", "semantic").scores
    )


def test_rrf_ties_follow_the_semantic_ranking() -> None:
    # Tool 0 is 1st by semantic and 2nd by BM25, tool 1 the reverse: equal fused scores.
    fused, order = rrf(np.array([0.9, 0.8, 0.1]), np.array([0.5, 1.0, 0.0]))
    assert fused[0] == fused[1] == 1.0
    assert order.tolist() == [0, 1, 2]
    fused, order = rrf(np.array([0.8, 0.9, 0.1]), np.array([1.0, 0.5, 0.0]))
    assert order.tolist() == [1, 0, 2]  # the semantic ranking's order, not the catalog's
    assert fused[2] == (2 / 63) / (1 / 61 + 1 / 62)


def test_sequential_sum_is_the_runtimes_left_to_right_sum() -> None:
    rng = np.random.default_rng(3)
    values = rng.standard_normal((384, 5)) * 1e3
    expected = []
    for column in range(5):
        total = 0.0
        for value in values[:, column].tolist():
            total += value
        expected.append(total)
    assert sequential_sum(values).tolist() == expected
    assert float(sequential_sum(values[:, 0])) == expected[0]  # one column: not pairwise either
    assert float(sequential_sum(values[:, :1])[0]) == expected[0]


def test_zero_vectors_score_zero() -> None:
    vectors = ToolVectors(np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([True, True]))
    assert vectors.cosine(np.array([3.0, 4.0])).tolist() == [0.0, 1.0]
    assert vectors.cosine(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]
    assert vectors.cosine(np.array([1.0, 2.0, 3.0])).tolist() == [0.0, 0.0]  # other dimension


def test_empty_catalog() -> None:
    engine = HoloDeckEngine(Catalog(tools=[], servers=[]), HashedBagEmbedder())
    for method in ("bm25", "semantic", "hybrid"):
        ranking = engine.rank("x", method)
        assert ranking.scores.size == 0 and ranking.order.size == 0


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown search method"):
        HoloDeckEngine(WEB, None).rank("x", "vector")


def test_prepare_in_a_worker_embeds_the_tools_once() -> None:
    """The TUI prepares in a worker while typing ranks: one tool batch, same scores for all."""

    class Slow(HashedBagEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.batches = 0
            self.started = threading.Event()
            self.release = threading.Event()

        def embed(self, texts: Sequence[str]) -> FloatArray:
            if len(texts) > 1:
                self.batches += 1
                self.started.set()
                self.release.wait(5)
            return super().embed(texts)

    embedder = Slow()
    engine = HoloDeckEngine(WEB, embedder)
    worker = threading.Thread(target=engine.prepare)
    worker.start()
    assert embedder.started.wait(5)
    assert not engine.prepared
    results: list[FloatArray] = []
    typing = threading.Thread(target=lambda: results.append(engine.rank("web", "semantic").scores))
    typing.start()
    embedder.release.set()
    worker.join(5)
    typing.join(5)
    assert engine.prepared and embedder.batches == 1
    assert np.array_equal(
        results[0], HoloDeckEngine(WEB, HashedBagEmbedder()).rank("web", "semantic").scores
    )


def test_the_caches_hold_a_bounded_amount_of_query_text() -> None:
    """Typing at a 64 KiB query ranks a new 64 KiB query per key: the caches keep them within
    their character budget (512 rankings and 2,048 query vectors of them held 160 MB)."""
    engine = HoloDeckEngine(WEB, TableEmbedder({}, default=[1.0, 2.0]))
    long = "search the web " * 4400  # 66,000 characters
    for n in range(80):
        engine.rank(long + str(n), "semantic")
    assert 0 < engine._rankings.held <= CACHE_QUERY_CHARS
    assert 0 < engine._queries.held <= CACHE_QUERY_CHARS
    last = engine.rank(long + "79", "semantic")
    assert engine.rank(long + "79", "semantic") is last  # the newest stay cached
