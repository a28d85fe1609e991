"""Embedding caches: tool vectors on disk (a second start is instant), query vectors in memory.

The disk cache is one SQLite file (``workbench.cachefile``: WAL journal, one transaction per
batch, so concurrent holo-tune processes can share it and a crash never leaves half a row): rows
keyed by (model id, sha256 of the text). It is only an optimisation: if the file cannot be read or
written, the vectors are computed again and a warning is logged, never raised.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from workbench.cachefile import CacheFile, cache_home
from workbench.cachefile import text_key as text_key  # the key of a text, as before
from workbench.search.lru import LRU
from workbench.search.types import Embedder, FloatArray

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_id TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dtype TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, text_sha256)
) WITHOUT ROWID
"""


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/holo-tune/embeddings`` (``~/.cache`` when XDG_CACHE_HOME is unset)."""
    return cache_home(environ) / "embeddings"


def _pack(vector: FloatArray) -> tuple[str, bytes]:
    """Store float32 when that loses nothing (local models), float64 otherwise (JSON floats)."""
    narrow = vector.astype(np.float32)
    if np.array_equal(narrow.astype(np.float64), vector):
        return "f4", narrow.tobytes()
    return "f8", vector.astype(np.float64).tobytes()


def _unpack(dtype: str, blob: bytes) -> FloatArray:
    return np.frombuffer(blob, dtype=np.float32 if dtype == "f4" else np.float64).astype(np.float64)


class ToolEmbeddingCache:
    """Tool vectors on disk, keyed by (model id, text hash); safe for concurrent processes."""

    FILENAME = "embeddings.sqlite3"

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / self.FILENAME
        self._file = CacheFile(self.path, _SCHEMA, "embedding cache")
        #: Held while texts missing from the cache are embedded: a second caller on the same
        #: cache (a rebuilt engine of a grown catalog) waits, then finds those vectors stored.
        self.filling = threading.Lock()

    @classmethod
    def default(cls, environ: Mapping[str, str] | None = None) -> ToolEmbeddingCache:
        """The user's cache under XDG_CACHE_HOME."""
        return cls(default_cache_dir(environ))

    def get(self, model_id: str, keys: Sequence[str]) -> dict[str, FloatArray]:
        """The cached vectors among ``keys`` (text hashes); an unreadable file holds none."""
        rows = self._file.select(
            "SELECT text_sha256, dtype, vector FROM vectors "
            "WHERE model_id = ? AND text_sha256 IN ({marks})",
            [model_id],
            keys,
        )
        return {key: _unpack(dtype, blob) for key, dtype, blob in rows}

    def put(self, model_id: str, vectors: Mapping[str, FloatArray]) -> None:
        """Store ``vectors`` (text hash -> vector) in one transaction; errors are only logged."""
        if not vectors:
            return
        self._file.write(
            "INSERT OR REPLACE INTO vectors (model_id, text_sha256, dtype, vector) "
            "VALUES (?, ?, ?, ?)",
            [(model_id, key, *_pack(np.asarray(v))) for key, v in vectors.items()],
        )

    def count(self, model_id: str | None = None) -> int:
        """Rows stored (for one model, or all)."""
        return self._file.count("vectors", "model_id", model_id)


def embed_cached(
    embedder: Embedder, texts: Sequence[str], cache: ToolEmbeddingCache | None = None
) -> FloatArray:
    """Vectors of ``texts`` (one row each, in order), sending only the texts not on disk.

    ``cache`` defaults to the user's cache (:meth:`ToolEmbeddingCache.default`). Duplicate texts
    are sent once. A query-caching wrapper is bypassed so tool texts do not flood its LRU.
    """
    inner = embedder.inner if isinstance(embedder, CachingEmbedder) else embedder
    store = cache if cache is not None else ToolEmbeddingCache.default()
    if not texts:
        return np.zeros((0, 0), dtype=np.float64)
    keys = [text_key(t) for t in texts]
    with store.filling:
        found = store.get(inner.model_id, keys)
        found.update(_embed_missing(inner, store, keys, texts, found))
        if len({found[key].shape for key in keys}) > 1:
            # The model behind this id changed size (a re-pulled Ollama tag): start over.
            log.warning("embedding cache %s: stale vectors for %s", store.path, inner.model_id)
            found = _embed_missing(inner, store, keys, texts, {})
    return np.vstack([found[key] for key in keys])


def _embed_missing(
    embedder: Embedder,
    store: ToolEmbeddingCache,
    keys: Sequence[str],
    texts: Sequence[str],
    found: Mapping[str, FloatArray],
) -> dict[str, FloatArray]:
    """Embed the texts whose key is not in ``found`` (each distinct text once) and store them."""
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in found:
            missing.setdefault(key, text)
    if not missing:
        return {}
    fresh = embedder.embed(list(missing.values()))
    computed = {
        key: np.asarray(row, dtype=np.float64) for key, row in zip(missing, fresh, strict=True)
    }
    store.put(embedder.model_id, computed)
    return computed


class CachingEmbedder:
    """An Embedder that remembers the last ``maxsize`` texts it embedded (query vectors).

    Typing re-scores on every keystroke and users go back and forth between queries; a remembered
    query costs nothing. Only texts not remembered are sent, in one call to the inner embedder.
    """

    def __init__(self, inner: Embedder, maxsize: int = 1024) -> None:
        self.inner = inner
        self.maxsize = maxsize
        self._memory: LRU[str, FloatArray] = LRU(maxsize)

    @property
    def spec(self) -> str:
        return self.inner.spec

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed(self, texts: Sequence[str]) -> FloatArray:
        if not texts:
            return self.inner.embed([])
        known: dict[str, FloatArray] = {}
        for text in dict.fromkeys(texts):
            vector = self._memory.get(text)
            if vector is not None:
                known[text] = vector
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = self.inner.embed(missing)
            for text, row in zip(missing, fresh, strict=True):
                vector = np.asarray(row, dtype=np.float64)
                vector.flags.writeable = False
                self._memory.put(text, vector)
                known[text] = vector
        return np.vstack([known[t] for t in texts])

    def __repr__(self) -> str:
        return f"CachingEmbedder({self.inner!r})"
