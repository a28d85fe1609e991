"""Every tool-search engine at its defaults on bfcl (2,351 cases x 1,287 tools), and ``compare``.

Per engine: the median time of one query (``run(query)`` of a strategy engine; HoloDeck's
``rank`` and the runtime's selection at ``ToolFiltering(enabled=True)``, which is BM25 here: the
agent has no embedding service), each query timed on its own, 500 queries spread over the cases
after one warm-up; and the time to build the engine for the catalog. Then ``compare`` (every
engine at its defaults, its grid and its held-out best, HoloDeck tuned) on a slice of the cases,
as the dashboard's Compare-engines view runs it. No target: the numbers are reported as measured.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.evaluate.compare import compare
from workbench.search.engine import HoloDeckEngine
from workbench.search.selection import select
from workbench.search.strategies import ENGINES, AnthropicParams, build_strategy
from workbench.workspace import Workspace, open_workspace

DATASET = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets" / "bfcl"
#: Queries timed per engine, evenly spread over the cases (medians settle well before that).
QUERIES = 500
#: Every n-th case for the compare run (bfcl: 236 cases).
SLICE = 10
RUNS = 3


def _per_query(search: Callable[[str], Any], queries: list[str]) -> float:
    """Median seconds of one ``search(query)`` over ``queries`` (one warm-up first)."""
    search(queries[0])
    times = []
    for query in queries:
        started = time.perf_counter()
        search(query)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _engines(ws: Workspace) -> dict[str, Callable[[], Callable[[str], Any]]]:
    """Engine name -> a builder of its ``search(query)`` at its defaults."""
    default = ToolFiltering(enabled=True)

    def holodeck() -> Callable[[str], Any]:
        engine = HoloDeckEngine(ws.catalog, ws.embedder.embedder)
        return lambda q: select(engine.rank(q, default.search_method), default, ws.catalog)

    def strategy(name: str, params: Any = None) -> Callable[[], Callable[[str], Any]]:
        def build() -> Callable[[str], Any]:
            built = build_strategy(
                name, ws.catalog, ws.tokens, params, embedder=ws.embedder.embedder
            )
            return built.run

        return build

    out: dict[str, Callable[[], Callable[[str], Any]]] = {"holodeck": holodeck}
    for name in ENGINES:
        out[name] = strategy(name)
        if name == "anthropic":
            out["anthropic regex"] = strategy(name, AnthropicParams(variant="regex"))
    return out


def run() -> list[dict[str, Any]]:
    if not (DATASET / "cases.jsonl").is_file():
        return [{"name": "bfcl strategies", "skipped": "tests/data/datasets/bfcl not found"}]
    ws = open_workspace(DATASET / "agent.yaml", catalog_file=DATASET / "catalog.json")
    cases = resolve_cases(load_cases(DATASET / "cases.jsonl"), ws.catalog)
    step = max(len(cases) // QUERIES, 1)
    queries = [case.query for case in cases.cases[::step]][:QUERIES]
    label = f"bfcl {len(cases)} cases x {len(ws.catalog)} tools"
    rows: list[dict[str, Any]] = []
    for name, build in _engines(ws).items():
        started = time.perf_counter()
        search = build()
        built = time.perf_counter() - started
        per_query = _per_query(search, queries)
        rows.append(
            {
                "name": f"{label}: {name} defaults, per query",
                "median_s": per_query,
                "build_s": built,
                "queries_per_s": round(1 / per_query) if per_query else None,
            }
        )
    part = CaseSet(cases=cases.cases[::SLICE])
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        compare(ws, part)
        times.append(time.perf_counter() - started)
    rows.append(
        {
            "name": f"bfcl {len(part)} cases (every {SLICE}th): compare, every engine",
            "median_s": statistics.median(times),
            "runs": RUNS,
        }
    )
    return rows
