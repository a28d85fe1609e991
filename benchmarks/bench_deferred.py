"""The search-tool tuners on bfcl (2,351 cases x 1,287 tools, one server), as ``tune --runtime
anthropic --max-tokens 9000`` and ``compare --runtimes`` run them.

The greedy that chooses what stays loaded walks its path on every case at a 9,000-token cap; its
reference is the plain greedy (tests/test_greedy_oracle.py), which scores every unit again at
every step, on the same rankings in the same process (ratio = reference / greedy; both walk the
same path, which the row checks). Then the whole anthropic tuner (every variant, the folds, the
recurrence bars) and PizzaPi's, timed once each: no target, the figure says what a user waits.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from tests.test_greedy_oracle import oracle_path
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.evaluate.deferred_tune import _Proxy, greedy_path, tune_deferred
from workbench.runtimes import get_runtime
from workbench.runtimes.pizzapi.tune import tune_pizzapi
from workbench.workspace import open_workspace

DATASET = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets" / "bfcl"
RUNS = 3
CAP = 9000.0
#: The greedy must walk its path at least this many times faster than the plain one.
TARGET_RATIO = 4.0


def run() -> list[dict[str, Any]]:
    if not (DATASET / "cases.jsonl").is_file():
        return [{"name": "bfcl deferred greedy", "skipped": "tests/data/datasets/bfcl not found"}]
    ws = open_workspace(DATASET / "agent.yaml", catalog_file=DATASET / "catalog.json")
    cases = resolve_cases(load_cases(DATASET / "cases.jsonl"), ws.catalog)
    items = cases.cases
    anthropic = get_runtime("anthropic")
    proxy = _Proxy.build(ws.catalog, ws.tokens, items, "bm25", runtime=anthropic)
    args = (proxy, items, list(range(len(items))), anthropic.units(ws.catalog), "bm25", 5, CAP)
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        path = greedy_path(*args)
        times.append(time.perf_counter() - started)
    greedy_s = statistics.median(times)
    started = time.perf_counter()
    same = oracle_path(*args) == path
    reference_s = time.perf_counter() - started
    label = f"bfcl {len(items)} cases x {len(ws.catalog)} tools"
    ratio = reference_s / greedy_s
    rows: list[dict[str, Any]] = [
        {
            "name": f"{label}: deferred greedy path ({len(path) - 1} steps)",
            "median_s": greedy_s,
            "reference_s": reference_s,
            "ratio": ratio,
            "target": f">= {TARGET_RATIO:g}x the plain greedy, the same path",
            "ok": same and ratio >= TARGET_RATIO,
        }
    ]
    budget = Budget(max_tokens=int(CAP))
    started = time.perf_counter()
    tune_deferred(
        get_runtime("anthropic"),
        ws.catalog,
        ws.tokens,
        cases,
        budget,
        tokens_all=int(ws.tokens.all),
    )
    rows.append(
        {"name": f"{label}: tune anthropic within 9,000", "median_s": time.perf_counter() - started}
    )
    started = time.perf_counter()
    tune_pizzapi(ws.catalog, ws.tokens, cases, budget, tokens_all=int(ws.tokens.all))
    rows.append(
        {"name": f"{label}: tune pizzapi within 9,000", "median_s": time.perf_counter() - started}
    )
    return rows
