"""A query at the 64 KiB limit (serve's, and ``search``'s): the query box takes no more and says
so, and every key typed or deleted there is ranked again, the ranking that of the text in the box.

Behaviour only: the time a key takes at 64 KiB is ``make bench``'s (benchmarks/bench_tui.py).
"""

from __future__ import annotations

import time
from pathlib import Path

from textual import events
from textual.pilot import Pilot
from tui_helpers import research_app

from workbench.limits import MAX_QUERY_BYTES, query_bytes
from workbench.tui.app import HoloTuneApp
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle
from workbench.tui.view import RankRow
from workbench.tui.widgets.query_input import FULL, QueryInput
from workbench.tui.widgets.ranking_table import RankingTable

SIZE = (120, 36)
#: Words no tool of the research agent holds (BM25 scores them 0 for every tool), 8 bytes: the
#: limit cuts a paste of them between two.
FILLER = "zq xvzz "
PATIENCE = 20.0


def _tools(app: HoloTuneApp) -> list[str]:
    rows = app.screen.query_one(RankingTable).rows_shown
    return [row.tool for row in rows if isinstance(row, RankRow)]


async def _ranked_again(pilot: Pilot[None], screen: DashboardScreen, box: QueryInput) -> None:
    """Wait until the ranking drawn is the one of the text in the box."""
    deadline = time.monotonic() + PATIENCE
    while screen.shown_query != box.value.strip():
        assert time.monotonic() < deadline, "the key was never ranked"
        await pilot.pause(0.01)


def _core_top(screen: DashboardScreen, text: str, n: int = 5) -> list[str]:
    """The core's ranking of ``text`` (what ``holo-tune search`` ranks), best first."""
    assert screen.lab is not None
    ws = screen.lab.workspace
    ranking = ws.engine.rank(text.strip(), screen.state.setting.search_method)
    return [ws.catalog.tools[i].full_name for i in ranking.order.tolist()[:n]]


async def test_typing_and_deleting_at_64_kib_ranks_every_key(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen) and screen.lab is not None
        box = screen.query_one("#query", QueryInput)
        assert not box.border_subtitle

        # A paste longer than the limit: cut to fit, and said (a notification, the border).
        pasted = FILLER * (MAX_QUERY_BYTES // len(FILLER) + 1000)
        box.post_message(events.Paste(pasted))
        await pilot.pause()
        await _ranked_again(pilot, screen, box)
        assert query_bytes(box.value) == MAX_QUERY_BYTES and pasted.startswith(box.value)
        assert box.border_subtitle == FULL
        notes = [n for n in app._notifications if n.title == "query limit"]
        dropped = len(pasted) - MAX_QUERY_BYTES
        assert len(notes) == 1 and f"{dropped:,} bytes were left out" in notes[0].message

        # Delete room for a word, then type it: each key is ranked, and the word wins.
        for _ in range(len(" news")):
            await pilot.press("backspace")
            await _ranked_again(pilot, screen, box)
        assert not box.border_subtitle
        for key in ["space", *"news"]:
            await pilot.press(key)
            await _ranked_again(pilot, screen, box)
            assert _tools(app)[:5] == _core_top(screen, box.value)
        assert box.value.endswith("news") and query_bytes(box.value) == MAX_QUERY_BYTES
        word_top = _core_top(screen, "news")  # the filler scores nothing: the word ranks
        assert _tools(app)[:5] == word_top and word_top != _core_top(screen, FILLER)
        assert box.border_subtitle == FULL

        # The box is full: a key is refused (the text and its ranking stay), a delete ranks.
        await pilot.press("s")
        await pilot.pause()
        assert box.value.endswith("news") and query_bytes(box.value) == MAX_QUERY_BYTES
        for _ in range(len("news")):
            await pilot.press("backspace")
            await _ranked_again(pilot, screen, box)
            assert _tools(app)[:5] == _core_top(screen, box.value)
        assert _tools(app)[:5] == _core_top(screen, FILLER) != word_top
        assert screen.query_text == box.value and box.value.endswith(" ")


async def test_a_query_given_at_start_is_one_line_cut_at_the_limit(tmp_path: Path) -> None:
    """``--query`` (or a labelled query run again) is a value set directly: one line (a line
    break in a long query made every key take seconds), cut too, and said."""
    app = research_app(tmp_path, query="search\npapers " + "é" * MAX_QUERY_BYTES)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        box = screen.query_one("#query", QueryInput)
        assert box.value.startswith("search papers ") and "\n" not in box.value
        assert MAX_QUERY_BYTES - 1 <= query_bytes(box.value) <= MAX_QUERY_BYTES
        assert screen.query_text == box.value and box.border_subtitle == FULL
        assert any(n.title == "query limit" for n in app._notifications)


async def test_a_long_query_is_drawn_as_input_draws_it(tmp_path: Path) -> None:
    """Above WINDOWED characters the box draws only the characters in view: the line is Input's
    own, cell for cell and style for style, with the cursor at the start, inside and at the end,
    a selection, and characters two cells wide (Input's full render is the oracle)."""
    from textual.widgets import Input

    from workbench.tui.widgets.query_input import WINDOWED, cell_starts

    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.screen.query_one("#query", QueryInput)
        text = ("find 论文 on attention, é ok; " * 200)[: WINDOWED * 3]
        box.value = text
        await settle(pilot)
        assert box._windowed() and cell_starts(text)[-1] > len(text)  # wide characters in it
        for place in (0, 1, WINDOWED, len(text) // 2 + 1, len(text) - 3, len(text)):
            box.cursor_position = place
            await pilot.pause()
            assert box._position_to_cell(place) == Input._position_to_cell(box, place)
            assert list(box.render_line(0)) == list(Input.render_line(box, 0)), place
        box.selection = type(box.selection)(len(text) - 40, len(text) - 5)
        await pilot.pause()
        assert list(box.render_line(0)) == list(Input.render_line(box, 0))
        assert box.content_width == Input.content_width.fget(box)  # type: ignore[attr-defined]
