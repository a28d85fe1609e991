"""Help while typing: the query has focus at start and ``?`` types into it, so F1 opens the help
there and the footer shows F1; elsewhere the footer shows ``?``."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Footer

from workbench.tui.app import HoloTuneApp
from workbench.tui.commands import ACTIONS
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.help import HELP, HelpScreen
from workbench.tui.screenshots import settle
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


async def test_f1_opens_help_while_typing_and_the_footer_says_so(
    stackone_app: HoloTuneApp,
) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dashboard = stackone_app.screen
        assert isinstance(dashboard, DashboardScreen)
        query = dashboard.query_one(QueryInput)
        assert dashboard.focused is query
        assert _footer_help_keys(stackone_app) == ["F1"]
        await pilot.press("question_mark")  # types, as any printable key does
        await settle(pilot)
        assert query.value.endswith("?") and stackone_app.screen is dashboard
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(stackone_app.screen, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
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
    assert {b.id for b in helps} == {"help", "query-help"}
    assert all(b.tooltip for b in helps)
    assert "`?` `F1`" in HELP and "**F1**" in HELP
    assert any(action == "show_help" for _, _, action in ACTIONS)
