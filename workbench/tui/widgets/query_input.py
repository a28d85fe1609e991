"""The query input: focused when the app opens; ↓ moves into the results."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Input

#: Printable keys whose Textual names do not map back to a character (so the stock Input would
#: let a screen binding on them fire instead of typing them).
TYPED_KEYS = frozenset({"minus", "plus", "slash", "underscore", "full_stop", "comma"})


class QueryInput(Input):
    """A user message to rank the tools for."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down,tab", "screen.focus_results", "results", show=False, id="to-results"),
    ]

    def _watch_value(self, value: str) -> None:
        """Input grows its ``virtual_size`` (a layout reactive) with every character, which
        re-lays out the whole dashboard on each keystroke; this box never changes size, so the
        new size is set without that (a repaint still follows)."""
        self.set_reactive(Widget.virtual_size, Size(self.content_width, 1))
        super()._watch_value(value)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Every printable key types into the query, never triggers a knob."""
        return key in TYPED_KEYS or super().check_consume_key(key, character)
