"""Quitting: at once with nothing changed; with knobs changed against the file, a dialog first
(write back, discard and quit, cancel), driven by the keyboard."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Button
from tui_helpers import buttons_shown, research_app, runtime_app, seven_agent, shown

from workbench.tui.app import HoloTuneApp
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.quit import QuitScreen
from workbench.tui.screens.writeback import WriteBackScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.ranking_table import RankingTable

SIZE = (120, 36)


async def test_quitting_with_nothing_changed_is_immediate(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("q")
        await pilot.pause()
        assert not stackone_app.is_running


async def test_quitting_with_changed_knobs_asks_and_cancel_stays(
    stackone_app: HoloTuneApp,
) -> None:
    path = stackone_app.options.agent
    before = path.read_bytes()
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dashboard = stackone_app.screen
        assert isinstance(dashboard, DashboardScreen)
        dashboard.query_one(RankingTable).focus()
        await pilot.press("right_square_bracket", "right_square_bracket", "minus")
        await settle(pilot)
        assert dashboard.changed_knobs() == ["top_k", "similarity_threshold"]
        await pilot.press("ctrl+q")
        await settle(pilot)
        dialog = stackone_app.screen
        assert isinstance(dialog, QuitScreen) and stackone_app.is_running
        text = shown(dialog.query_one("#quit-changed"))
        assert "agent.yaml" in text and "top_k, similarity_threshold" in text
        assert dialog.focused is dialog.query_one("#quit-write-button", Button)
        await pilot.press("q")  # the dashboard's q is not active under the dialog
        await pilot.press("escape")
        await settle(pilot)
        assert stackone_app.screen is dashboard and stackone_app.is_running
        assert dashboard.changed_knobs() == ["top_k", "similarity_threshold"]
        await pilot.press("q")  # asks again
        await settle(pilot)
        assert isinstance(stackone_app.screen, QuitScreen)
    assert path.read_bytes() == before


async def test_discard_and_quit(stackone_app: HoloTuneApp) -> None:
    path = stackone_app.options.agent
    before = path.read_bytes()
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("right_square_bracket", "ctrl+q")
        await settle(pilot)
        assert isinstance(stackone_app.screen, QuitScreen)
        await pilot.press("d")
        await pilot.pause()
        assert not stackone_app.is_running
    assert path.read_bytes() == before


async def test_write_back_then_quit(stackone_app: HoloTuneApp) -> None:
    path = stackone_app.options.agent
    before = path.read_bytes()
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("right_square_bracket", "right_square_bracket", "ctrl+q")
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        dialog = stackone_app.screen
        assert isinstance(dialog, WriteBackScreen)  # the diff first
        assert "+  top_k: 7" in shown(dialog.query_one("#writeback-diff"))
        await pilot.press("y")
        await settle(pilot)
        assert not stackone_app.is_running
    assert path.read_bytes() == before.replace(b"top_k: 5", b"top_k: 7")


async def test_a_write_back_cancelled_from_the_quit_dialog_stays(
    stackone_app: HoloTuneApp,
) -> None:
    path = stackone_app.options.agent
    before = path.read_bytes()
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("right_square_bracket", "ctrl+q")
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(stackone_app.screen, WriteBackScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(stackone_app.screen, DashboardScreen) and stackone_app.is_running
    assert path.read_bytes() == before


@pytest.mark.parametrize("runtime", ["holodeck-0.7", "anthropic"])
async def test_quitting_on_a_runtime_that_refuses_the_block_offers_no_write_back(
    tmp_path: Path, runtime: str
) -> None:
    """Before: "Write back (w)" led to the refusal (0.7) or the export view (a deferred runtime),
    and the app stayed open."""
    if runtime == "holodeck-0.7":
        agent = seven_agent(tmp_path)
    else:
        agent = research_app(tmp_path).options.agent
    before = agent.read_bytes()
    app = runtime_app(agent, runtime)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "right_square_bracket", "ctrl+q")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, QuitScreen)
        assert buttons_shown(dialog) == ["Discard and quit (d)", "Cancel (esc)"]
        note = " ".join(shown(dialog.query_one("#quit-note")).split())
        assert f"{runtime} does not read tool_filtering: nothing to write back" in note
        assert dialog.focused is dialog.query_one("#quit-cancel-button")
        await pilot.press("w")  # nothing: there is nothing to write back
        await settle(pilot)
        assert app.screen is dialog
        await pilot.press("d")
        await pilot.pause()
        assert not app.is_running
    assert agent.read_bytes() == before
