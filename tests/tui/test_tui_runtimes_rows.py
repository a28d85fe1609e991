"""Which runtime? (``w``) shows every runtime's row at 160x48, and a smaller terminal shows its
scrollbar: a row below is never hidden without a sign (it showed 5 of 9 rows, nothing said)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable
from tui_helpers import open_view, research_app

from workbench.runtimes import runtime_names
from workbench.tui.screens.runtimes import COLUMNS, SHORT, WhichRuntimeScreen


async def _filled(
    tmp_path: Path, size: tuple[int, int], check: Callable[[DataTable[Text]], None]
) -> None:
    """The view with a row per runtime as a run draws them (the three budgets' columns too, so
    the table is as wide as after a run and scrolls sideways)."""
    app = research_app(tmp_path)
    async with app.run_test(size=size) as pilot:
        screen = await open_view(pilot, WhichRuntimeScreen, "w")
        table: DataTable[Text] = screen.query_one("#rt-table", DataTable)
        table.clear(columns=True)
        labels = [label for label, _ in COLUMNS[:-1]] + [f"{s} 1,234" for s in SHORT]
        for label in [*labels, COLUMNS[-1][0]]:
            table.add_column(Text(label), key=label)
        for name in runtime_names():
            cells = [name, "0.900 [0.80, 0.95]", "0.850 [0.75, 0.92]", "1,234 1,100-1,400"]
            cells += ["0.85 · 1,234 tok"] * len(SHORT)
            cells.append("search_method bm25, top_k 5, similarity_threshold 0.5 " * 2)
            table.add_row(*(Text(c) for c in cells), key=name)
        await pilot.pause()
        await pilot.pause()
        check(table)


def _all_shown(table: DataTable[Text]) -> None:
    assert table.row_count == len(runtime_names()) >= 9
    assert table.max_scroll_y == 0, "rows hidden below the table"


def _scrollbar_when_hidden(table: DataTable[Text]) -> None:
    if table.max_scroll_y > 0:
        assert table.show_vertical_scrollbar and table.scrollbar_size_vertical > 0


async def test_every_runtime_row_shows_at_160x48(tmp_path: Path) -> None:
    await _filled(tmp_path, (160, 48), _all_shown)


async def test_a_smaller_terminal_shows_the_scrollbar_for_rows_below(tmp_path: Path) -> None:
    await _filled(tmp_path, (120, 24), _scrollbar_when_hidden)
