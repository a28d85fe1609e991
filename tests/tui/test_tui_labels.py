"""Labelling in the dashboard, driven like a user: type a query, Tab, space on tools; the cases
file on disk is what is asserted, read with the core's loader (and as text for the comments)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.pilot import Pilot
from textual.widgets import Input
from tui_helpers import ENV, SAMPLES, research_app, shown

from workbench.evaluate import load_cases
from workbench.tui.app import HoloTuneApp
from workbench.tui.dashboard.panels import CATALOG_MARKS_LAG
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screenshots import settle
from workbench.tui.view import RankRow
from workbench.tui.widgets.catalog_table import CatalogTable
from workbench.tui.widgets.compare_view import CompareView
from workbench.tui.widgets.history_list import HistoryList
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.row_list import RowList
from workbench.tui.widgets.status_line import StatusLine

SIZE = (120, 36)
QUERY = "find papers on transformers"
# The ranking of QUERY under bm25: search_papers first, search_nodes second (both sent).
FIRST, SECOND = "vectorstore-search_papers", "memory-search_nodes"


def _dashboard(app: HoloTuneApp) -> DashboardScreen:
    screen = app.screen
    assert isinstance(screen, DashboardScreen)
    return screen


def _rows(app: HoloTuneApp) -> dict[str, RankRow]:
    rows = _dashboard(app).query_one(RankingTable).rows_shown
    return {r.tool: r for r in rows if isinstance(r, RankRow)}


def _marked(app: HoloTuneApp) -> set[str]:
    return {tool for tool, row in _rows(app).items() if row.expected}


def _lines(history: HistoryList) -> list[str]:
    return [str(history.get_option_at_index(i).prompt) for i in range(history.option_count)]


def _cases(path: Path) -> dict[str, tuple[str, ...]]:
    """The cases of the file as eval reads them (none: an empty list, or no file)."""
    if not yaml.safe_load(path.read_text()).get("cases"):
        return {}
    return {case.query: case.expected for case in load_cases(path)}


async def _query_then_ranking(pilot: Pilot[Any], query: str = QUERY) -> None:
    await settle(pilot)
    await pilot.press(*query)
    await settle(pilot)
    await pilot.press("tab")  # into the ranking
    await settle(pilot)


async def test_space_labels_two_tools_and_unlabels_them(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    cases = tmp_path / "research-agent.cases.yaml"
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        assert not cases.exists() and _marked(app) == set()
        await pilot.press("space")
        assert _marked(app) == {FIRST}  # drawn at once, before the file is written
        await pilot.press("down", "space")
        await settle(pilot)
        assert _cases(cases) == {QUERY: (FIRST, SECOND)}
        text = cases.read_text()
        assert text.startswith("# Labelled queries for research-agent.yaml")
        assert "source: labelled" in text
        assert _marked(app) == {FIRST, SECOND}
        ranking = shown(_dashboard(app).query_one(RankingTable))
        assert "✓ search_papers" in ranking and "✓ search_nodes" in ranking
        assert "✓ 2/2 expected" in _dashboard(app).query_one(StatusLine).text
        history = _dashboard(app).query_one(HistoryList)
        assert f"✓2  {QUERY}" in _lines(history)

        await pilot.press("space")  # again on search_nodes: unmarked
        await settle(pilot)
        assert _cases(cases) == {QUERY: (FIRST,)}
        await pilot.press("up", "space")  # the last tool: the case goes
        await settle(pilot)
        assert _cases(cases) == {}
        assert yaml.safe_load(cases.read_text()) == {"cases": []}
        assert _marked(app) == set()
        assert not any("labelled" in line for line in _lines(history))


async def test_marks_come_back_when_the_dashboard_opens_again(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await pilot.press("space", "down", "space")
        await settle(pilot)
    again = HoloTuneApp(app.options)  # the same agent, opened again
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _dashboard(again)
        assert screen.state.labels == {QUERY: (FIRST, SECOND)}
        await _query_then_ranking(pilot)
        assert _marked(again) == {FIRST, SECOND}
        await pilot.press("h", "down", "enter")  # the labelled query, run again from history
        await settle(pilot)
        assert screen.query_text == QUERY


async def test_a_missed_expected_tool_is_shown_missed(tmp_path: Path) -> None:
    """A label names a tool the setting does not send: ✗ and "missed" in red, even below the
    rows the ranking draws; the catalog marks it too."""
    cases = tmp_path / "research-agent.cases.yaml"
    cases.write_text(
        f"cases:\n  - query: {QUERY}\n    expected: [search_papers, brave_web_search]\n"
    )
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        rows = _rows(app)
        web = rows["brave_search-brave_web_search"]
        assert web.expected and web.reason is None
        assert rows[FIRST].expected and rows[FIRST].reason is not None
        line = next(
            ln
            for ln in shown(_dashboard(app).query_one(RankingTable)).splitlines()
            if "brave_web_search" in ln
        )
        assert "✗ brave_web_search" in line and line.rstrip().endswith("missed")
        assert _dashboard(app).query_one(StatusLine).text.startswith("✗ 1/2 missed · ")
        await pilot.pause(CATALOG_MARKS_LAG * 3)  # the catalog's marks follow the ranking's
        catalog = shown(_dashboard(app).query_one("#catalog", CatalogTable))
        assert "✗brave_web_sea" in catalog and "★✓search_papers" in catalog
        await pilot.press("c")  # the methods side by side: each says what it sends of them
        await settle(pilot)
        view = _dashboard(app).query_one(CompareView)
        for method in ("semantic", "bm25", "hybrid"):
            lines = [line.text.plain for line in view.column(method).query_one(RowList).lines]
            assert any("✗brave_web_search" in line for line in lines)
            assert any("✓search_papers" in line for line in lines)
        await pilot.press("e")  # filtering off: every tool is sent, the missed one too
        await settle(pilot)
        assert "✓ 2/2 expected" in _dashboard(app).query_one(StatusLine).text


async def test_space_in_the_catalog_labels_its_tool(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await pilot.press("t")  # the catalog tab, by tokens: brave_place_search first
        await settle(pilot)
        await pilot.press("space")
        await settle(pilot)
        tool = "brave_search-brave_place_search"
        assert _cases(tmp_path / "research-agent.cases.yaml") == {QUERY: (tool,)}
        table = _dashboard(app).query_one("#catalog-full", CatalogTable)
        assert "✓brave_place_search" in shown(table) or "✗brave_place_search" in shown(table)


async def test_hand_edits_and_comments_survive_a_label(tmp_path: Path) -> None:
    cases = tmp_path / "my-cases.yaml"
    cases.write_text(
        "# my own cases: keep this comment\n"
        "cases:\n"
        "  - query: remember that Ada likes tea  # a note on this case\n"
        "    expected: [create_entities]\n"
    )
    app = _research_with(tmp_path, cases=cases)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await pilot.press("space")
        await settle(pilot)
    text = cases.read_text()
    assert "# my own cases: keep this comment" in text and "# a note on this case" in text
    assert _cases(cases) == {
        "remember that Ada likes tea": ("create_entities",),
        QUERY: (FIRST,),
    }
    assert not (tmp_path / "research-agent.cases.yaml").exists()  # --cases is where labels go


async def test_an_unwritable_cases_path_is_one_line_and_no_crash(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be\n")
    app = _research_with(tmp_path, cases=blocker / "cases.yaml")
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await pilot.press("space")
        await settle(pilot)
        assert app.is_running
        assert _marked(app) == set()  # the optimistic mark went back
        assert _dashboard(app).state.labels == {}
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and all("\n" not in n.message for n in errors)
        assert errors[-1].message.startswith("label not saved:")
        await pilot.press("down", "space")  # still usable: the next one says so too
        await settle(pilot)
        assert app.is_running and _marked(app) == set()


async def test_palette_label_and_no_query(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _dashboard(app)
        await screen.run_action("label")  # no query typed: said, nothing written
        await settle(pilot)
        assert not (tmp_path / "research-agent.cases.yaml").exists()
        assert any("Type a query first" in n.message for n in app._notifications)
        await _query_then_ranking(pilot)
        await screen.run_action("label")  # what "Label: expected tool" in the palette runs
        await settle(pilot)
        assert _cases(tmp_path / "research-agent.cases.yaml") == {QUERY: (FIRST,)}


async def test_evaluate_runs_on_the_file_that_now_holds_the_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent named relative to the folder the dashboard runs in (the test's): the header's
    length does not depend on that folder's."""
    monkeypatch.chdir(tmp_path)
    app = research_app(tmp_path, relative=True)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await pilot.press("space", "down", "space")
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, EvaluateScreen)
        path = view.query_one("#eval-cases", Input).value
        assert Path(path).name == "research-agent.cases.yaml"
        assert "(beside the agent)" in view.source_line()
        view.action_run()
        await settle(pilot)
        assert view.outcome is not None and view.outcome.cases == 1
        header = " ".join(shown(view.query_one("#eval-status")).split())
        assert header.startswith("1 case from research-agent.cases.yaml (beside")


