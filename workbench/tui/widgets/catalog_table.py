"""The catalog as a table, sortable by tokens (biggest hogs first), name or server: ``s`` cycles,
a click on a column header picks. ``a`` toggles always_include for the highlighted tool (★);
``space`` labels it as expected for the query (✓ sent, ✗ in red missed by the setting).

Two forms: ``compact`` (tool and tokens, for the side column) and full (tool, server, tokens and
description, for the catalog tab)."""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from workbench.catalog import Catalog
from workbench.tui.messages import ToggleAlways, ToggleLabel
from workbench.tui.view import Counts
from workbench.tui.widgets.ranking_table import clip

#: The label mark of each expected tool, by full name: sent, or missed by the setting.
LabelMarks = dict[str, bool]

SortKey = Literal["tokens", "name", "server"]
SORTS: tuple[SortKey, ...] = ("tokens", "name", "server")


def sorted_indices(catalog: Catalog, per_tool: Counts, key: SortKey) -> list[int]:
    """Catalog indices in display order for ``key`` (tokens: biggest first)."""
    indices = range(len(catalog.tools))
    if key == "tokens":
        return sorted(indices, key=lambda i: (-int(per_tool[i]), i))
    if key == "name":
        return sorted(indices, key=lambda i: (catalog.tools[i].name, i))
    return sorted(indices, key=lambda i: (catalog.tools[i].plugin, catalog.tools[i].name))


class CatalogTable(DataTable[Text]):
    """Every tool of the catalog with its token cost."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "sort", tooltip="Sort by tokens, name or server", id="sort"),
        Binding(
            "a",
            "toggle_always",
            "always",
            tooltip="Toggle always_include for this tool",
            id="catalog-always",
        ),
        Binding(
            "space",
            "label",
            "label",
            tooltip="Mark this tool as expected for the query (again: unmark); saved at once",
            id="catalog-label",
        ),
    ]

    def __init__(self, *, compact: bool = False, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, cell_padding=0)
        self.compact = compact
        self._catalog: Catalog | None = None
        self._per_tool: Counts = ()
        self._always: frozenset[str] = frozenset()
        self._labels: LabelMarks = {}
        self._width = 0
        self.sort_key: SortKey = "tokens"

    def set_catalog(self, catalog: Catalog, per_tool: Counts) -> None:
        self._catalog, self._per_tool = catalog, per_tool
        self._fill()

    def set_always(self, names: frozenset[str]) -> None:
        """Full names of the tools always_include resolves to (marked with ★)."""
        if names != self._always:
            self._always = names
            self._fill()

    def set_labels(self, marks: LabelMarks) -> None:
        """The query's expected tools (full name: sent?), marked ✓ or ✗; only the rows whose
        mark changed are drawn again (this follows every ranking)."""
        if marks == self._labels:
            return
        changed = {*marks, *self._labels}
        changed -= {t for t in changed if marks.get(t) == self._labels.get(t)}
        self._labels = dict(marks)
        catalog = self._catalog
        if catalog is None or not self.row_count:
            return
        tool_width, _ = self._columns()
        for name in changed:
            tool = catalog.get(name)
            if tool is not None and name in self.rows:
                cell = self._name_cell(tool.full_name, tool.name, tool_width)
                self.update_cell(name, "name", cell)

    def _name_cell(self, full_name: str, name: str, width: int) -> Text:
        """★ (always_include), the label mark, and the name cut to the column."""
        always = full_name in self._always
        label = self._labels.get(full_name)
        room = width - 3
        shown = name if len(name) <= room else name[: room - 1] + "…"
        text = Text("★" if always else " ", style="bold")
        if label is None:
            text.append(" ")
        else:
            text.append("✓" if label else "✗", style="bold green" if label else "bold red")
        text.append(shown, style="bold" if always else "bold red" if label is False else "")
        return text

    def on_resize(self) -> None:
        if self.size.width != self._width:
            self._fill()

    def _columns(self) -> tuple[int, int]:
        """(tool width, server width); re-made when the widget's width changes."""
        width = max(self.size.width - 2, 20)
        server = 0 if self.compact else 12
        tool = width - 7 - server if self.compact else min(32, width - 7 - server - 10)
        if width != self._width:
            self.clear(columns=True)
            self.add_column(" tool", width=tool, key="name")
            if not self.compact:
                self.add_column(" server", width=server, key="server")
            self.add_column(Text("tok ", justify="right"), width=7, key="tokens")
            if not self.compact:
                self.add_column(
                    " description", width=max(width - tool - server - 7, 10), key="description"
                )
            self._width = width
        return tool, server

    def _fill(self) -> None:
        catalog = self._catalog
        if catalog is None or not self.size.width:
            return
        row = self.cursor_row
        tool_width, server_width = self._columns()
        self.clear()
        for i in sorted_indices(catalog, self._per_tool, self.sort_key):
            tool = catalog.tools[i]
            cells = [self._name_cell(tool.full_name, tool.name, tool_width)]
            if not self.compact:
                cells.append(Text(" " + clip(tool.plugin, server_width - 1), style="dim"))
            cells.append(Text(f"{int(self._per_tool[i]):>6,} "))
            if not self.compact:
                cells.append(Text(" " + tool.description.replace("\n", " "), style="dim"))
            self.add_row(*cells, key=tool.full_name)
        self.border_title = f"CATALOG by {self.sort_key}"
        if self.row_count:
            self.move_cursor(row=min(row, self.row_count - 1), animate=False)

    def action_cycle_sort(self) -> None:
        self.sort_key = SORTS[(SORTS.index(self.sort_key) + 1) % len(SORTS)]
        self._fill()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = str(event.column_key.value)
        if key in SORTS:
            self.sort_key = key  # type: ignore[assignment]
            self._fill()

    def highlighted_tool(self) -> str | None:
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        return None if key.value is None else str(key.value)

    def action_toggle_always(self) -> None:
        tool = self.highlighted_tool()
        if tool is not None:
            self.post_message(ToggleAlways(tool))

    def action_label(self) -> None:
        tool = self.highlighted_tool()
        if tool is not None:
            self.post_message(ToggleLabel(tool))
