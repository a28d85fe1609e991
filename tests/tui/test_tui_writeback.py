"""The write-back dialog on a small terminal, and after a refused write."""

from __future__ import annotations

from pathlib import Path

from textual.containers import VerticalScroll
from textual.geometry import Region
from tui_helpers import buttons_shown, research_app, shown

from workbench.tui.app import HoloTuneApp
from workbench.tui.screens.error import ErrorScreen
from workbench.tui.screens.writeback import WriteBackScreen
from workbench.tui.screenshots import settle

#: top_k, threshold, always_include_top_n_used and enabled changed: a diff longer than 80x24 has.
LONG_DIFF = ("tab", "right_square_bracket", "minus", "n", "e", "ctrl+s")


def _fully_shown(app: HoloTuneApp, selector: str) -> Region:
    """The widget's region, asserted to be wholly on the screen and inside the dialog."""
    screen = app.screen
    region = screen.query_one(selector).region
    assert region.area > 0, f"{selector} is not drawn"
    assert screen.region.contains_region(region), f"{selector} is off the screen: {region}"
    assert screen.query_one("#writeback-box").region.contains_region(region), selector
    return region


async def test_at_80x24_the_title_and_buttons_show_and_the_diff_scrolls(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(*LONG_DIFF)
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WriteBackScreen)
        title = _fully_shown(app, "#writeback-title")
        write = _fully_shown(app, "#writeback-write")
        _fully_shown(app, "#writeback-cancel-button")
        diff = _fully_shown(app, "#writeback-diff-scroll")
        assert title.bottom <= diff.y and diff.bottom <= write.y  # nothing drawn over another
        scroll = screen.query_one("#writeback-diff-scroll", VerticalScroll)
        assert scroll.max_scroll_y > 0  # the rest of the diff is a scroll away
        assert "Write tool_filtering back" in shown(screen.query_one("#writeback-title"))


async def test_a_refused_write_takes_the_write_button_away(stackone_here: HoloTuneApp) -> None:
    """Before: Write stayed on screen, disabled, beside the refusal (which names the agent's
    file: relative here, so its lines are as many whatever the test's folder)."""
    stackone_app = stackone_here
    path = stackone_app.options.agent
    async with stackone_app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press(*LONG_DIFF)
        await settle(pilot)
        screen = stackone_app.screen
        assert isinstance(screen, WriteBackScreen)
        assert "Write (y)" in buttons_shown(screen)
        edited = path.read_text() + "# edited elsewhere\n"
        path.write_text(edited)  # the file changes after the diff was made
        await pilot.press("y")
        await settle(pilot)
        assert stackone_app.screen is screen  # still the dialog, saying why
        assert "changed" in shown(screen.query_one("#writeback-error"))
        _fully_shown(stackone_app, "#writeback-error")
        _fully_shown(stackone_app, "#writeback-reload-button")
        buttons = buttons_shown(screen)
        assert "Write (y)" not in buttons and "Reload (r)" in buttons
        assert screen.focused is screen.query_one("#writeback-cancel-button")
        await pilot.press("y")  # nothing happens: nothing can be written
        await settle(pilot)
        assert stackone_app.screen is screen
    assert path.read_text() == edited


async def test_a_block_holodeck_would_reject_is_the_error_screen(tmp_path: Path) -> None:
    """A misspelled block (HoloDeck refuses a file with a key its schema lacks): the dashboard
    does not open it, as the CLI does not (exit 2), and nothing can be written."""
    app = research_app(tmp_path)
    agent = app.options.agent
    agent.write_text(agent.read_text().replace("tool_filtering:", "tool_filterring:"))
    before = agent.read_bytes()
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        detail = str(app.screen.query_one("#error-detail").render())
        assert "tool_filterring" in detail and "tool_filtering" in detail
        await pilot.press("ctrl+s", "y")
        await settle(pilot)
        assert isinstance(app.screen, ErrorScreen)
        await pilot.press("q")
    assert app.return_code == 2
    assert agent.read_bytes() == before


async def test_no_change_shows_no_write_button(tmp_path: Path) -> None:
    """The knobs as the file has them: nothing to write, so no Write button; Cancel has focus."""
    app = research_app(tmp_path)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        await pilot.press("tab", "ctrl+s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WriteBackScreen)
        assert "No change" in shown(screen.query_one("#writeback-diff"))
        assert buttons_shown(screen) == ["Cancel (esc)"]
        assert screen.focused is screen.query_one("#writeback-cancel-button")
