"""The catalog as a table: tool, server, tokens; sortable (``s`` cycles tokens → name → server,
or click a column header). Biggest token hogs first by default. ``a`` toggles always_include."""

from __future__ import annotations

from typing import ClassVar, Literal

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import DataTable

from workbench.catalog import Catalog
from workbench.tui.messages import ToggleAlways
from workbench.tui.view import Counts

SortKey = Literal["tokens", "name", "server"]
SORTS: tuple[SortKey, ...] = ("tokens", "name", "server")


def sorted_indices(catalog: Catalog, per_tool: Counts, key: SortKey) -> list[int]:
    """Catalog indices in display order for ``key`` (tokens: biggest first)."""
    indices = range(len(catalog.tools))
    if key == "tokens":
        return sorted(indices, key=lambda i: (-int(per_tool[i]), i))
    if key == "name":
        return sorted(indices, key=lambda i: catalog.tools[i].full_name)
    return sorted(indices, key=lambda i: (catalog.tools[i].plugin, catalog.tools[i].name))


class CatalogTable(DataTable[Text | str]):
    """Every tool of the catalog with its token cost."""

    BORDER_TITLE = "CATALOG"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "sort", tooltip="Sort by tokens, name or server", id="sort"),
        Binding(
            "a",
            "toggle_always",
            "always",
            tooltip="Toggle always_include for this tool",
            id="catalog-always",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._catalog: Catalog | None = None
        self._per_tool: Counts = ()
        self._always: frozenset[str] = frozenset()
        self.sort_key: SortKey = "tokens"

    def on_mount(self) -> None:
        self.add_column("tool", key="name")
        self.add_column("server", key="server")
        self.add_column("tok", key="tokens")

    def set_catalog(self, catalog: Catalog, per_tool: Counts) -> None:
        self._catalog, self._per_tool = catalog, per_tool
        self._fill()

    def set_always(self, names: frozenset[str]) -> None:
        """Full names of the tools always_include currently resolves to (marked with ★)."""
        if names != self._always:
            self._always = names
            self._fill()

    def _fill(self) -> None:
        catalog = self._catalog
        if catalog is None:
            return
        row = self.cursor_row
        self.clear()
        for i in sorted_indices(catalog, self._per_tool, self.sort_key):
            tool = catalog.tools[i]
            mark = "★ " if tool.full_name in self._always else ""
            self.add_row(
                Text(mark + tool.name, style="bold" if mark else ""),
                Text(tool.plugin, style="dim"),
                Text(f"{int(self._per_tool[i]):,}", justify="right"),
                key=tool.full_name,
            )
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
