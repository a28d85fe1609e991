"""The ranking of one query: rank, tool, server, score with an inline bar, tokens and why the
tool is sent; separator rows mark where top_k and the threshold cut. ``a`` toggles the
highlighted tool in always_include."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from workbench.tui.messages import ToggleAlways
from workbench.tui.view import REASON_LABEL, CutRow, RankRow, bar

BAR_WIDTH = 6
#: Columns other than the tool name take about this many cells (with cell padding).
_FIXED = 4 + 12 + 13 + 7 + 8


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


class RankingTable(DataTable[Text | str]):
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

    def __init__(self, *, id: str | None = None, show_server: bool = True) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.show_server = show_server
        self._rows: list[RankRow | CutRow] = []

    def on_mount(self) -> None:
        self.add_column("#", key="rank")
        self.add_column("tool", key="tool")
        if self.show_server:
            self.add_column("server", key="server")
        self.add_column("score", key="score")
        self.add_column("tok", key="tokens")
        self.add_column("why", key="why")

    @property
    def rows_shown(self) -> list[RankRow | CutRow]:
        return list(self._rows)

    def show(self, rows: Sequence[RankRow | CutRow]) -> None:
        """Replace the rows (keeps the cursor on the same tool where it can)."""
        current = self.highlighted_tool()
        self._rows = list(rows)
        self.clear()
        room = max(self.size.width - _FIXED - (12 if self.show_server else 0), 12)
        target = 0
        for n, row in enumerate(rows):
            if isinstance(row, CutRow):
                self.add_row(*self._cut_cells(row), key=f"cut:{n}")
                continue
            if row.tool == current:
                target = self.row_count
            self.add_row(*self._cells(row, room), key=row.tool)
        if self.row_count:
            self.move_cursor(row=target, animate=False, scroll=False)

    def _cells(self, row: RankRow, room: int) -> list[Text | str]:
        sent = row.reason is not None
        style = "bold" if sent else "dim"
        name = row.tool.split("-", 1)[1] if self.show_server and "-" in row.tool else row.tool
        score = Text(bar(row.score, BAR_WIDTH), style="green" if sent else "grey50")
        score.append(f" {row.score:.2f}", style=style)
        cells: list[Text | str] = [
            Text(str(row.rank), style="dim", justify="right"),
            Text(_clip(name, room), style=style),
        ]
        if self.show_server:
            cells.append(Text(_clip(row.server, 12), style="dim"))
        why = REASON_LABEL[row.reason] if row.reason else ""
        cells += [
            score,
            Text(f"{row.tokens:,}", justify="right", style=style),
            Text(why, style="cyan" if why == "search" else "magenta"),
        ]
        return cells

    def _cut_cells(self, row: CutRow) -> list[Text | str]:
        line = Text(f"─ ─ {row.label} ─ ─", style="yellow")
        dashes = Text("─ ─", style="yellow dim")
        cells: list[Text | str] = [Text("", style="dim"), line]
        if self.show_server:
            cells.append(dashes)
        return [*cells, dashes, Text(""), Text("")]

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
