"""The dashboard's pure presentation helpers: bars, cut lines, histograms, token breakdowns."""

from __future__ import annotations

import numpy as np
import pytest
from tui_helpers import ENV, SAMPLES

from workbench.catalog import Catalog, ServerStatus, Tool
from workbench.catalog.enumerate import load_catalog
from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering
from workbench.search.selection import select
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
from workbench.workspace import Workspace, build_workspace


@pytest.fixture(scope="module")
def research_workspace() -> Workspace:
    """The research sample agent on its catalog snapshot, embedder none (BM25 scores)."""
    agent = load_agent(SAMPLES / "research-agent.yaml", environ=ENV, missing_env="warn")
    catalog = load_catalog(agent, catalog_file=SAMPLES / "research-agent.catalog.json")
    return build_workspace(agent, catalog, embedder_spec="none", environ=ENV)


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


#: Scores of _catalog(6): order s0-t2 1.0, s1-t1 0.9, s0-t4 0.9, s1-t3 0.4, s1-t5 0.2, s0-t0 0.1
SCORES = [0.10, 0.90, 1.00, 0.40, 0.90, 0.20]


@pytest.mark.parametrize(
    ("changes", "cuts"),
    [
        # the threshold cuts first: 3 pass, 5 slots
        ({"top_k": 5, "similarity_threshold": 0.5}, {3: "threshold 0.50"}),
        # top_k cuts first: 4 pass, 2 slots
        ({"top_k": 2, "similarity_threshold": 0.3}, {2: "top_k 2", 4: "threshold 0.30"}),
        # top_k larger than what passes
        ({"top_k": 12, "similarity_threshold": 0.3}, {4: "threshold 0.30"}),
        # always_include takes a slot far down: top_k stops the 3rd
        ({"top_k": 3, "always_include": ["t0"]}, {2: "top_k 3", 4: "threshold 0.30"}),
        # always_include brings the 3rd, which passes: the search stops after 2 tools, yet
        # top_k leaves no passing tool out (the bug: a top_k line between rows 2 and 3)
        (
            {"top_k": 4, "similarity_threshold": 0.5, "always_include": ["t4"]},
            {3: "threshold 0.50"},
        ),
        # always_include takes every slot: the search adds nothing, top_k stops the 3rd
        ({"top_k": 2, "always_include": ["t2", "t1"]}, {2: "top_k 2", 4: "threshold 0.30"}),
        # top_n_used (cold: s0-t0, s1-t1) takes slots: 1 left for s0-t2, then s0-t4 is stopped
        ({"top_k": 3, "always_include_top_n_used": 2}, {2: "top_k 3", 4: "threshold 0.30"}),
        # only the best passes (the threshold is inclusive), always_include is far down
        (
            {"top_k": 5, "similarity_threshold": 1.0, "always_include": ["t0"]},
            {1: "threshold 1.00"},
        ),
        # a threshold with three decimals is drawn with them
        ({"top_k": 5, "similarity_threshold": 0.375}, {4: "threshold 0.375"}),
    ],
)
def test_cut_lines_follow_the_runtime_selection(
    changes: dict[str, object], cuts: dict[int, str]
) -> None:
    catalog = _catalog(6)
    ranking = _ranking(SCORES)
    base = ToolFiltering(enabled=True, similarity_threshold=0.3, always_include_top_n_used=0)
    setting = base.with_(**changes)
    selection = select(ranking, setting, catalog)
    assert cut_labels(ranking, selection, setting) == cuts
    rows = ranking_rows(ranking, selection, catalog, [1] * 6, setting)
    drawn = {i: r.label for i, r in enumerate(rows) if isinstance(r, CutRow)}
    # each line sits under as many ranked rows as its position (none after the last row)
    expected = {at + sum(1 for a in cuts if a < at): label for at, label in cuts.items() if at < 6}
    assert drawn == expected


def test_cut_line_when_nothing_passes_sits_above_the_first_row() -> None:
    catalog = _catalog(4)
    ranking = _ranking([0.2, 0.1, 0.3, 0.05])
    setting = ToolFiltering(enabled=True, top_k=3, similarity_threshold=0.9, always_include=["t1"])
    selection = select(ranking, setting, catalog)
    rows = ranking_rows(ranking, selection, catalog, [1] * 4, setting)
    assert isinstance(rows[0], CutRow) and rows[0].label == "threshold 0.90"
    assert [r.label for r in rows if isinstance(r, CutRow)] == ["threshold 0.90"]


