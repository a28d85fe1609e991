"""Help from anywhere: F1 always; ``?`` too, except where it types, a text box that already holds
text (a query often ends in ``?``). The query has the focus at start and the footer shows F1
there; elsewhere it shows ``?``."""

from __future__ import annotations

from pathlib import Path

from textual.binding import Binding
from textual.widgets import Footer
from tui_helpers import research_app

from workbench.tui.app import HoloTuneApp
from workbench.tui.commands import ACTIONS
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.help import HELP, HelpScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.number_knob import NumberKnob
from workbench.tui.widgets.query_input import QueryInput
from workbench.tui.widgets.ranking_table import RankingTable

SIZE = (160, 36)  # wide enough for the whole footer


def _footer_help_keys(app: HoloTuneApp) -> list[str]:
    """The keys the footer shows for help, as drawn."""
    footer = app.screen.query_one(Footer)
    keys = []
    for key in footer.children:
        if "help" in str(getattr(key, "description", "")):
            keys.append(str(getattr(key, "key_display", "")))
    return keys


def _dashboard(app: HoloTuneApp) -> DashboardScreen:
    screen = app.screen
    assert isinstance(screen, DashboardScreen)
    return screen


async def test_question_mark_in_the_empty_query_opens_help(tmp_path: Path) -> None:
    """Before: the dashboard opens with the query focused and empty, and ``?`` (the README's help
    key) typed a ``?`` there instead of opening the help."""
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dashboard = _dashboard(app)
        query = dashboard.query_one(QueryInput)
        assert dashboard.focused is query and query.value == ""
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is dashboard
        assert query.value == "" and dashboard.focused is query


async def test_question_mark_ends_a_query_and_f1_opens_help_from_it(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dashboard = _dashboard(app)
        query = dashboard.query_one(QueryInput)
        await pilot.press(*"what time?")
        await settle(pilot)
        assert query.value == "what time?" and app.screen is dashboard
        assert _footer_help_keys(app) == ["F1"]
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("f1")  # F1 closes it too
        await settle(pilot)
        assert app.screen is dashboard and query.value == "what time?"


async def test_question_mark_in_a_number_box_opens_help(tmp_path: Path) -> None:
    """A knob's number box never takes a ``?`` (before: the key was swallowed there, while the
    footer said ``? help``)."""
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dashboard = _dashboard(app)
        box = dashboard.query_one("#knob-top-k", NumberKnob).input
        dashboard.set_focus(box)
        await settle(pilot)
        value = box.value
        assert value and _footer_help_keys(app) == ["?"]
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert box.value == value


async def test_question_mark_opens_help_from_the_ranking(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dashboard = _dashboard(stackone_app)
        dashboard.query_one(RankingTable).focus()
        await pilot.pause()
        await settle(pilot)
        assert _footer_help_keys(stackone_app) == ["?"]
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(stackone_app.screen, HelpScreen)


def test_help_bindings_have_ids_and_tooltips_and_the_help_names_them() -> None:
    bindings = [
        b for b in [*DashboardScreen.BINDINGS, *QueryInput.BINDINGS] if isinstance(b, Binding)
    ]
    helps = [b for b in bindings if b.action.endswith(("help", "show_help"))]
    assert {b.id for b in helps} == {"help", "query-help", "query-help-question"}
    assert all(b.tooltip for b in helps)
    assert "`?` `F1`" in HELP and "**F1**" in HELP
    assert any(action == "show_help" for _, _, action in ACTIONS)
