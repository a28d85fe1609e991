"""semantic, bm25 and hybrid rankings of the same query side by side, each with what the
current setting would send under that method (● sent, the rest dim), and the model that scored."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Label

from workbench.config.filtering import SEARCH_METHODS
from workbench.tui.view import CutRow, RankRow


def column_title(method: str, model_id: str | None, fallback: str | None) -> Text:
    """The heading of one method's column: what really produced its scores."""
    text = Text(method, style="bold")
    if fallback:
        text.append(" = BM25", style="bold yellow")
    elif model_id and method != "bm25":
        text.append(f" · {model_id}", style="dim")
    return text


class CompareColumn(Vertical):
    """One method's ranking, compact: rank, tool, score."""

    def __init__(self, method: str) -> None:
        super().__init__(id=f"compare-{method}", classes="compare-column")
        self.method = method

    def compose(self) -> ComposeResult:
        yield Label(self.method, classes="compare-title")
        table: DataTable[Text] = DataTable(cursor_type="row", show_header=False)
        yield table

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("#", key="rank")
        table.add_column("tool", key="tool")
        table.add_column("score", key="score")

    def show(self, title: Text, rows: Sequence[RankRow | CutRow]) -> None:
        self.query_one(".compare-title", Label).update(title)
        table: DataTable[Text] = self.query_one(DataTable)
        table.clear()
        room = max(self.size.width - 12, 8)
        for n, row in enumerate(rows):
            if isinstance(row, CutRow):
                table.add_row(
                    Text(""), Text("─ " * (room // 2), style="yellow"), Text(""), key=f"cut:{n}"
                )
                continue
            sent = row.reason is not None
            style = "bold green" if sent else "dim"
            name = row.tool if len(row.tool) <= room else row.tool[: room - 1] + "…"
            table.add_row(
                Text(str(row.rank), style="dim"),
                Text(("● " if sent else "  ") + name, style=style),
                Text(f"{row.score:.2f}", style=style),
                key=row.tool,
            )

    def tools(self) -> list[str]:
        table: DataTable[Text] = self.query_one(DataTable)
        return [
            str(k.value)
            for k in table.rows
            if k.value is not None and not str(k.value).startswith("cut:")
        ]


class CompareView(Horizontal):
    """Three columns, one per search method."""

    def compose(self) -> ComposeResult:
        for method in SEARCH_METHODS:
            yield CompareColumn(method)

    def column(self, method: str) -> CompareColumn:
        return self.query_one(f"#compare-{method}", CompareColumn)
