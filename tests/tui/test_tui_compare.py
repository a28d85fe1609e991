"""The Compare-engines view, driven through Pilot, against the core's ``compare()``.

Small case sets only (26 stackone cases, a few research-agent test cases): the full data sets
take minutes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, ProgressBar, Static
from tui_helpers import (
    ENV,
    SAMPLES,
    open_view,
    research_app,
    run_view,
    shown,
    stackone_with_cases,
)

from workbench.config import load_agent
from workbench.evaluate import cases_from_agent, evaluate, load_cases, resolve_cases
from workbench.evaluate.compare import CompareReport, CompareRow, CurvePoint, compare
from workbench.evaluate.metrics import Metrics
from workbench.search.strategies import ENGINES
from workbench.tui.caseruns import AGENT_CASES, NO_CASES, agent_cases_first
from workbench.tui.commands import ACTIONS
from workbench.tui.options import Options
from workbench.tui.screens.compare import CompareEnginesScreen, row_cells
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.engines_plot import (
    EnginesPlot,
    EnginesPlotData,
    engine_series,
    engines_plot_text,
    legend_lines,
)

SIZE = (120, 36)
#: Every tenth stackone case: 26 cases, enough for five folds, about a second to compare.
STEP = 10
TEST_CASES = """
test_cases:
  - name: papers
    input: find recent papers on transformers
    expected_tools: [search_papers]
  - name: memory
    input: what do you remember about my graph
    expected_tools: [read_graph]
"""


async def test_compare_view_shows_the_cores_numbers_and_every_engine(
    stackone: Path, tmp_path: Path
) -> None:
    app = stackone_with_cases(stackone, tmp_path, every=STEP)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, CompareEnginesScreen, "x")
        # No test_cases in the agent: the file beside it is the default.
        assert screen.query_one("#cmp-cases", Input).value == str(tmp_path / "cases.jsonl")
        await run_view(pilot, screen)
        ws = screen.lab.workspace
        cases = resolve_cases(load_cases(tmp_path / "cases.jsonl"), ws.catalog)
        expected = compare(ws, cases)
        assert screen.outcome is not None
        assert screen.outcome.report == expected
        assert screen.table_rows() == [row_cells(row) for row in expected.rows]
        engines = {row.engine for row in expected.rows}
        assert engines == {"holodeck", *ENGINES}
        settings = {(row.engine, row.setting) for row in expected.rows}
        # Every engine at its defaults and its best (toolkits without an embedder has one
        # setting, so no best); HoloDeck also at the agent's block.
        wanted = {(e, s) for e in engines - {"toolkits"} for s in ("default", "best")}
        assert wanted | {("holodeck", "agent"), ("toolkits", "default")} <= settings
        first = screen.table_rows()[0]
        top = expected.rows[0].metrics
        assert first[:4] == ("holodeck", "default", f"{top.hit:.3f}", f"{top.recall:.3f}")
        status = str(screen.query_one("#cmp-status", Static).render())
        assert f"{len(cases)} cases" in status and "held-out" in status
        progress = screen.query_one(ProgressBar)
        assert progress.total is not None and progress.progress == progress.total
        # The plot: every engine (and the regex variant) as a series, HoloDeck's setting marked.
        plot = screen.query_one(EnginesPlot)
        labels = plot.labels()
        assert engines <= set(labels)
        assert {"anthropic regex", "holodeck current"} <= set(labels)
        assert len(set(labels)) == len(labels)
        drawn = shown(plot)
        for label in labels:
            assert label in drawn  # the legend names it
        agent = next(r for r in expected.rows if r.setting == "agent")
        assert screen.outcome.current_is_file
        assert screen.outcome.current == (agent.metrics.tokens_selected_mean, agent.metrics.recall)
        stackone_points = next(s for s in engine_series(expected) if s.label == "stackone")
        assert len(stackone_points.points) == 88  # the whole grid
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)


async def test_the_marked_setting_is_the_knobs(stackone: Path, tmp_path: Path) -> None:
    app = stackone_with_cases(stackone, tmp_path, every=STEP)
    async with app.run_test(size=SIZE) as pilot:
        keys = ("right_square_bracket", "right_square_bracket", "x")
        screen = await open_view(pilot, CompareEnginesScreen, *keys)
        lab = screen.lab
        assert lab.setting.top_k == lab.file_setting.top_k + 2
        await pilot.press("ctrl+g")
        await settle(pilot)
        outcome = screen.outcome
        assert outcome is not None and not outcome.current_is_file
        ws = lab.workspace
        cases = resolve_cases(load_cases(tmp_path / "cases.jsonl"), ws.catalog)
        now = evaluate(ws.engine, ws.catalog, ws.tokens, cases, lab.setting).metrics
        assert outcome.current == (now.tokens_selected_mean, now.recall)
        assert "the knobs" in shown(screen.query_one("#cmp-notes"))


async def test_the_agents_test_cases_are_the_default(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    agent = tmp_path / "research-agent.yaml"
    agent.write_text(agent.read_text() + TEST_CASES)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, CompareEnginesScreen, "x")
        assert screen.query_one("#cmp-cases", Input).value == AGENT_CASES
        await run_view(pilot, screen)
        ws = screen.lab.workspace
        expected = compare(ws, resolve_cases(cases_from_agent(ws.agent), ws.catalog))
        assert screen.table_rows() == [row_cells(row) for row in expected.rows]
        assert all(row.setting != "best" for row in expected.rows)  # 2 cases < 5 folds
        status = str(screen.query_one("#cmp-status", Static).render())
        assert "2 cases" in status and "no best settings" in status


async def test_a_bad_cases_file_is_said_on_the_status_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Named relative to the folder the dashboard runs in (the test's), so the line's length
    is the same whatever the length of the test's folder."""
    monkeypatch.chdir(tmp_path)
    app = research_app(tmp_path, relative=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, CompareEnginesScreen, "x")
        screen.query_one("#cmp-cases", Input).value = "nope.jsonl"
        await run_view(pilot, screen)
        status = shown(screen.query_one("#cmp-status"))
        assert status.strip().startswith("✗") and "nope.jsonl: no such file" in status
        assert screen.outcome is None and screen.table_rows() == []