@pytest.mark.parametrize("top_k", range(5, 13))
def test_research_agent_repro_has_no_top_k_line_when_only_the_threshold_limits(
    research_workspace: Workspace, top_k: int
) -> None:
    """The trial's case: bm25, threshold 0.37, always brave_llm_context (ranked 3rd, passing):
    the search takes rows 1-2 and stops, but top_k leaves no passing tool out."""
    ws = research_workspace
    setting = ws.setting.with_(
        search_method="bm25",
        similarity_threshold=0.37,
        always_include=["brave_llm_context"],
        top_k=top_k,
    )
    ranking = ws.engine.rank("remember that Alice wrote the paper", "bm25")
    selection = select(ranking, setting, ws.catalog)
    rows = ranking_rows(ranking, selection, ws.catalog, ws.tokens.per_tool, setting)
    kinds = ["row" if isinstance(r, RankRow) else r.label for r in rows[:5]]
    assert kinds == ["row", "row", "row", "threshold 0.37", "row"]
    assert not any(isinstance(r, CutRow) and "top_k" in r.label for r in rows)


def test_scores_get_the_decimals_that_keep_them_on_their_side_of_the_line() -> None:
    catalog = _catalog(4)
    ranking = _ranking([1.0, 0.4978, 0.5, 0.2])
    setting = ToolFiltering(enabled=True, top_k=5, similarity_threshold=0.5)
    rows = ranking_rows(ranking, select(ranking, setting, catalog), catalog, [1] * 4, setting)
    ranked = [r for r in rows if isinstance(r, RankRow)]
    assert {r.digits for r in ranked} == {3}
    assert [f"{r.score:.{r.digits}f}" for r in ranked] == ["1.000", "0.500", "0.498", "0.200"]
    close = _ranking([1.0, 0.49996, 0.5, 0.2])
    rows = ranking_rows(close, select(close, setting, catalog), catalog, [1] * 4, setting)
    shown = [f"{r.score:.{r.digits}f}" for r in rows if isinstance(r, RankRow)]
    assert shown == ["1.00000", "0.50000", "0.49996", "0.20000"]


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
        used = w.rank + w.mark + w.tool + w.server + w.score + w.tokens + w.why
        assert used == total - 1 or w.tool == 12
    assert widths_for(50).server == 0 and widths_for(70).server == 10


def test_a_wide_ranking_shows_whole_server_names() -> None:
    """At 160 columns the server column was cut to ``brave_se…`` beside an emptied tool column:
    it takes a long server name whole (up to 20 cells) while the tool column keeps 32."""
    from workbench.tui.widgets.ranking_table import SERVER_MAX, TOOL_ROOM, widths_for

    for total, longest in ((100, 12), (100, 30), (70, 12), (130, 18)):
        w = widths_for(total, server_names=longest)
        used = w.rank + w.mark + w.tool + w.server + w.score + w.tokens + w.why
        assert used == total - 1
        assert w.tool >= TOOL_ROOM or w.server == 10
        assert 10 <= w.server <= min(max(longest, 10), SERVER_MAX)
    assert widths_for(130, server_names=18).server == 18
    assert widths_for(70, server_names=18).server == 10  # no room: as before


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
    assert line.split() == ["3", "search_nodes", "memory", "██▌", "0.500", "1,234", "always"]
    assert compare_line(row, 30).plain.split() == ["3", "●search_nodes", "0.500"]
    assert len(compare_line(row, 30).plain) <= 30


def test_compare_line_never_rounds_a_score_across_the_threshold() -> None:
    """0.2996 under threshold 0.30 is drawn 0.2996, not 0.30 (the ranking's own decimals)."""
    from workbench.search.selection import score_decimals
    from workbench.tui.widgets.compare_view import compare_line

    digits = score_decimals([0.2996, 0.9], 0.3)
    row = RankRow(
        rank=6, index=1, tool="s-t", server="s", score=0.2996, tokens=1, reason=None, digits=digits
    )
    assert compare_line(row, 30).plain.split()[-1] == "0.2996"


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
        ("saved", "75.0%"),
    ]
    ci = {"recall": (0.4, 0.85), "hit": (0.3006, 0.9544), "top1": (0.15, 0.85), "mrr": (0.3, 0.9)}
    cards = dict(metric_cards(report, ci))
    assert cards["hit"] == "0.750 (0.30-0.95)" and cards["recall"] == "0.625 (0.40-0.85)"
    assert cards["tokens sent"] == "250"


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


