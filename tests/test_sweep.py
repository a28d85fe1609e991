"""The sweep's figures equal eval's (the runtime's selection run per case), to the last bit.

First exhaustively on small random catalogs full of ties and always-sent tools, then on a sample of
every data set in tests/data/datasets through the real workspace (catalog, engine, tokenizer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracle.catalogs import DATASET_NAMES
from provided import LOCAL_EXTRA

from workbench.catalog.build import mcp_tools
from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.evaluate.metrics import evaluate
from workbench.evaluate.runs import score_methods
from workbench.evaluate.sweep import (
    THRESHOLDS,
    TOP_KS,
    SweepResult,
    pareto_front,
    score_cases,
    sweep,
    threshold_index,
)
from workbench.search.types import Ranking
from workbench.tokens import TokenTable
from workbench.workspace import Workspace, open_workspace

DATASETS = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets"


def _sets() -> list[str]:
    """Every data set of the repository (a data set that is gone fails its case)."""
    return sorted(DATASET_NAMES)


# ------------------------------------------------------------------------- synthetic, exhaustive


class TableRanker:
    """Scores from a table, one row per query (a fake: the sweep's arithmetic is under test)."""

    def __init__(self, scores: dict[str, np.ndarray]) -> None:
        self.scores = scores

    def rank(self, query: str, method: str) -> Ranking:
        s = self.scores[query]
        return Ranking(query, method, method, s, np.argsort(-s, kind="stable").astype(np.int64))


def _random_world(
    seed: int, size: int, cases: int
) -> tuple[Catalog, TokenTable, TableRanker, CaseSet]:
    rng = np.random.default_rng(seed)
    listing: list[dict[str, Any]] = [{"name": f"t{i:02d}", "description": "x"} for i in range(size)]
    catalog = Catalog(tools=mcp_tools("s", listing)[0], servers=[])
    tokens = TokenTable("o200k_base", True, "gpt-4o", rng.integers(5, 200, size), overhead=12)
    # scores on a coarse grid: many ties, and many exactly on a threshold
    table = {
        f"q{c}": np.round(rng.random(size) * 10) / 10 * (rng.random(size) > 0.3)
        for c in range(cases)
    }
    from workbench.evaluate.cases import Case

    raw = [
        Case(q, tuple(f"s-t{i:02d}" for i in rng.choice(size, rng.integers(1, 4), replace=False)))
        for q in table
    ]
    return catalog, tokens, TableRanker(table), resolve_cases(raw, catalog)


FIXED_PARTS = [
    {"always_include": (), "always_include_top_n_used": 0},
    {"always_include": (), "always_include_top_n_used": 3},
    {"always_include": ("t05", "s-t07", "t05"), "always_include_top_n_used": 0},
    {"always_include": ("t39", "nope"), "always_include_top_n_used": 2},
]


@pytest.mark.parametrize("fixed", FIXED_PARTS)
@pytest.mark.parametrize(("seed", "size"), [(1, 40), (2, 12)])
def test_every_grid_point_equals_eval(fixed: dict[str, Any], seed: int, size: int) -> None:
    catalog, tokens, ranker, cases = _random_world(seed, size, cases=6)
    base = ToolFiltering(enabled=True, search_method="bm25", **fixed)
    scores = score_cases(ranker, cases, "bm25", size)
    result = sweep([scores], cases, tokens, base, catalog)
    ms = result.methods["bm25"]
    for k in TOP_KS.tolist():
        near_edge = k <= 6 or size - 3 <= k <= size + 1
        for t in range(0, THRESHOLDS.size, 1 if near_edge else 9):
            setting = result.setting("bm25", k, t)
            want = evaluate(ranker, catalog, tokens, cases, setting).metrics
            assert ms.metrics(k, t, result.tokens_all) == want, (k, t)


def test_threshold_grid_is_the_decimal_floats() -> None:
    assert THRESHOLDS[30] == 0.3 and THRESHOLDS[7] == 0.07 and THRESHOLDS[100] == 1.0
    assert threshold_index(0.3) == 30 and threshold_index(0.305) is None


def test_folds_partition_the_sums() -> None:
    catalog, tokens, ranker, cases = _random_world(3, 30, cases=9)
    base = ToolFiltering(enabled=True, search_method="bm25", always_include_top_n_used=1)
    scores = score_cases(ranker, cases, "bm25", 30)
    folds = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2])
    whole = sweep([scores], cases, tokens, base, catalog).methods["bm25"]
    split = sweep([scores], cases, tokens, base, catalog, folds=folds).methods["bm25"]
    assert split.recall.shape[0] == 3
    assert np.array_equal(split.recall.sum(axis=0), whole.recall[0])
    held = cases.subset([1, 4, 7])
    want = evaluate(ranker, catalog, tokens, held, base.with_(top_k=4)).metrics
    assert split.metrics(4, 30, whole and tokens.all, folds=[1]) == want


