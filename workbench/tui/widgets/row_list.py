"""A fast, read-only table: a header line and rows of pre-styled text with a row cursor.

The ranking is redrawn on every keystroke, and DataTable's per-cell rendering costs tens of
milliseconds per frame at this size; this widget renders only the visible rows, each from one
``Text`` turned into a strip once per update. Up/down/page/home/end move the cursor (skipping
separator rows), the mouse wheel and clicks work, and the cursor stays in view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget


@dataclass(frozen=True)
class Line:
    """One row: ``key`` names it (None for a separator the cursor skips)."""

    key: str | None
    text: Text


class RowList(Widget, can_focus=True):
    """Rows of text under a header, with a cursor."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "up", show=False),
        Binding("down", "move(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "jump(0)", "first", show=False),
        Binding("end", "jump(1)", "last", show=False),
        Binding("enter", "choose", "choose", show=False),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {"row-list--header", "row-list--cursor"}
    DEFAULT_CSS = """
    RowList { height: 1fr; }
    RowList > .row-list--header { text-style: bold; background: $panel; }
    RowList > .row-list--cursor { background: $surface-lighten-2; }
    RowList:focus > .row-list--cursor { background: $accent 40%; }
    """

    cursor: reactive[int] = reactive(0, init=False)

    @dataclass
    class Chosen(Message):
        """Enter on a row."""

        row_list: RowList
        key: str

    @dataclass
    class Highlighted(Message):
        """The cursor moved to another row."""

        row_list: RowList
        key: str | None

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._header = Text()
        self._lines: list[Line] = []
        self._strips: dict[int, Strip] = {}
        self._top = 0
        self._base = self._header_style = self._cursor_style = Style()

    # -- content ---------------------------------------------------------------------------
    def set_lines(self, header: Text, lines: Sequence[Line], *, cursor_key: str | None) -> None:
        """Replace the content; the cursor goes to ``cursor_key`` if shown, else the first row
        (never to a separator: their key is None, so None never names a row to keep)."""
        before = self.highlighted_key()
        self._header = header
        self._lines = list(lines)
        self._strips.clear()
        keys = [line.key for line in self._lines]
        kept = cursor_key is not None and cursor_key in keys
        target = keys.index(cursor_key) if kept else self._first_row()
        if not kept:
            self._top = 0
        if target == self.cursor:
            # Same index, maybe another row under it: say so (the watcher does not run).
            self._scroll_to_cursor()
            if self.highlighted_key() != before:
                self.post_message(self.Highlighted(self, self.highlighted_key()))
        self.cursor = target
        self.refresh()

    @property
    def lines(self) -> list[Line]:
        return list(self._lines)

    @property
    def row_count(self) -> int:
        return len(self._lines)

    def highlighted_key(self) -> str | None:
        if 0 <= self.cursor < len(self._lines):
            return self._lines[self.cursor].key
        return None

    def keys(self) -> list[str]:
        return [line.key for line in self._lines if line.key is not None]

    def move_to(self, key: str) -> None:
        self.cursor = [line.key for line in self._lines].index(key)

    def _first_row(self) -> int:
        return next((i for i, line in enumerate(self._lines) if line.key is not None), 0)

    # -- cursor ----------------------------------------------------------------------------
    def validate_cursor(self, value: int) -> int:
        return min(max(value, 0), max(len(self._lines) - 1, 0))

    def watch_cursor(self) -> None:
        self._scroll_to_cursor()
        self.refresh()
        self.post_message(self.Highlighted(self, self.highlighted_key()))

    @property
    def _body_height(self) -> int:
        return max(self.size.height - 1, 1)

    def _scroll_to_cursor(self) -> None:
        height = self._body_height
        if self.cursor < self._top:
            self._top = self.cursor
        elif self.cursor >= self._top + height:
            self._top = self.cursor - height + 1
        self._top = max(0, min(self._top, max(len(self._lines) - height, 0)))

    def _step(self, start: int, direction: int) -> int:
        """The next row from ``start`` in ``direction`` that is not a separator."""
        index = start
        while 0 <= index + direction < len(self._lines):
            index += direction
            if self._lines[index].key is not None:
                return index
        return start

    def action_move(self, direction: int) -> None:
        self.cursor = self._step(self.cursor, direction)

    def action_page(self, direction: int) -> None:
        target = self.validate_cursor(self.cursor + direction * self._body_height)
        if self._lines and self._lines[target].key is None:
            target = self._step(target, direction) if direction else target
        self.cursor = target

    def action_jump(self, end: int) -> None:
        if end:
            self.cursor = self._step(len(self._lines), -1)
        else:
            self.cursor = self._first_row()

    def action_choose(self) -> None:
        key = self.highlighted_key()
        if key is not None:
            self.post_message(self.Chosen(self, key))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        event.stop()
        self._top = min(self._top + 3, max(len(self._lines) - self._body_height, 0))
        self.refresh()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        self._top = max(self._top - 3, 0)
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        row = self._top + event.y - 1
        if event.y >= 1 and 0 <= row < len(self._lines) and self._lines[row].key is not None:
            self.cursor = row

    def on_resize(self) -> None:
        self._strips.clear()
        self._scroll_to_cursor()

    # -- drawing ---------------------------------------------------------------------------
    def _strip(self, text: Text, width: int, style: Style) -> Strip:
        # Text.render leaves out the text's own base style (its spans keep theirs): put it
        # under the spans here, then the widget's style under everything.
        own = text.style if isinstance(text.style, Style) else Style.parse(text.style or "none")
        segments = Segment.apply_style(text.render(self.app.console), style=own)
        return Strip(list(segments)).crop_extend(0, width, style).apply_style(style)

    def render_lines(self, crop: Region) -> list[Strip]:
        # The styles are looked up once per frame, not once per line.
        self._base = self.rich_style
        self._header_style = self._base + self.get_component_rich_style("row-list--header")
        self._cursor_style = self._base + self.get_component_rich_style("row-list--cursor")
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self._base
        if y == 0:
            return self._strip(self._header, width, self._header_style)
        index = self._top + y - 1
        if index >= len(self._lines):
            return Strip([Segment(" " * width, base)], width)
        if index == self.cursor and self._lines[index].key is not None:
            return self._strip(self._lines[index].text, width, self._cursor_style)
        strip = self._strips.get(index)
        if strip is None:
            strip = self._strips[index] = self._strip(self._lines[index].text, width, base)
        return strip