def test_ranking_names_are_cut_in_the_middle_and_stay_distinct() -> None:
    from workbench.tui.widgets.ranking_table import clip_middle, clip_names

    assert clip_middle("short", 8) == "short   "
    assert clip_middle("hris_get_employees_time_off_request", 18) == "hris_g…off_request"
    assert len(clip_middle("hris_get_employees_time_off_request", 18)) == 18
    assert clip_middle("abcdef", 4, head=3) == "abc…" and clip_middle("abcdef", 4, head=0) == "…def"
    stackone = [
        "hris_get_employees_time_off_request",
        "hris_get_employees_work_eligibility",
        "hris_get_employee_document_category",
        "hris_get_employee_custom_field_definition",
        "hris_get_employee_time_off_balance",
        "hris_get_employee",
        "hris_get_employee_document",
    ]
    for width in (12, 14, 18, 19, 24):
        shown = clip_names(stackone, width)
        assert len(set(shown)) == len(stackone), (width, shown)
        assert all(len(s) <= width for s in shown)
    # names that share both their start and their end move the cut until they differ
    twins = ["svc_list_alpha_things_all", "svc_list_omega_things_all", "svc_list_alpha_things_all"]
    shown = clip_names(twins, 14)
    assert shown[0] == shown[2] != shown[1]
    assert clip_names(["a_long_tool_name_x"], 30) == ["a_long_tool_name_x".ljust(30)]


def test_ranking_table_at_120_columns_tells_sibling_tools_apart() -> None:
    from workbench.tui.widgets.ranking_table import clip_names, row_text, widths_for

    w = widths_for(57)  # the ranking's width in the 120x36 query lab
    rows = [
        RankRow(rank, rank, f"hris-{name}", "hris", 0.4978, 100, None)
        for rank, name in enumerate(
            ["hris_get_employees_time_off_request", "hris_get_employees_work_eligibility"], 1
        )
    ]
    names = clip_names([r.tool.removeprefix("hris-") for r in rows], w.tool - 1)
    lines = [row_text(r, w, n).plain for r, n in zip(rows, names, strict=True)]
    assert lines[0].split()[1] != lines[1].split()[1]
    assert all("0.498" in line.split() for line in lines)
    assert len({len(line) for line in lines}) == 1


def test_a_negative_score_keeps_the_columns_aligned() -> None:
    from workbench.tui.widgets.ranking_table import row_text, widths_for

    w = widths_for(70)
    lines = [
        row_text(RankRow(1, 1, "m-a", "m", score, 16, None), w).plain for score in (0.266, -0.002)
    ]
    assert lines[1].split()[-2:] == ["-0.002", "16"]
    assert len(lines[0]) == len(lines[1]) and lines[0].index("16") == lines[1].index("16")


def test_findings_text_shows_the_fix() -> None:
    from workbench.evaluate.diagnostics import Finding
    from workbench.tui.widgets.findings_list import findings_text

    text = findings_text([Finding("warning", "one-word-description", "thin", {}, fix="say more")])
    assert "fix: say more" in text.plain
    assert "fix:" not in findings_text([Finding("info", "x", "no fix here")]).plain


def test_label_marks_toggle_by_resolved_name_and_list_a_far_missed_tool() -> None:
    from workbench.tui.dashboard.marks import marks, summary, toggled
    from workbench.tui.widgets.history_list import history_line
    from workbench.tui.widgets.ranking_table import row_text, widths_for

    catalog = _catalog(5)  # s0-t0, s1-t1, s0-t2, s1-t3, s0-t4
    # a bare name in the file is unmarked by its tool; a new mark is the full name
    assert toggled(["t2", "s1-t1"], catalog, "s0-t2") == ("s1-t1",)
    assert toggled(["s1-t1"], catalog, "s0-t4") == ("s1-t1", "s0-t4")
    assert toggled(["s1-t1"], catalog, "s1-t1") == ()
    assert toggled(["s1-t1"], catalog, "nowhere-x") == ("s1-t1",)
    found = marks(["t1", "s0-t0", "unknown"], catalog, sent={1})
    assert found == {1: "sent", 0: "missed"}
    assert marks(["t1", "s0-t0"], catalog, sent=None) == {1: "sent", 0: "sent"}
    assert summary(found) == "✗ 1/2 missed" and summary({1: "sent"}) == "✓ 1/1 expected"
    assert summary({}) == ""

    ranking = _ranking([0.1, 0.9, 0.5, 0.8, 0.2])
    setting = ToolFiltering(enabled=True, top_k=3, similarity_threshold=0.3)
    selection = Selection(indices=(1, 3), reasons={1: "search", 3: "search"}, passing=3)
    rows = ranking_rows(
        ranking, selection, catalog, [1] * 5, setting, limit=2, expected=found.keys()
    )
    ranked = {r.tool: r for r in rows if isinstance(r, RankRow)}
    assert set(ranked) == {"s1-t1", "s1-t3", "s0-t0"}  # t0 is ranked 5th: listed, missed
    assert ranked["s1-t1"].expected and not ranked["s1-t3"].expected
    w = widths_for(80)
    assert "✓ t1" in row_text(ranked["s1-t1"], w).plain
    missed = row_text(ranked["s0-t0"], w)
    assert "✗ t0" in missed.plain and missed.plain.rstrip().endswith("missed")
    assert "   t3" in row_text(ranked["s1-t3"], w).plain
    assert history_line("q", 2).plain == "✓2  q" and history_line("q", 0).plain == "    q"