def _research_with(tmp_path: Path, *, cases: Path) -> HoloTuneApp:
    """The research sample agent (a copy) with ``--cases``."""
    app = research_app(tmp_path)
    options = app.options
    return HoloTuneApp(
        Options(
            agent=options.agent,
            catalog=SAMPLES / "research-agent.catalog.json",
            embedder="none",
            environ=ENV,
            show_timing=False,
            cases=cases,
        )
    )


async def test_an_unexpected_failure_of_the_write_reverts_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not an I/O error (a bug in the store, say): the worker fails, the mark goes back, one
    line is said, the app goes on."""

    def broken(*args: object, **kwargs: object) -> tuple[str, ...]:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("workbench.tui.dashboard.labels.set_expected", broken)
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await pilot.press("space")
        await settle(pilot)
        assert app.is_running and _marked(app) == set()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors == ["label not saved: boom second line"]


async def test_a_saved_label_counts_for_the_unreachable_tools_at_once(tmp_path: Path) -> None:
    """No cases when the dashboard opens: the catalog tab names no unreachable tool. A label on a
    tool the setting does not send reaches the file, the cases are read again and the tool is
    listed unreachable, without reopening; unlabelling it takes it off again."""
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await _query_then_ranking(pilot)
        await app.workers.wait_for_complete()
        screen = _dashboard(app)
        assert screen.state.advice is not None and screen.state.advice.cases is None
        assert screen.state.advice.unreachable == []
        await pilot.press("t", "space")  # the catalog by tokens: brave_place_search, not sent
        await settle(pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)
        advice = screen.state.advice
        assert advice is not None and advice.cases is not None and len(advice.cases) == 1
        [found] = advice.unreachable
        assert found.code == "unreachable-tools"
        assert [t["tool"] for t in found.evidence["tools"]] == ["brave_search-brave_place_search"]
        await pilot.press("space")  # unlabelled: the case goes, and so does the finding
        await settle(pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)
        advice = screen.state.advice
        assert advice is not None and advice.cases is None and advice.unreachable == []
