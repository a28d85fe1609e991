"""semantic, bm25 and hybrid rankings of the same query side by side, each with what the
current setting would send under that method (● sent, the rest dim; a labelled query's expected
tools ✓ sent or ✗ in red missed), and the model that scored."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from workbench.config.filtering import SEARCH_METHODS
from workbench.tui.view import CutRow, RankRow
from workbench.tui.widgets.row_list import Line, RowList


def column_title(method: str, model_id: str | None, fallback: str | None) -> Text:
    """The heading of one method's column: what really produced its scores (the model's name
    without its provider prefix, to fit one line)."""
    text = Text(method, style="bold")
    if fallback:
        text.append(" = BM25", style="bold yellow")
    elif model_id and method != "bm25":
        text.append(f" · {model_id.rpartition(':')[2]}", style="dim")
    return text


def compare_line(row: RankRow, width: int) -> Text:
    """``rank ● tool score`` in ``width`` cells (pure); the score with the ranking's decimals,
    so that none rounds across the threshold line."""
    sent = row.reason is not None
    missed = row.expected and not sent
    style = "bold green" if sent else "bold red" if missed else "dim"
    room = max(width - 8 - row.digits, 6)
    prefix = f"{row.server}-"
    name = row.tool[len(prefix) :] if row.tool.startswith(prefix) else row.tool
    name = name if len(name) <= room else name[: room - 1] + "…"
    text = Text()
    text.append(f"{row.rank:>2} ", style="dim")
    mark = ("✓" if sent else "✗") if row.expected else "●" if sent else " "
    text.append(mark + name.ljust(room), style=style)
    text.append(f" {row.score:.{row.digits}f}", style=style)
    return text


class CompareColumn(Vertical):
    """One method's ranking, compact: rank, tool, score (redrawn to its width on resize)."""

    def __init__(self, method: str) -> None:
        super().__init__(id=f"compare-{method}", classes="compare-column")
        self.method = method
        self._rows: Sequence[RankRow | CutRow] = ()

    def compose(self) -> ComposeResult:
        yield Label(self.method, classes="compare-title")
        yield RowList()

    def show(self, title: Text, rows: Sequence[RankRow | CutRow]) -> None:
        self.query_one(".compare-title", Label).update(title)
        self._rows = rows
        self._draw()

    def on_resize(self) -> None:
        # the rows are laid out for a width: draw them again once the new one is known
        self.call_after_refresh(self._draw)

    def _draw(self) -> None:
        table = self.query_one(RowList)
        width = table.size.width or 30
        lines = [
            Line(None, Text(" " + "─ " * (width // 2 - 1), style="yellow"))
            if isinstance(row, CutRow)
            else Line(row.tool, compare_line(row, width))
            for row in self._rows
        ]
        table.set_lines(Text(" # tool"), lines, cursor_key=None)

    def tools(self) -> list[str]:
        return self.query_one(RowList).keys()


class CompareView(Horizontal):
    """Three columns, one per search method."""

    def compose(self) -> ComposeResult:
        for method in SEARCH_METHODS:
            yield CompareColumn(method)

    def column(self, method: str) -> CompareColumn:
        return self.query_one(f"#compare-{method}", CompareColumn)
