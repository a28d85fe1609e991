"""The Evaluate view and the servers panel's log and reconnect, driven through Pilot."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static
from tui_helpers import (
    broken_server_app,
    open_and_run,
    open_view,
    run_view,
    shown,
    stackone_with_cases,
)

from workbench.evaluate import evaluate, load_cases, resolve_cases
from workbench.tui.app import HoloTuneApp
from workbench.tui.caseruns import AGENT_CASES, NO_CASES
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screens.server_log import ServerLogScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.front_plot import PlotData, plot_text
from workbench.tui.widgets.knobs_panel import KnobsPanel
from workbench.tui.widgets.row_list import RowList
from workbench.tui.widgets.servers_panel import ServersPanel

SIZE = (120, 36)


async def test_evaluate_shows_the_cores_metrics_and_adopts_a_front_point(
    stackone: Path, tmp_path: Path
) -> None:
    app = stackone_with_cases(stackone, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        lab = screen.lab
        ws = lab.workspace
        cases = resolve_cases(load_cases(tmp_path / "cases.jsonl"), ws.catalog)
        expected = evaluate(ws.engine, ws.catalog, ws.tokens, cases, lab.setting).metrics
        cards = [shown(card) for card in screen.query(".eval-card")]
        assert "recall" in cards[0] and f"{expected.recall:.3f}" in cards[0]
        assert f"{expected.mrr:.3f}" in cards[3]
        assert f"{expected.token_reduction:.1%}" in cards[5]  # one decimal, as eval and compare
        assert "257 cases" in str(screen.query_one("#eval-status", Static).render())
        front = screen.query_one("#eval-front", RowList)
        assert front.row_count > 3
        outcome = screen.outcome
        assert outcome is not None
        recalls = [p.recall for p in outcome.front]
        assert recalls == sorted(recalls)  # cheapest first, each point better in recall
        front.focus()
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        if app.screen is screen:  # measured worse than the setting evaluated: asked again
            assert screen._worse(outcome, 2) is not None
            await pilot.press("enter")
            await settle(pilot)
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen) and dashboard.lab is not None
        adopted = outcome.front[2].setting
        assert dashboard.lab.setting == adopted
        top_k = dashboard.query_one(KnobsPanel).query_one("#knob-top-k")
        assert top_k.has_class("-changed") == (adopted.top_k != 5)


async def test_a_miss_opens_in_the_query_lab(stackone: Path, tmp_path: Path) -> None:
    app = stackone_with_cases(stackone, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        assert screen.outcome is not None
        first = screen.outcome.report.misses[0]
        first_miss = first.case.query
        shown = screen.query_one("#eval-misses", RowList).lines[0]
        # The missed tools first (a narrow view cuts the query after them, not them).
        assert str(shown.text).startswith(", ".join(first.missed) + " ← ")
        screen.query_one("#eval-misses", RowList).focus()
        await pilot.press("enter")
        await settle(pilot)
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen)
        assert dashboard.query_text == first_miss
        assert dashboard.shown_query == first_miss.strip()


async def test_server_log_and_reconnect_of_a_failed_server(tmp_path: Path) -> None:
    app = broken_server_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(ServersPanel)
        panel.focus()
        names = [s.name for s in panel.statuses]
        panel.highlighted = names.index("missing")
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, ServerLogScreen)
        assert "holo-tune-no-such-server" in shown(app.screen.query_one("#log-error"))
        await pilot.press("escape")
        await pilot.press("r")
        await settle(pilot)
        states = {s.name: s.state for s in panel.statuses}
        assert states == {"memory": "ok", "missing": "error", "filesystem": "ok"}
        assert "2/3 servers ok" in shown(app.screen.query_one("#header"))


def test_front_plot_marks_points_and_the_current_setting() -> None:
    data = PlotData(points=((100.0, 0.5), (200.0, 0.9)), current=(150.0, 0.7), highlighted=1)
    lines = plot_text(data, 30, 8).plain.splitlines()
    assert lines[0].startswith("1.00")
    assert lines[6].startswith("0.50")  # the axis starts at the lowest recall's tenth
    body = "".join(lines)
    assert body.count("•") == 1 and body.count("●") == 1 and body.count("◆") == 1
    assert "200 tokens sent" in lines[-1]


@pytest.mark.parametrize("path", ["", AGENT_CASES])
async def test_no_cases_runs_nothing_and_says_what_eval_says(
    stackone_app: HoloTuneApp, path: str
) -> None:
    """The stackone agent has no test_cases and no cases file beside it (a copy in tmp_path)."""
    async with stackone_app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, EvaluateScreen, "v")
        screen.query_one("#eval-cases", Input).value = path
        await run_view(pilot, screen)
        status = shown(screen.query_one("#eval-status"))
        assert status.strip().startswith("✗") and NO_CASES in status
        assert screen.outcome is None and screen.query_one("#eval-front", RowList).row_count == 0
        assert not [w for w in stackone_app.workers if w.name == "evaluate"]


async def test_the_cases_path_is_kept_for_the_session(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        field = (await open_view(pilot, EvaluateScreen, "v")).query_one("#eval-cases", Input)
        field.value = ""
        await pilot.press(*"my-cases.jsonl")
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        screen = stackone_app.screen
        assert isinstance(screen, EvaluateScreen)
        assert screen.query_one("#eval-cases", Input).value == "my-cases.jsonl"
