"""Tool vectors cached on disk, query vectors in memory: counted on a real HTTP server."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fake_embedding_server import OPENAI_KEY, FakeEmbeddingServer, vector_of

from workbench.search.embedders import (
    CachingEmbedder,
    HttpSettings,
    OllamaEmbedder,
    OpenAIEmbedder,
    ToolEmbeddingCache,
    default_cache_dir,
    embed_cached,
)
from workbench.search.embedders.cache import text_key

TOOLS = [f"tool_{i}: does thing number {i}" for i in range(7)]


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as running:
        yield running


def openai(server: FakeEmbeddingServer, model: str = "text-embedding-3-small") -> OpenAIEmbedder:
    return OpenAIEmbedder(
        model, api_key=OPENAI_KEY, base_url=f"{server.url}/v1", settings=HttpSettings(timeout=5)
    )


def texts_sent(server: FakeEmbeddingServer) -> list[str]:
    return [t for r in server.requests for t in r.body["input"]]


def test_second_call_sends_nothing(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    first = embed_cached(openai(server), TOOLS, cache)
    assert texts_sent(server) == TOOLS
    # A new process would build a new embedder and cache object: do the same.
    again = embed_cached(openai(server), TOOLS, ToolEmbeddingCache(tmp_path))
    assert server.count() == 1
    np.testing.assert_array_equal(first, again)
    assert again.dtype == np.float64
    np.testing.assert_array_equal(
        again, np.array([vector_of("text-embedding-3-small", t) for t in TOOLS])
    )


def test_only_missing_texts_are_sent_and_order_is_kept(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    embed_cached(openai(server), TOOLS[:4], cache)
    mixed = [TOOLS[5], TOOLS[0], TOOLS[6], TOOLS[5], TOOLS[2]]
    vectors = embed_cached(openai(server), mixed, cache)
    assert texts_sent(server) == [*TOOLS[:4], TOOLS[5], TOOLS[6]]  # duplicates sent once
    np.testing.assert_array_equal(
        vectors, np.array([vector_of("text-embedding-3-small", t) for t in mixed])
    )


def test_model_ids_do_not_collide(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    small = embed_cached(openai(server, "text-embedding-3-small"), TOOLS, cache)
    large = embed_cached(openai(server, "text-embedding-3-large"), TOOLS, cache)
    local_ollama = embed_cached(
        OllamaEmbedder("text-embedding-3-small", host=server.url), TOOLS, cache
    )
    assert server.count() == 3
    assert not np.array_equal(small, large)
    np.testing.assert_array_equal(
        large, np.array([vector_of("text-embedding-3-large", t) for t in TOOLS])
    )
    assert local_ollama.shape == small.shape
    assert cache.count() == 3 * len(TOOLS)


def test_vectors_round_trip_exactly(tmp_path: Path) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    exact32 = np.array([0.5, -0.25, 1.0], dtype=np.float64)  # float32 holds these exactly
    json_floats = np.array([0.1, -0.0069292834, 1 / 3], dtype=np.float64)
    cache.put("m", {"a": exact32, "b": json_floats})
    found = cache.get("m", ["a", "b", "c"])
    assert set(found) == {"a", "b"}
    np.testing.assert_array_equal(found["a"], exact32)
    np.testing.assert_array_equal(found["b"], json_floats)
    assert found["b"].dtype == np.float64


def test_an_unusable_cache_only_costs_requests(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cache = ToolEmbeddingCache(blocked / "embeddings")
    vectors = embed_cached(openai(server), TOOLS, cache)
    assert vectors.shape == (len(TOOLS), 8)
    embed_cached(openai(server), TOOLS, cache)
    assert server.count() == 2


def test_a_corrupt_cache_file_is_a_miss(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    (tmp_path / ToolEmbeddingCache.FILENAME).write_bytes(b"this is not sqlite" * 100)
    vectors = embed_cached(openai(server), TOOLS, ToolEmbeddingCache(tmp_path))
    assert vectors.shape == (len(TOOLS), 8)


def test_vectors_of_another_size_are_replaced(server: FakeEmbeddingServer, tmp_path: Path) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    embedder = openai(server)
    cache.put(embedder.model_id, {text_key(TOOLS[0]): np.ones(3)})  # an older model's size
    vectors = embed_cached(embedder, TOOLS, cache)
    np.testing.assert_array_equal(
        vectors, np.array([vector_of("text-embedding-3-small", t) for t in TOOLS])
    )
    assert cache.get(embedder.model_id, [text_key(TOOLS[0])])[text_key(TOOLS[0])].shape == (8,)


def test_default_cache_lives_under_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "holo-tune" / "embeddings"
    )
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir({}).parts[-3:] == (".cache", "holo-tune", "embeddings")


def test_an_environment_without_xdg_cache_home_caches_where_the_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dashboard handed a whole environment (a test's, without XDG_CACHE_HOME) read and
    wrote the user's ~/.cache, vectors another backend had left there among them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    agents = {"HOME": "/nonexistent-home", "BRAVE_API_KEY": "x"}
    assert default_cache_dir(agents) == tmp_path / "holo-tune" / "embeddings"
    assert default_cache_dir({"XDG_CACHE_HOME": "/elsewhere"}) == Path(
        "/elsewhere/holo-tune/embeddings"
    )


def test_embed_cached_defaults_to_the_xdg_cache(
    server: FakeEmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    embed_cached(openai(server), TOOLS)
    assert (tmp_path / "holo-tune" / "embeddings" / ToolEmbeddingCache.FILENAME).is_file()
    embed_cached(openai(server), TOOLS)
    assert server.count() == 1


def _writer(directory: str, worker: int) -> None:
    cache = ToolEmbeddingCache(directory)
    for round_ in range(20):
        rows = {
            text_key(f"{worker}-{round_}-{i}"): np.full(4, worker + i, dtype=np.float64)
            for i in range(10)
        }
        cache.put("shared-model", rows)


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_writer, args=(str(tmp_path), w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
    assert [p.exitcode for p in workers] == [0, 0, 0]
    assert ToolEmbeddingCache(tmp_path).count("shared-model") == 3 * 20 * 10
    with sqlite3.connect(tmp_path / ToolEmbeddingCache.FILENAME) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# -- query vectors in memory ------------------------------------------------------------------


def test_query_vectors_are_remembered(server: FakeEmbeddingServer) -> None:
    embedder = CachingEmbedder(openai(server), maxsize=2)
    first = embedder.embed(["weather in paris"])
    again = embedder.embed(["weather in paris"])
    assert server.count() == 1
    np.testing.assert_array_equal(first, again)
    assert embedder.spec == "openai:text-embedding-3-small"
    assert embedder.model_id == openai(server).model_id


def test_query_memory_is_least_recently_used(server: FakeEmbeddingServer) -> None:
    embedder = CachingEmbedder(openai(server), maxsize=2)
    for query in ["a", "b", "a", "c"]:  # "b" is the least recently used when "c" comes
        embedder.embed([query])
    assert texts_sent(server) == ["a", "b", "c"]
    embedder.embed(["a"])
    assert server.count() == 3
    embedder.embed(["b"])
    assert texts_sent(server)[-1] == "b"


def test_a_batch_sends_only_the_unknown_texts_once(server: FakeEmbeddingServer) -> None:
    embedder = CachingEmbedder(openai(server))
    embedder.embed(["a"])
    vectors = embedder.embed(["b", "a", "b"])
    assert texts_sent(server) == ["a", "b"]
    np.testing.assert_array_equal(
        vectors, np.array([vector_of("text-embedding-3-small", t) for t in ["b", "a", "b"]])
    )


def test_tool_embeddings_bypass_the_query_memory(
    server: FakeEmbeddingServer, tmp_path: Path
) -> None:
    embedder = CachingEmbedder(openai(server), maxsize=3)
    embed_cached(embedder, TOOLS, ToolEmbeddingCache(tmp_path))
    embedder.embed([TOOLS[0]])  # not remembered from the tool pass: sent again
    assert server.count() == 2
