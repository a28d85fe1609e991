"""The query input: focused when the app opens; ↓ moves into the results, F1 opens the help
(``?`` too while the query is empty; after text it types, see :class:`TextBox`).

It takes at most :data:`~workbench.limits.MAX_QUERY_BYTES` (64 KiB of UTF-8, what ``search``
and serve rank): a paste that would go over is cut to fit and a key typed into a full box is
refused (the bell), each time with a :class:`QueryInput.Capped` message saying what was left
out; while the box is full its border says so.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import ClassVar

from rich.cells import get_character_cell_size
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import Reactive
from textual.strip import Strip

from workbench.limits import MAX_QUERY_BYTES, query_bytes
from workbench.tui.widgets.text_box import TextBox

#: The border's note while the box is full (no room for one more character of any width).
FULL = f"full: {MAX_QUERY_BYTES:,} bytes, the query limit"
#: The widest character, in bytes of UTF-8.
WIDEST = 4
#: Line breaks (what ``str.splitlines`` splits on) become spaces: the box is one line, and
#: Textual's Input measures a line with a regular expression that takes the square of the
#: length before a line break (a 5.7 KB query with one: a second per measure, several per key).
ONE_LINE = str.maketrans(dict.fromkeys("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


#: Above this many characters the box draws only the characters in view: Input renders, measures
#: and crops the whole value on every frame, character by character where it is not plain ASCII
#: (a 64 KiB query: tens of milliseconds a frame, several frames a key).
WINDOWED = 1_000
#: What is not one cell wide in plain ASCII (the characters whose width is looked up).
_NOT_ONE_CELL = re.compile(r"[^\x20-\x7e]")


@lru_cache(maxsize=4)
def cell_starts(value: str) -> tuple[int, ...]:
    """The cell where each character of ``value`` starts, and its whole width last
    (``len(value) + 1`` entries): one pass, a width looked up only where it may not be 1."""
    widths = [1] * len(value)
    for found in _NOT_ONE_CELL.finditer(value):
        widths[found.start()] = get_character_cell_size(found.group())
    return (0, *accumulate(widths))


def fit(text: str, room: int) -> str:
    """The longest start of ``text`` that takes at most ``room`` bytes of UTF-8 (whole
    characters only)."""
    if query_bytes(text) <= room:
        return text
    if text.isascii():
        return text[: max(room, 0)]
    cut = text.encode("utf-8", "surrogatepass")[: max(room, 0)]
    return cut.decode("utf-8", "ignore")


class QueryInput(TextBox):
    """A user message to rank the tools for."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # ↓ and Tab into the results are the dashboard's (priority bindings: see its actions).
        # ? types into a query that holds text, so the footer shows F1 here (the screen's ?
        # binding is off while the query has focus); ? still opens the help from an empty query.
        Binding(
            "f1",
            "screen.show_help",
            "help",
            key_display="F1",
            tooltip="Keys and what they do (? too while the query is empty; after text it types)",
            id="query-help",
        ),
        Binding(
            "question_mark",
            "screen.show_help",
            "help",
            show=False,
            tooltip="Keys and what they do (from the empty query)",
            id="query-help-question",
        ),
    ]

    #: Input sets its virtual size on every keystroke, and the layout it sees after a layout
    #: differs from that, so with the stock reactive (``layout=True``) each keystroke re-lays out
    #: the whole dashboard. This box never changes size: a new virtual size only repaints it.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=True)

    @dataclass
    class Capped(Message):
        """The box is at the query limit: ``dropped`` bytes of what was typed or pasted were
        left out."""

        dropped: int

    def replace(self, text: str, start: int, end: int) -> None:
        """Input's every edit (typing, paste, delete): what is inserted is cut to the room the
        limit leaves; nothing fits: the bell."""
        value = self.value
        start, end = sorted((max(0, start), min(len(value), end)))
        room = MAX_QUERY_BYTES - query_bytes(value[:start]) - query_bytes(value[end:])
        kept = fit(text, room)
        if len(kept) < len(text):
            self.post_message(self.Capped(query_bytes(text) - query_bytes(kept)))
            if not kept and start == end:
                self.restricted()
                return
        super().replace(kept, start, end)

    def validate_value(self, value: str) -> str:
        """Every value is one line (line breaks become spaces, the length kept); a value set
        directly (``--query``, the history, a labelled query) is cut at the limit too."""
        value = value.translate(ONE_LINE)
        kept = fit(value, MAX_QUERY_BYTES)
        if len(kept) < len(value):
            self.post_message(self.Capped(query_bytes(value) - query_bytes(kept)))
        return kept

    def _windowed(self) -> bool:
        value = self.value
        return len(value) > WINDOWED and "\t" not in value and not self.password

    def _position_to_cell(self, position: int) -> int:
        if not self._windowed():
            return super()._position_to_cell(position)
        return cell_starts(self.value)[max(0, min(position, len(self.value)))]

    @property
    def content_width(self) -> int:
        if not self._windowed():
            return super().content_width
        return cell_starts(self.value)[-1] + 1

    def render_line(self, y: int) -> Strip:
        """Input's line, drawn from the characters in view only when the value is long (the
        same cursor and selection styles; suggestions are not offered at that length)."""
        if y != 0 or not self._windowed():
            return super().render_line(y)
        value = self.value
        starts = cell_starts(value)
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_offset.x)
        first = max(bisect_right(starts, scroll_x) - 1, 0)
        last = min(bisect_right(starts, scroll_x + width + 1) + 1, len(value))
        text = Text(value[first:last], no_wrap=True, overflow="ignore", end="")
        if self.has_focus:
            if not self.selection.is_empty:
                start, end = sorted(self.selection)
                style = self.get_component_rich_style("input--selection")
                text.stylize_before(style, max(start - first, 0), max(end - first, 0))
            if self._cursor_visible:
                cursor = self.cursor_position - first
                if self.cursor_at_end:
                    text.pad_right(1)
                if 0 <= cursor <= len(text):
                    text.stylize(self.get_component_rich_style("input--cursor"), cursor, cursor + 1)
        console = self.app.console
        options = self.app.console_options.update_width(text.cell_len + 1)
        strip = Strip(list(console.render(text, options)))
        offset = scroll_x - starts[first]
        strip = strip.crop(offset, offset + width + 1).extend_cell_length(width + 1)
        return strip.apply_style(self.rich_style)

    def watch_value(self, value: str) -> None:
        self.border_subtitle = FULL if query_bytes(value) > MAX_QUERY_BYTES - WIDEST else ""
