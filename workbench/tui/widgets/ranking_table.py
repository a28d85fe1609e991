"""The ranking of one query: rank, tool, server, score with an inline bar, tokens and why the
tool is sent; separator rows mark where top_k and the threshold cut. ``a`` toggles the
highlighted tool in always_include.

Column widths follow the widget's width (the tool name takes what is left), so the table fits
without horizontal scrolling from 80 columns up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from workbench.tui.messages import ToggleAlways
from workbench.tui.view import REASON_LABEL, CutRow, RankRow, bar

BAR_WIDTH = 5


@dataclass(frozen=True)
class Widths:
    rank: int
    tool: int
    server: int
    score: int = BAR_WIDTH + 6
    tokens: int = 7
    why: int = 7


def widths_for(total: int) -> Widths:
    """Column widths for a table ``total`` cells wide (pure: unit-tested). Below 58 cells the
    server column goes (the tool column keeps at least 12)."""
    avail = max(total - 2, 40)  # the vertical scrollbar
    server = 10 if avail >= 66 else 8 if avail >= 56 else 0
    fixed = 4 + server + (BAR_WIDTH + 6) + 7 + 7
    return Widths(rank=4, tool=max(avail - fixed, 12), server=server)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells with an ellipsis."""
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


class RankingTable(DataTable[Text]):
    """A ranking with its cut lines; the selected tools stand out."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "toggle_always",
            "always",
            tooltip="Toggle always_include for this tool",
            id="ranking-always",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, cell_padding=0)
        self._rows: list[RankRow | CutRow] = []
        self._widths: Widths | None = None

    @property
    def rows_shown(self) -> list[RankRow | CutRow]:
        return list(self._rows)

    def _columns(self) -> Widths:
        widths = widths_for(self.size.width or 60)
        if widths != self._widths:
            self.clear(columns=True)
            self.add_column(Text("#", justify="right"), width=widths.rank, key="rank")
            self.add_column(" tool", width=widths.tool, key="tool")
            if widths.server:
                self.add_column(" server", width=widths.server, key="server")
            self.add_column(" score", width=widths.score, key="score")
            self.add_column(Text("tok ", justify="right"), width=widths.tokens, key="tokens")
            self.add_column(" why", width=widths.why, key="why")
            self._widths = widths
        return widths

    def on_resize(self) -> None:
        if self._rows:
            self.show(self._rows)

    def show(self, rows: Sequence[RankRow | CutRow], *, follow: bool = True) -> None:
        """Replace the rows; with ``follow`` the cursor stays on the same tool where it can
        (a knob moved), else it goes to the top (a new query)."""
        current = self.highlighted_tool() if follow else None
        self._rows = list(rows)
        widths = self._columns()
        self.clear()
        target = 0
        for n, row in enumerate(rows):
            if isinstance(row, CutRow):
                self.add_row(*self._cut_cells(row, widths), key=f"cut:{n}")
                continue
            if row.tool == current:
                target = self.row_count
            self.add_row(*self._cells(row, widths), key=row.tool)
        if self.row_count:
            self.move_cursor(row=target, animate=False, scroll=False)

    def _cells(self, row: RankRow, w: Widths) -> list[Text]:
        sent = row.reason is not None
        style = "bold" if sent else "dim"
        prefix = f"{row.server}-"
        name = row.tool[len(prefix) :] if row.tool.startswith(prefix) else row.tool
        score = Text(" " + bar(row.score, BAR_WIDTH), style="green" if sent else "grey50")
        score.append(f" {row.score:.2f}", style=style)
        why = REASON_LABEL[row.reason] if row.reason else ""
        cells = [
            Text(f"{row.rank:>{w.rank - 1}} ", style="dim"),
            Text(" " + clip(name, w.tool - 1), style=style),
        ]
        if w.server:
            cells.append(Text(" " + clip(row.server, w.server - 1), style="dim"))
        return [
            *cells,
            score,
            Text(f"{row.tokens:>{w.tokens - 1},} ", style=style),
            Text(" " + why, style="cyan" if why == "search" else "magenta"),
        ]

    def _cut_cells(self, row: CutRow, w: Widths) -> list[Text]:
        label = f" ─ ─ {row.label} "
        line = Text(label + "─ " * max((w.tool - len(label)) // 2, 0), style="yellow")
        widths = (w.server, w.score) if w.server else (w.score,)
        dashes = [Text(" " + "─ " * (n // 2), style="yellow") for n in widths]
        return [Text(""), line, *dashes, Text(""), Text("")]

    def highlighted_tool(self) -> str | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        if key is None or key.startswith("cut:"):
            return None
        return key

    def action_toggle_always(self) -> None:
        tool = self.highlighted_tool()
        if tool is not None:
            self.post_message(ToggleAlways(tool))
