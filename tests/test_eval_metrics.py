"""Metrics against hand-computed values on a five-tool catalog (rankings given by hand)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from workbench.catalog.build import mcp_tools
from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import Case, resolve_cases
from workbench.evaluate.metrics import evaluate
from workbench.search.engine import HoloDeckEngine
from workbench.search.types import Ranking
from workbench.tokens import TokenTable, token_table

NAMES = ["t0", "t1", "t2", "t3", "t4"]
CATALOG = Catalog(
    tools=mcp_tools("s", [{"name": n, "description": f"tool {n}"} for n in NAMES])[0], servers=[]
)
#: Made-up counts: tool i costs 10 * (i + 1) tokens, plus 7 once per request.
TOKENS = TokenTable(
    encoding="o200k_base",
    exact=True,
    model="gpt-4o",
    per_tool=np.array([10, 20, 30, 40, 50]),
    overhead=7,
)
SCORES = np.array([0.2, 1.0, 0.6, 0.55, 0.0])


class HandRanker:
    """Every query ranks the same, by SCORES (a fake: this tests the arithmetic, not scoring)."""

    def rank(self, query: str, method: str) -> Ranking:
        order = np.argsort(-SCORES, kind="stable").astype(np.int64)
        return Ranking(query, method, method, SCORES, order)


def _cases(*expected: tuple[str, ...], category: str | None = None) -> Any:
    return resolve_cases([Case(f"q{i}", e, category) for i, e in enumerate(expected)], CATALOG)


def _setting(**changes: Any) -> ToolFiltering:
    base = {"enabled": True, "search_method": "bm25", "always_include_top_n_used": 0}
    return ToolFiltering(**{**base, **changes})


def test_two_cases_by_hand() -> None:
    # order is t1 t2 t3 t0 t4; top_k 2, threshold 0.5 -> {t1, t2} for every query
    report = evaluate(
        HandRanker(), CATALOG, TOKENS, _cases(("t3",), ("t1", "t4")), _setting(top_k=2)
    )
    a, b = report.per_case
    assert set(a.selected) == {1, 2} and a.tokens == 20 + 30 + 7
    assert (a.hit, a.recall, a.top1, a.rank_of_first, a.mrr) == (False, 0.0, False, 3, 1 / 3)
    assert (b.hit, b.recall, b.top1, b.rank_of_first, b.mrr) == (True, 0.5, True, 1, 1.0)
    assert b.missed == ("t4",)
    m = report.metrics
    assert (m.cases, m.hit, m.recall, m.top1) == (2, 0.5, 0.25, 0.5)
    assert m.mrr == pytest.approx((1 / 3 + 1) / 2)
    assert m.tokens_selected_mean == 57 and m.tokens_all == 150 + 7
    assert m.token_reduction == pytest.approx(1 - 57 / 157)
    assert [r.case.query for r in report.misses] == ["q0", "q1"]


def test_always_include_takes_a_slot_and_counts_as_sent() -> None:
    # t4 always in: one slot left, filled by t1 (the best); t4 is never ranked above 0
    report = evaluate(
        HandRanker(),
        CATALOG,
        TOKENS,
        _cases(("t3",), ("t1", "t4")),
        _setting(top_k=2, always_include=("t4",)),
    )
    a, b = report.per_case
    assert set(a.selected) == {4, 1} and a.tokens == 50 + 20 + 7
    assert b.recall == 1.0 and b.hit
    assert report.metrics.recall == 0.5


def test_threshold_cuts_before_top_k() -> None:
    report = evaluate(
        HandRanker(), CATALOG, TOKENS, _cases(("t2",)), _setting(top_k=5, similarity_threshold=0.0)
    )
    assert set(report.per_case[0].selected) == {0, 1, 2, 3, 4}
    cut = evaluate(
        HandRanker(), CATALOG, TOKENS, _cases(("t2",)), _setting(top_k=5, similarity_threshold=0.7)
    )
    assert cut.per_case[0].selected == (1,) and cut.metrics.recall == 0.0


class SilentRanker:
    """A query that shares no word with any tool: every score 0."""

    def rank(self, query: str, method: str) -> Ranking:
        return Ranking(query, method, method, np.zeros(5), np.arange(5, dtype=np.int64))


def test_nothing_sent_costs_nothing() -> None:
    report = evaluate(SilentRanker(), CATALOG, TOKENS, _cases(("t0",)), _setting(top_k=3))
    only = report.per_case[0]
    assert only.selected == () and only.tokens == 0 and not only.hit
    assert only.rank_of_first == 1 and only.top1  # ties keep catalog order: t0 ranks first


def test_disabled_filtering_sends_everything() -> None:
    report = evaluate(
        HandRanker(), CATALOG, TOKENS, _cases(("t4",)), _setting(enabled=False, top_k=1)
    )
    assert report.metrics.recall == 1.0 and report.metrics.token_reduction == 0.0


def test_per_category_means() -> None:
    cases = resolve_cases(
        [
            Case("a", ("t1",), "x"),
            Case("b", ("t3",), "x"),
            Case("c", ("t2",), "y"),
            Case("d", ("t2",)),
        ],
        CATALOG,
    )
    report = evaluate(HandRanker(), CATALOG, TOKENS, cases, _setting(top_k=2))
    assert list(report.by_category) == ["x", "y"]
    assert report.by_category["x"].recall == 0.5 and report.by_category["x"].cases == 2
    assert report.by_category["y"].recall == 1.0


def test_eval_json_shape() -> None:
    report = evaluate(HandRanker(), CATALOG, TOKENS, _cases(("t3",)), _setting(top_k=2))
    data = report.to_json(CATALOG)
    assert set(data) == {"cases", "setting", "metrics", "ci95", "per_case"}
    assert data["ci95"]["hit"] == [0.0, pytest.approx(0.7935, abs=1e-4)]  # Wilson, 0 of 1
    assert set(data["metrics"]) == {
        "hit",
        "recall",
        "top1",
        "mrr",
        "tokens_selected_mean",
        "tokens_all",
        "token_reduction",
    }
    assert data["per_case"] == [
        {"query": "q0", "expected": ["t3"], "selected": ["s-t1", "s-t2"], "rank_of_first": 3}
    ]
    assert data["setting"]["top_k"] == 2


def test_with_the_real_engine_and_tokenizer() -> None:
    listing = [
        {"name": "get_weather", "description": "Current weather for a city"},
        {"name": "send_email", "description": "Send an email message to someone"},
        {"name": "search_web", "description": "Search the web for pages"},
    ]
    catalog = Catalog(tools=mcp_tools("demo", listing)[0], servers=[])
    tokens = token_table(catalog, "openai", "gpt-4o")
    engine = HoloDeckEngine(catalog, None)
    cases = resolve_cases(
        [
            Case("what is the weather in Paris", ("get_weather",)),
            Case("email Bob", ("send_email",)),
        ],
        catalog,
    )
    report = evaluate(engine, catalog, tokens, cases, _setting(top_k=1, similarity_threshold=0.5))
    assert [catalog.tools[r.selected[0]].name for r in report.per_case] == [
        "get_weather",
        "send_email",
    ]
    assert report.metrics.recall == 1.0 and report.metrics.top1 == 1.0
    per = tokens.per_tool
    expected = (
        int(per[catalog.position("demo-get_weather")])
        + int(per[catalog.position("demo-send_email")])
    ) / 2
    assert report.metrics.tokens_selected_mean == expected + tokens.overhead