@pytest.mark.parametrize("path", ["", AGENT_CASES])
async def test_no_cases_runs_nothing_and_says_what_eval_says(tmp_path: Path, path: str) -> None:
    app = research_app(tmp_path)  # no test_cases, no cases file beside it
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, CompareEnginesScreen, "x")
        screen.query_one("#cmp-cases", Input).value = path
        await run_view(pilot, screen)
        status = shown(screen.query_one("#cmp-status"))
        assert status.strip().startswith("✗") and NO_CASES in status
        assert screen.outcome is None and screen.table_rows() == []
        assert not [w for w in app.workers if w.name == "compare-engines"]


async def test_the_cases_path_is_kept_for_the_session(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        opened = await open_view(pilot, CompareEnginesScreen, "x")
        opened.query_one("#cmp-cases", Input).value = ""
        await pilot.press(*"my-cases.jsonl", "escape")
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareEnginesScreen)
        assert screen.query_one("#cmp-cases", Input).value == "my-cases.jsonl"


async def test_evaluate_and_compare_engines_share_the_typed_cases_path(tmp_path: Path) -> None:
    """One path for both views: the CLI's default order until one is typed, then the typed one."""
    (tmp_path / "cases.yaml").write_text("cases: []\n")
    app = research_app(tmp_path)
    agent = tmp_path / "research-agent.yaml"
    agent.write_text(agent.read_text() + TEST_CASES)  # the agent's own come before any file
    async with app.run_test(size=SIZE) as pilot:
        evaluate_view = await open_view(pilot, EvaluateScreen, "v")
        assert evaluate_view.query_one("#eval-cases", Input).value == AGENT_CASES
        assert "cases: the agent's test_cases" in shown(evaluate_view.query_one("#eval-status"))
        await pilot.press("escape", "x")  # opened, nothing typed: the same default
        await settle(pilot)
        assert isinstance(app.screen, CompareEnginesScreen)
        cases = app.screen.query_one("#cmp-cases", Input)
        assert cases.value == AGENT_CASES
        cases.value = ""
        await pilot.press(*"mine.jsonl", "escape", "v")
        await settle(pilot)
        assert isinstance(app.screen, EvaluateScreen)
        assert app.screen.query_one("#eval-cases", Input).value == "mine.jsonl"


