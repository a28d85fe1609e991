"""The dashboard's pure presentation helpers: bars, cut lines, histograms, token breakdowns."""

from __future__ import annotations

import numpy as np

from workbench.catalog import Catalog, ServerStatus, Tool
from workbench.config.filtering import ToolFiltering
from workbench.search.types import Ranking, Selection
from workbench.tui.view import (
    CutRow,
    RankRow,
    bar,
    cut_labels,
    histogram,
    ranking_rows,
    saved,
    server_tokens,
    sparkline,
)
from workbench.tui.widgets.history_list import remember


def _catalog(n: int) -> Catalog:
    tools = [Tool(f"s{i % 2}-t{i}", f"s{i % 2}", f"t{i}", f"tool {i}", (), "mcp") for i in range(n)]
    return Catalog(tools=tools, servers=[ServerStatus("s0", "stdio"), ServerStatus("s1", "stdio")])


def _ranking(scores: list[float]) -> Ranking:
    arr = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-arr, kind="stable").astype(np.int64)
    return Ranking("q", "bm25", "bm25", arr, order)


def test_bar_fills_by_eighths() -> None:
    assert bar(1.0, 4) == "████"
    assert bar(0.0, 4) == "    "
    assert bar(0.5, 4) == "██  "
    assert bar(1 / 16, 2) == "▏ "
    assert bar(2.0, 3) == "███"


def test_cut_lines_sit_after_the_last_searched_tool_and_after_the_threshold() -> None:
    ranking = _ranking([0.1, 0.9, 0.5, 0.8, 0.2])  # order: 1, 3, 2, 4, 0
    setting = ToolFiltering(enabled=True, top_k=2, similarity_threshold=0.3)
    selection = Selection(indices=(1, 3), reasons={1: "search", 3: "search"}, passing=3)
    assert cut_labels(ranking, selection, setting) == {2: "top_k 2", 3: "threshold 0.30"}
    same = Selection(indices=(1, 3, 2), reasons={1: "search", 3: "search", 2: "search"}, passing=3)
    labels = cut_labels(ranking, same, setting.with_(top_k=3))
    assert labels == {3: "threshold 0.30"}


def test_ranking_rows_interleave_cuts_and_keep_far_selected_tools() -> None:
    catalog = _catalog(5)
    ranking = _ranking([0.1, 0.9, 0.5, 0.8, 0.2])
    setting = ToolFiltering(enabled=True, top_k=3, similarity_threshold=0.3)
    selection = Selection(
        indices=(0, 1, 3), reasons={0: "always_include", 1: "search", 3: "search"}, passing=3
    )
    rows = ranking_rows(ranking, selection, catalog, [10, 20, 30, 40, 50], setting, limit=3)
    kinds = [r.tool if isinstance(r, RankRow) else r.label for r in rows]
    assert kinds == ["s1-t1", "s1-t3", "top_k 3", "s0-t2", "threshold 0.30", "s0-t0"]
    last = rows[-1]
    assert isinstance(last, RankRow) and last.rank == 5 and last.reason == "always_include"
    assert last.tokens == 10
    assert not any(isinstance(r, CutRow) and r.label.startswith("top_k") for r in rows[3:])


def test_histogram_and_sparkline() -> None:
    counts = histogram(np.array([0.0, 0.05, 0.5, 0.99, 1.0, 1.5]), 4)
    assert counts == [2, 0, 1, 3]
    line = sparkline(counts)
    assert len(line) == 4 and line[1] == " " and line[3] == "█"
    assert sparkline([0, 0]) == "  "


def test_server_tokens_and_saved_share() -> None:
    catalog = _catalog(4)
    rows = server_tokens(catalog, [1, 2, 3, 4], [1, 2])
    assert [(r.server, r.all, r.sent, r.tools, r.chosen) for r in rows] == [
        ("s0", 4, 3, 2, 1),
        ("s1", 6, 2, 2, 1),
    ]
    assert saved(100, 25) == 0.75
    assert saved(0, 0) == 0.0


def test_history_moves_a_repeated_query_to_the_front() -> None:
    history = remember([], "a")
    history = remember(history, "b")
    history = remember(history, "a")
    assert history == ["a", "b"]
    assert remember(history, "   ") == ["a", "b"]
    assert len(remember([str(i) for i in range(60)], "new", size=50)) == 50


def test_ranking_widths_fit_the_table_and_drop_the_server_when_narrow() -> None:
    from workbench.tui.widgets.ranking_table import widths_for

    for total in (48, 58, 70, 100):
        w = widths_for(total)
        used = w.rank + w.tool + w.server + w.score + w.tokens + w.why
        assert used == total - 1 or w.tool == 12
    assert widths_for(50).server == 0 and widths_for(70).server == 10


def test_ranking_line_and_compare_line_show_local_names() -> None:
    from workbench.tui.widgets.compare_view import compare_line
    from workbench.tui.widgets.ranking_table import row_text, widths_for

    row = RankRow(
        rank=3,
        index=7,
        tool="memory-search_nodes",
        server="memory",
        score=0.5,
        tokens=1234,
        reason="always_include",
    )
    line = row_text(row, widths_for(70)).plain
    assert line.split() == ["3", "search_nodes", "memory", "██▌", "0.50", "1,234", "always"]
    assert compare_line(row, 30).plain.split() == ["3", "●search_nodes", "0.50"]


def test_metric_cards_format_the_core_metrics() -> None:
    from workbench.evaluate import EvalReport, Metrics
    from workbench.tui.screens.evaluate import metric_cards

    metrics = Metrics(
        cases=4,
        hit=0.75,
        recall=0.625,
        top1=0.5,
        mrr=0.6,
        tokens_selected_mean=250.0,
        tokens_all=1000,
    )
    report = EvalReport(setting=ToolFiltering(), metrics=metrics, per_case=[])
    assert metric_cards(report) == [
        ("recall", "0.625"),
        ("hit", "0.750"),
        ("top1", "0.500"),
        ("mrr", "0.600"),
        ("tokens sent", "250"),
        ("saved", "75%"),
    ]


def test_catalog_sorts_by_tokens_name_and_server() -> None:
    from workbench.tui.widgets.catalog_table import sorted_indices

    catalog = _catalog(4)  # s0-t0, s1-t1, s0-t2, s1-t3
    tokens = [5, 50, 20, 20]
    assert sorted_indices(catalog, tokens, "tokens") == [1, 2, 3, 0]
    assert sorted_indices(catalog, tokens, "name") == [0, 1, 2, 3]
    assert sorted_indices(catalog, tokens, "server") == [0, 2, 1, 3]


def test_evidence_line_cuts_long_lists() -> None:
    from workbench.tui.widgets.findings_list import evidence_line

    line = evidence_line({"top_n": 3, "tools": ["a", "b", "c", "d"], "tokens": 1905})
    assert line == "top_n: 3 · tools: a, b, c, … (4) · tokens: 1905"
