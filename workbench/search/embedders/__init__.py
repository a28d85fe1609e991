"""Embedders for semantic and hybrid search (docs/design.md, Embeddings).

``--embedder SPEC`` / ``HOLO_TUNE_EMBEDDER``: ``openai:MODEL``, ``azure_openai:DEPLOYMENT``,
``ollama:MODEL``, ``local:NAME_OR_PATH`` or ``none``; by default, what HoloDeck would use at run
time (:func:`resolve_embedder`). Tool vectors are cached on disk (:func:`embed_cached`), query
vectors in memory (the embedder :func:`resolve_embedder` returns remembers them).
"""

from workbench.search.embedders.azure import AzureOpenAIEmbedder
from workbench.search.embedders.base import (
    ENV_VAR,
    FLAG,
    SPEC_FORMS,
    EmbedderSpec,
    EmbeddingError,
    parse_spec,
)
from workbench.search.embedders.cache import (
    CachingEmbedder,
    ToolEmbeddingCache,
    default_cache_dir,
    embed_cached,
)
from workbench.search.embedders.http import HttpSettings, RetryPolicy
from workbench.search.embedders.local import LocalEmbedder
from workbench.search.embedders.ollama import OllamaEmbedder
from workbench.search.embedders.openai import OpenAIEmbedder
from workbench.search.embedders.resolve import (
    EmbedderChoice,
    MissingCredentials,
    RuntimeEmbedding,
    build_embedder,
    resolve_embedder,
    runtime_embedding,
)

__all__ = [
    "ENV_VAR",
    "FLAG",
    "SPEC_FORMS",
    "AzureOpenAIEmbedder",
    "CachingEmbedder",
    "EmbedderChoice",
    "EmbedderSpec",
    "EmbeddingError",
    "HttpSettings",
    "LocalEmbedder",
    "MissingCredentials",
    "OllamaEmbedder",
    "OpenAIEmbedder",
    "RetryPolicy",
    "RuntimeEmbedding",
    "ToolEmbeddingCache",
    "build_embedder",
    "default_cache_dir",
    "embed_cached",
    "parse_spec",
    "resolve_embedder",
    "runtime_embedding",
]