def test_the_front_is_monotone_and_undominated() -> None:
    catalog, tokens, ranker, cases = _random_world(4, 40, cases=8)
    base = ToolFiltering(enabled=True, search_method="bm25", always_include_top_n_used=0)
    result = sweep([score_cases(ranker, cases, "bm25", 40)], cases, tokens, base, catalog)
    front = pareto_front(result)
    assert front[0].setting.top_k == 1 or front[0].tokens == 0
    tokens_seen = [p.tokens for p in front]
    recalls = [p.recall for p in front]
    assert tokens_seen == sorted(tokens_seen) and recalls == sorted(recalls)
    assert len(set(recalls)) == len(recalls)
    recall, _, mean_tokens = result.methods["bm25"].means()
    for p in front:  # nothing is cheaper and at least as good
        cheaper = mean_tokens < p.tokens - 1e-9
        assert not (recall[cheaper] >= p.recall - 1e-12).any()


# ------------------------------------------------------------------------------- the data sets


def _sample(cases: CaseSet, n: int) -> CaseSet:
    step = max(1, len(cases) // n)
    return cases.subset(range(0, len(cases), step))


def _workspace(name: str, embedder: str | None = None) -> Workspace:
    folder = DATASETS / name
    return open_workspace(
        folder / "agent.yaml", catalog_file=folder / "catalog.json", embedder_spec=embedder
    )


def _settings(result: SweepResult, method: str, seed: int) -> Iterator[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    yield from [(1, 0), (5, 30), (50, 0), (3, 100)]
    for _ in range(12):
        yield int(rng.integers(1, 51)), int(rng.integers(0, 101))


@pytest.mark.parametrize("name", _sets())
def test_sweep_equals_eval_on_each_data_set(name: str) -> None:
    ws = _workspace(name)
    cases = _sample(resolve_cases(load_cases(DATASETS / name / "cases.jsonl"), ws.catalog), 60)
    first = ws.catalog.tools[0].name
    bases = [
        ToolFiltering(enabled=True, search_method="bm25", always_include_top_n_used=0),
        ToolFiltering(
            enabled=True,
            search_method="bm25",
            always_include=(first, ws.catalog.tools[-1].full_name),
            always_include_top_n_used=2,
        ),
    ]
    scores = score_methods(ws.engine, cases, len(ws.catalog), methods=["bm25"], always_include=2)
    for b, base in enumerate(bases):
        result = sweep(scores, cases, ws.tokens, base, ws.catalog)
        for k, t in _settings(result, "bm25", seed=b):
            setting = result.setting("bm25", k, t)
            want = evaluate(ws.engine, ws.catalog, ws.tokens, cases, setting).metrics
            assert result.metrics_of(setting) == want, (name, base, k, t)


@LOCAL_EXTRA
def test_every_method_with_real_embeddings(tmp_path: Path) -> None:
    """stackone's servers that its cases use and a few others (~50 tools, to embed quickly)."""
    full = json.loads((DATASETS / "stackone" / "catalog.json").read_text(encoding="utf-8"))
    keep = ("crm", "stackone", "documents", "iam", "messaging")
    part = {**full, "servers": {k: v for k, v in full["servers"].items() if k in keep}}
    snapshot = tmp_path / "catalog.json"
    snapshot.write_text(json.dumps(part), encoding="utf-8")
    ws = open_workspace(
        DATASETS / "stackone" / "agent.yaml",
        catalog_file=snapshot,
        embedder_spec="local:all-MiniLM-L6-v2",
    )
    all_cases = resolve_cases(load_cases(DATASETS / "stackone" / "cases.jsonl"), ws.catalog)
    cases = _sample(all_cases, 25)
    scores = score_methods(ws.engine, cases, len(ws.catalog), always_include=1)
    assert {s.method: s.scored_by for s in scores} == {
        "semantic": "semantic",
        "bm25": "bm25",
        "hybrid": "hybrid",
    }
    base = ToolFiltering(
        enabled=True, always_include=("crm_list_contacts",), always_include_top_n_used=1
    )
    result = sweep(scores, cases, ws.tokens, base, ws.catalog)
    for method in ("semantic", "hybrid"):
        for k, t in [(1, 0), (5, 30), (8, 45), (20, 60), (50, 20), (12, 90)]:
            setting = result.setting(method, k, t)
            want = evaluate(ws.engine, ws.catalog, ws.tokens, cases, setting).metrics
            assert result.metrics_of(setting) == want, (method, k, t)
