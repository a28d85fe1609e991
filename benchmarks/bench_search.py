"""The ``holodeck`` engine's speed: per query, per knob change, and against a per-tool loop.

On bfcl (1,287 tools) and a deterministic 10,000-tool catalog made from bfcl's tools, for bm25,
semantic and hybrid: the median time to score and rank every tool for one query (embedding time
apart: tool and query vectors come from a fixed random matrix, computed before timing), the
median time to re-select after a knob change (cached ranking, new top_k / threshold /
always_include / top_n_used), and the ratio against a HoloDeck-style per-tool Python loop (written
here, run in the same process on the same queries, and checked to give the same scores).
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering
from workbench.search.engine import HoloDeckEngine
from workbench.search.selection import select
from workbench.search.types import FloatArray

BFCL = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets" / "bfcl"
SYNTHETIC_SIZE = 10_000
DIM = 384
QUERIES = 200
LOOP_QUERIES = {1_287: 10, SYNTHETIC_SIZE: 3}
RESELECT_RUNS = 2_000
TARGET_QUERY_S = {"bm25": {1_287: 0.002, SYNTHETIC_SIZE: 0.015}}
TARGET_RESELECT_S = 0.0005
TARGET_RATIO = 30.0
METHODS = ("bm25", "semantic", "hybrid")


class FixedEmbedder:
    """Vectors from a seeded random generator, one per distinct text (no model, no time)."""

    def __init__(self, dim: int = DIM, seed: int = 7) -> None:
        self._rng = np.random.default_rng(seed)
        self._dim = dim
        self._vectors: dict[str, FloatArray] = {}

    @property
    def spec(self) -> str:
        return "bench:fixed-random"

    @property
    def model_id(self) -> str:
        return f"bench-fixed-random-{self._dim}"

    def embed(self, texts: Sequence[str]) -> FloatArray:
        for text in texts:
            if text not in self._vectors:
                self._vectors[text] = self._rng.standard_normal(self._dim)
        return np.array([self._vectors[t] for t in texts], dtype=np.float64)


def bfcl_catalog() -> tuple[Catalog, list[str]]:
    import json

    agent = load_agent(BFCL / "agent.yaml")
    catalog = load_catalog(agent, catalog_file=BFCL / "catalog.json")
    lines = (BFCL / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["query"] for line in lines[:: max(1, len(lines) // QUERIES)]]
    return catalog, queries[:QUERIES]


def synthetic_catalog(base: Catalog, size: int = SYNTHETIC_SIZE, seed: int = 11) -> Catalog:
    """``size`` tools: bfcl's, renamed per copy, each description spliced with another's words."""
    rng = np.random.default_rng(seed)
    tools: list[Tool] = []
    sources = base.tools
    for index in range(size):
        tool = sources[index % len(sources)]
        other = sources[int(rng.integers(len(sources)))]
        words = other.description.split()
        start = int(rng.integers(max(1, len(words))))
        name = f"{tool.name}_{index // len(sources)}"
        description = f"{tool.description} {' '.join(words[start : start + 12])}"
        tools.append(
            Tool(
                full_name=f"synth-{name}",
                plugin="synth",
                name=name,
                description=description,
                parameters=tool.parameters,
                kind="mcp",
            )
        )
    tools.sort(key=lambda t: t.name)
    return Catalog(tools=tools, servers=[ServerStatus("synth", "snapshot", state="snapshot")])


# -- the reference: HoloDeck's per-tool loop, as the runtime runs it -------------------------
_TOKEN = re.compile(r"[a-zA-Z0-9]+")


class LoopReference:
    """Per tool, per query: tokenize, count, sum in Python (``holodeck.lib.tool_filter.index``)."""

    def __init__(self, catalog: Catalog, vectors: FloatArray | None) -> None:
        self.texts = [tool.search_text for tool in catalog.tools]
        docs = [_TOKEN.findall(text.lower()) for text in self.texts]
        self.avgdl = sum(len(d) for d in docs) / len(docs)
        df: dict[str, int] = {}
        for doc in docs:
            for term in set(doc):
                df[term] = df.get(term, 0) + 1
        n = len(docs)
        self.idf = {t: math.log((n - c + 0.5) / (c + 0.5) + 1) for t, c in df.items()}
        self.vectors = [list(v) for v in vectors] if vectors is not None else None

    def bm25_one(self, query: str, text: str) -> float:
        query_tokens = _TOKEN.findall(query.lower())
        doc = _TOKEN.findall(text.lower())
        if not query_tokens or not doc:
            return 0.0
        tf: dict[str, int] = {}
        for token in doc:
            tf[token] = tf.get(token, 0) + 1
        score = 0.0
        for term in query_tokens:
            if term in tf:
                f = tf[term]
                denominator = f + 1.5 * (1 - 0.75 + 0.75 * len(doc) / self.avgdl)
                score += self.idf.get(term, 0.0) * (f * 2.5 / denominator)
        return score

    def bm25(self, query: str) -> list[float]:
        raw = [self.bm25_one(query, text) for text in self.texts]
        top = max(raw, default=1.0)
        return [s / top for s in raw] if top > 0 else raw

    def semantic(self, query_vector: Sequence[float]) -> list[float]:
        assert self.vectors is not None
        q = list(query_vector)
        norm_q = math.sqrt(sum(a * a for a in q))
        out = []
        for v in self.vectors:
            dot = sum(a * b for a, b in zip(q, v, strict=False))
            norm_v = math.sqrt(sum(b * b for b in v))
            out.append(0.0 if norm_q == 0 or norm_v == 0 else dot / (norm_q * norm_v))
        return out

    def hybrid(self, query: str, query_vector: Sequence[float]) -> list[float]:
        names = list(range(len(self.texts)))
        sem = sorted(zip(names, self.semantic(query_vector), strict=True), key=lambda x: -x[1])
        bm = sorted(zip(names, self.bm25(query), strict=True), key=lambda x: -x[1])
        fused: dict[int, float] = {}
        for ranking in (sem, bm):
            for rank, (name, _) in enumerate(ranking):
                fused[name] = fused.get(name, 0.0) + 1 / (60 + rank + 1)
        top = max(fused.values())
        return [fused[i] / top for i in names]


def _median(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _per_query(fn: Callable[[str], Any], queries: Sequence[str]) -> float:
    times = []
    for query in queries:
        start = time.perf_counter()
        fn(query)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_catalog(label: str, catalog: Catalog, queries: Sequence[str]) -> list[dict[str, Any]]:
    size = len(catalog)
    embedder = FixedEmbedder()
    engine = HoloDeckEngine(catalog, embedder)
    engine.prepare()  # tool vectors: not timed
    vectors = embedder.embed([tool.search_text for tool in catalog.tools])
    for query in queries:  # query vectors: not timed (the engine keeps them)
        engine.compute(query, "semantic")
    loop = LoopReference(catalog, vectors)
    loop_queries = list(queries[: LOOP_QUERIES.get(size, 3)])
    rows: list[dict[str, Any]] = []
    for method in METHODS:
        ours = _per_query(lambda q, m=method: engine.compute(q, m), queries)

        def reference(q: str, m: str = method) -> list[float]:
            qv = embedder.embed([q])[0]
            if m == "bm25":
                return loop.bm25(q)
            return loop.semantic(qv) if m == "semantic" else loop.hybrid(q, qv)

        theirs = _per_query(reference, loop_queries)
        agree = all(
            np.allclose(engine.compute(q, method).scores, reference(q), rtol=0, atol=1e-9)
            for q in loop_queries[:2]
        )
        target = TARGET_QUERY_S.get(method, {}).get(size)
        ratio = theirs / ours
        rows.append(
            {
                "name": f"{label} ({size} tools) {method}: per query",
                "median_s": ours,
                "loop_median_s": theirs,
                "ratio": round(ratio, 1),
                "target": (f"<{target * 1000:g} ms, " if target else "") + f">={TARGET_RATIO:g}x",
                "same_scores": agree,
                "ok": agree and ratio >= TARGET_RATIO and (target is None or ours < target),
            }
        )
    rows.append(reselect_row(label, catalog, engine, queries[0]))
    return rows


def reselect_row(
    label: str, catalog: Catalog, engine: HoloDeckEngine, query: str
) -> dict[str, Any]:
    """A knob change: the same cached ranking, a new setting, a new selection."""
    ranking = engine.rank(query, "hybrid")
    names = catalog.names()
    settings = [
        ToolFiltering(
            top_k=1 + i % 20,
            similarity_threshold=(i % 10) / 10,
            always_include=(names[(i * 37) % len(names)].split("-", 1)[1],) if i % 3 else (),
            always_include_top_n_used=i % 4,
            search_method="hybrid",
        )
        for i in range(50)
    ]
    usage = np.zeros(len(catalog), dtype=np.int64)
    usage[:: max(1, len(catalog) // 30)] = 3
    counter = iter(range(10**9))

    def once() -> None:
        i = next(counter)
        select(engine.rank(query, "hybrid"), settings[i % 50], catalog, usage if i % 2 else None)

    select(ranking, settings[0], catalog)  # builds the catalog's name index once
    median = _median(once, RESELECT_RUNS)
    return {
        "name": f"{label} ({len(catalog)} tools) re-select after a knob change",
        "median_s": median,
        "target": f"<{TARGET_RESELECT_S * 1000:g} ms",
        "ok": median < TARGET_RESELECT_S,
    }


def run() -> list[dict[str, Any]]:
    if not (BFCL / "catalog.json").is_file():
        return [{"name": "search", "target": "tests/data/datasets/bfcl", "ok": False}]
    bfcl, queries = bfcl_catalog()
    rows = bench_catalog("bfcl", bfcl, queries)
    rows += bench_catalog("synthetic", synthetic_catalog(bfcl), queries)
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
