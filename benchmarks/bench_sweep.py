"""The full sweep on bfcl (2,351 cases x 1,287 tools): every method x top_k 1..50 x threshold
0.00..1.00, as ``tune`` runs it.

Scoring ranks every case once per method with a fresh engine (no ranking cache), as the runtime
would score them: bfcl's agent has no embedding service, so semantic and hybrid are HoloDeck's
BM25 fallback. The sweep then derives all 15,150 settings from those rankings. The reference is
the obvious way: the runtime's selection run per case for every setting, timed on a sample of
settings over the same cached rankings and extrapolated (ratio = reference / sweep).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from workbench.config.filtering import SEARCH_METHODS, ToolFiltering
from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.evaluate.runs import score_methods, tune_cases
from workbench.evaluate.sweep import THRESHOLDS, TOP_KS, sweep
from workbench.evaluate.tuner import Budget
from workbench.search.engine import HoloDeckEngine
from workbench.search.selection import select
from workbench.workspace import open_workspace

DATASET = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets" / "bfcl"
TARGET_S = 10.0
RUNS = 3
REFERENCE_SETTINGS = 6


def run() -> list[dict[str, Any]]:
    if not (DATASET / "cases.jsonl").is_file():
        return [{"name": "bfcl sweep", "skipped": "tests/data/datasets/bfcl not found"}]
    ws = open_workspace(DATASET / "agent.yaml", catalog_file=DATASET / "catalog.json")
    cases = resolve_cases(load_cases(DATASET / "cases.jsonl"), ws.catalog)
    base = ToolFiltering(enabled=True, always_include_top_n_used=0)
    size = len(ws.catalog)

    score_times, sweep_times = [], []
    for _ in range(RUNS):
        engine = HoloDeckEngine(ws.catalog, ws.embedder.embedder)
        started = time.perf_counter()
        scores = score_methods(engine, cases, size, methods=SEARCH_METHODS)
        scored = time.perf_counter()
        sweep(scores, cases, ws.tokens, base, ws.catalog)
        sweep_times.append(time.perf_counter() - scored)
        score_times.append(scored - started)
    score_s, sweep_s = statistics.median(score_times), statistics.median(sweep_times)
    total = score_s + sweep_s

    reference = _reference_per_setting(ws, cases, base) * len(SEARCH_METHODS) * TOP_KS.size
    reference *= THRESHOLDS.size

    started = time.perf_counter()
    tune_cases(ws.engine, ws.catalog, ws.tokens, cases, base, Budget(), folds=5)
    tune_s = time.perf_counter() - started

    label = f"bfcl {len(cases)} cases x {size} tools"
    return [
        {"name": f"{label}: rank once per method (3)", "median_s": score_s},
        {"name": f"{label}: sweep 3 x 50 x 101 settings", "median_s": sweep_s},
        {
            "name": f"{label}: full sweep (rank + sweep)",
            "median_s": total,
            "reference_s": reference,
            "ratio": reference / total,
            "target": f"< {TARGET_S:g} s",
            "ok": total < TARGET_S,
        },
        {"name": f"{label}: tune (sweep, 5-fold, front)", "median_s": tune_s},
    ]


def _reference_per_setting(ws: Any, cases: Any, base: ToolFiltering) -> float:
    """Seconds to measure one setting by running the selection per case (rankings cached)."""
    rankings = [ws.engine.rank(case.query, "bm25") for case in cases.cases]
    rng = np.random.default_rng(0)
    times = []
    for _ in range(REFERENCE_SETTINGS):
        setting = base.with_(
            search_method="bm25",
            top_k=int(rng.integers(1, 51)),
            similarity_threshold=float(THRESHOLDS[int(rng.integers(0, 101))]),
        )
        started = time.perf_counter()
        for case, ranking in zip(cases.cases, rankings, strict=True):
            chosen = select(ranking, setting, ws.catalog).indices
            ws.tokens.total(chosen)
            any(i in chosen for group in case.groups for i in group)
        times.append(time.perf_counter() - started)
    return statistics.median(times)
