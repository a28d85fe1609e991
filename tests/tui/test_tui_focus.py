"""Where keys go: typed fast after a key that moves the focus, and with a tab that hides a table.

A user types ``Tab ]`` in one go; both keys are in the app's queue before the first is handled.
The focus must move while ``Tab`` is handled, not after the queue, or ``]`` lands in the query.
Keys are posted together here (``pilot.press`` waits between keys, which hides the race).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import TabbedContent
from tui_helpers import research_app

from workbench.tui.screens.compare import CompareEnginesScreen
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.query_input import QueryInput
from workbench.tui.widgets.ranking_table import RankingTable

SIZE = (120, 36)
QUERY = "find papers on transformers"


async def _at_once(pilot: Pilot[Any], *keys: tuple[str, str | None]) -> None:
    """Post the keys together (as a fast typist's terminal delivers them), then let them run."""
    for key, character in keys:
        pilot.app.post_message(events.Key(key, character))
    await settle(pilot)


def _dashboard(pilot: Pilot[Any]) -> DashboardScreen:
    screen = pilot.app.screen
    assert isinstance(screen, DashboardScreen)
    return screen


async def _focused(pilot: Pilot[Any], widget: type[Widget] | str) -> DashboardScreen:
    """The dashboard once it has settled, with the focus on ``widget``."""
    await settle(pilot)
    screen = _dashboard(pilot)
    screen.set_focus(screen.query_one(widget))
    await settle(pilot)
    return screen


async def test_a_key_right_after_tab_reaches_the_ranking(tmp_path: Path) -> None:
    async with research_app(tmp_path, QUERY).run_test(size=SIZE) as pilot:
        screen = await _focused(pilot, "#query")
        top_k = screen.state.setting.top_k
        await _at_once(pilot, ("tab", None), ("right_square_bracket", "]"))
        assert screen.query_one("#query", QueryInput).value == QUERY
        assert screen.state.setting.top_k == top_k + 1
        assert isinstance(screen.focused, RankingTable)


async def test_keys_right_after_slash_reach_the_query(tmp_path: Path) -> None:
    """Before: ``/x`` from the ranking opened Compare engines (``x``) instead of typing x."""
    async with research_app(tmp_path, QUERY).run_test(size=SIZE) as pilot:
        screen = await _focused(pilot, RankingTable)
        always = list(screen.state.setting.always_include)
        await _at_once(pilot, ("slash", "/"), ("x", "x"), ("a", "a"))
        assert not isinstance(pilot.app.screen, CompareEnginesScreen)
        # The query is selected when it takes the focus: what is typed replaces it.
        assert screen.query_one("#query", QueryInput).value == "xa"
        assert list(screen.state.setting.always_include) == always


async def test_the_findings_tab_takes_the_focus_and_hides_the_ranking_keys(
    tmp_path: Path,
) -> None:
    """Before: the findings tab could not take the focus, so it stayed on the hidden ranking and
    space labelled, ``a`` always-included, a tool nobody could see."""
    cases = tmp_path / "research-agent.cases.yaml"
    async with research_app(tmp_path, QUERY).run_test(size=SIZE) as pilot:
        screen = await _focused(pilot, RankingTable)
        always = list(screen.state.setting.always_include)
        await _at_once(pilot, ("d", "d"), ("space", " "), ("a", "a"))
        assert screen.query_one(TabbedContent).active == "tab-findings"
        assert screen.focused is screen.query_one("#findings-scroll")
        assert not cases.exists()
        assert list(screen.state.setting.always_include) == always
        assert screen.check_action("label", ()) is False
        # From the query, Tab goes to the findings (it was stuck in the query before).
        screen.set_focus(screen.query_one("#query", QueryInput))
        await settle(pilot)
        await _at_once(pilot, ("tab", None))
        assert screen.focused is screen.query_one("#findings-scroll")


async def test_a_tab_chosen_by_the_mouse_takes_the_focus_from_a_hidden_table(
    tmp_path: Path,
) -> None:
    async with research_app(tmp_path, QUERY).run_test(size=SIZE) as pilot:
        screen = await _focused(pilot, RankingTable)
        await pilot.click("#--content-tab-tab-findings")
        await settle(pilot)
        assert screen.query_one(TabbedContent).active == "tab-findings"
        assert not isinstance(screen.focused, RankingTable)


async def test_tab_away_from_the_query_moves_on_as_usual(tmp_path: Path) -> None:
    """Tab and shift+Tab walk the widgets from the ranking on (the query's own Tab goes to the
    results; it must not take the key from every other widget)."""
    async with research_app(tmp_path, QUERY).run_test(size=SIZE) as pilot:
        screen = await _focused(pilot, RankingTable)
        await pilot.press("tab")
        await settle(pilot)
        assert screen.focused is not None and screen.focused.id == "side"
        await pilot.press("tab")
        await settle(pilot)
        assert screen.focused is screen.query_one("#knob-enabled")
        await pilot.press("shift+tab", "shift+tab")
        await settle(pilot)
        assert isinstance(screen.focused, RankingTable)


def _typed(text: str) -> list[tuple[str, str | None]]:
    """``text`` as the keys a terminal delivers for it."""
    names = {" ": "space", "?": "question_mark"}
    return [(names.get(c, c), c) for c in text]


async def test_a_query_typed_in_one_go_keeps_its_question_mark(tmp_path: Path) -> None:
    """``?`` opens the help from an empty query, so whether it types must be decided when the
    query reads the key, not when the app does: typed fast, "time?" arrives before "time" is in
    the box."""
    async with research_app(tmp_path).run_test(size=SIZE) as pilot:
        screen = await _focused(pilot, "#query")
        await _at_once(pilot, *_typed("what time?"))
        assert pilot.app.screen is screen
        assert screen.query_one("#query", QueryInput).value == "what time?"