@pytest.mark.parametrize("flag", [False, True])
async def test_both_views_open_on_the_cli_default_and_say_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: bool
) -> None:
    """``<agent stem>.cases.yaml`` beside the agent, or ``--cases FILE``: both views open on it
    and their header says where the cases come from. Paths relative to the folder the dashboard
    runs in (the test's), so the header's length does not depend on that folder's."""
    monkeypatch.chdir(tmp_path)
    beside = Path("research-agent.cases.yaml")
    beside.write_text(
        "cases:\n  - query: find recent papers on transformers\n    expected: [search_papers]\n"
    )
    app = research_app(tmp_path, relative=True)
    given = Path("other.cases.yaml")
    if flag:
        app.options = Options(**{**app.options.__dict__, "cases": given})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, prefix in (("v", "eval"), ("x", "cmp")):
            await pilot.press("tab" if key == "v" else "escape", key)
            await settle(pilot)
            value = app.screen.query_one(f"#{prefix}-cases", Input).value
            header = shown(app.screen.query_one(f"#{prefix}-status"))
            if flag:
                assert value == str(given) and f"cases: {given} (--cases)" in header
            else:
                assert value == str(beside) and "(beside the agent)" in header


async def test_no_cases_says_what_to_type_in_the_tui(tmp_path: Path) -> None:
    app = research_app(tmp_path)  # no test_cases, no cases file beside it
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "v", "enter")
        await settle(pilot)
        status = shown(app.screen.query_one("#eval-status"))
        assert "type a cases file path above" in status and "--cases" not in status


def test_agent_cases_first(tmp_path: Path) -> None:
    agent = tmp_path / "research-agent.yaml"
    shutil.copyfile(SAMPLES / "research-agent.yaml", agent)
    plain = load_agent(agent, environ=ENV, missing_env="warn")
    assert agent_cases_first(plain, agent) == AGENT_CASES  # nothing beside it either
    (tmp_path / "cases.yaml").write_text("cases: []\n")
    assert agent_cases_first(plain, agent) == str(tmp_path / "cases.yaml")
    agent.write_text(agent.read_text() + TEST_CASES)
    labelled = load_agent(agent, environ=ENV, missing_env="warn")
    assert agent_cases_first(labelled, agent) == AGENT_CASES


def test_the_view_is_bound_and_in_the_palette() -> None:
    ids = {getattr(b, "id", None): b for b in DashboardScreen.BINDINGS}
    binding = ids["compare_engines"]
    assert getattr(binding, "key", None) == "x" and getattr(binding, "tooltip", "")
    assert any(action == "compare_engines" for _, _, action in ACTIONS)


def _metrics(recall: float, tokens: float) -> Metrics:
    return Metrics(1, recall, recall, recall, recall, tokens, 1000)


def test_engine_series_and_legend() -> None:
    report = CompareReport(
        cases=1,
        tokens_all=1000,
        encoding="o200k_base",
        exact=True,
        rows=[
            CompareRow("holodeck", "default", {}, _metrics(0.5, 100.0)),
            CompareRow("holodeck", "best", {}, _metrics(0.9, 300.0), heldout=True),
            CompareRow("stackone", "default", {}, _metrics(0.8, 200.0)),
            CompareRow("anthropic", "default", {}, _metrics(0.7, 50.0)),
        ],
        points=[
            CurvePoint("holodeck", {}, 0.6, 120.0),
            CurvePoint("stackone", {"limit": 5}, 0.8, 200.0),
            CurvePoint("anthropic", {"variant": "bm25"}, 0.7, 50.0),
            CurvePoint("anthropic", {"variant": "regex"}, 0.0, 10.0),
        ],
    )
    series = {s.label: s for s in engine_series(report)}
    assert list(series) == ["holodeck", "stackone", "anthropic", "anthropic regex"]
    # HoloDeck: its rows measured on every case (not the held-out one), then its front.
    assert series["holodeck"].points == ((100.0, 0.5), (120.0, 0.6))
    assert len({s.marker for s in series.values()}) == len(series)
    data = EnginesPlotData(series=tuple(series.values()), current=(150.0, 0.55))
    assert [s.label for s in data.drawn()][-2:] == ["holodeck", "holodeck current"]
    lines = engines_plot_text(data, 60, 12).plain.splitlines()
    assert lines[0].startswith("• holodeck  + stackone")
    assert "◆ holodeck current" in lines[1]  # wrapped onto a second legend line
    assert len(lines) == 12 and "300 tokens sent" not in lines[-1]  # held-out row not drawn
    assert "200 tokens sent" in lines[-1]
    body = "\n".join(lines[2:])
    assert body.count("◆") == 1 and body.count("□") == 1
    assert legend_lines([], 10)[0].plain == ""
