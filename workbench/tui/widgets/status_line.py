"""One line under the query: what scored the ranking and how long it took, or what is loading.

A reactive repaint (no layout pass), since it changes on every keystroke."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class StatusLine(Widget):
    """``text`` drawn in one line; ``error`` colours it."""

    DEFAULT_CSS = "StatusLine { height: 1; padding: 0 1; color: $text-muted; }"

    text: reactive[str] = reactive("")
    error: reactive[bool] = reactive(False)

    def render(self) -> Text:
        return Text(
            self.text, style="bold red" if self.error else "", no_wrap=True, overflow="ellipsis"
        )


class DetailLine(StatusLine):
    """A :class:`StatusLine` that wraps onto up to three lines (a detail too long for one)."""

    DEFAULT_CSS = "DetailLine { height: auto; max-height: 3; padding: 0 1; color: $text; }"

    def render(self) -> Text:
        return Text(self.text, style="bold red" if self.error else "")
