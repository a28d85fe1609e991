"""Drive HoloDeck's own filter (the oracle) over the kernel HoloDeck builds from a raw catalog.

The kernel comes from :func:`oracle.conversion.runtime_kernel` (HoloDeck's and Semantic Kernel's
own conversion of the servers' tools/list), never from holo-tune's reading of it. Embeddings come
from the same embedder holo-tune uses, through the ``generate_embeddings`` call the oracle makes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.config.filtering import ToolFiltering
from workbench.search.types import Embedder


class EmbeddingService:
    """What the oracle calls: ``await generate_embeddings(texts)`` -> an array, as SK returns."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    async def generate_embeddings(self, texts: list[str], **_: Any) -> np.ndarray:
        return np.asarray(self.embedder.embed(texts), dtype=np.float64)


def config_of(tf: Any, setting: ToolFiltering) -> Any:
    return tf.ToolFilterConfig(**{**setting.block(), "enabled": True})


@dataclass
class OracleRun:
    """What the oracle answered for one catalog."""

    #: Every indexed tool's full name -> the text the index searches and embeds, in index order.
    documents: dict[str, str] = field(default_factory=dict)
    rankings: dict[tuple[str, str], list[tuple[str, float]]] = field(default_factory=dict)
    selections: dict[tuple[str, int], set[str]] = field(default_factory=dict)


def run_oracle(
    tf: Any,
    kernel: Any,
    embedder: Embedder | None,
    queries: Sequence[str],
    methods: Sequence[str],
    settings: Sequence[ToolFiltering],
    usage: dict[str, int] | None = None,
    settings_per_query: int | None = None,
) -> OracleRun:
    """Full rankings for every (query, method) and selections for (query, setting number).

    With ``settings_per_query`` each query is run under that many settings, rotating through the
    list (keeps the slow oracle quick while every setting still meets many queries).
    """
    return asyncio.run(
        _run(tf, kernel, embedder, queries, methods, settings, usage or {}, settings_per_query)
    )


async def _run(
    tf: Any,
    kernel: Any,
    embedder: Embedder | None,
    queries: Sequence[str],
    methods: Sequence[str],
    settings: Sequence[ToolFiltering],
    usage: dict[str, int],
    settings_per_query: int | None,
) -> OracleRun:
    service = EmbeddingService(embedder) if embedder is not None else None
    manager = tf.ToolFilterManager(config_of(tf, ToolFiltering()), kernel, service)
    await manager.initialize()
    index = manager.index
    run = OracleRun()
    run.documents = {n: index._create_searchable_text(m) for n, m in index.tools.items()}
    for name, count in usage.items():
        manager.index.tools[name].usage_count = count
    everything = float("-inf")
    for q, query in enumerate(queries):
        for method in methods:
            results = await manager.index.search(
                query, len(index.tools), method, everything, embedding_service=service
            )
            run.rankings[(query, method)] = [(meta.full_name, score) for meta, score in results]
        chosen = range(len(settings))
        if settings_per_query is not None:
            chosen = range(q, q + settings_per_query)
        for s in chosen:
            number = s % len(settings)
            manager.config = config_of(tf, settings[number])
            run.selections[(query, number)] = set(await manager.filter_tools(query))
    return run
