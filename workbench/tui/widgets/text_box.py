"""A text box of the dashboard: every key it would type stays in it (never a knob's key), and
``?`` opens the help wherever it would not be typed, as F1 does from anywhere.

``?`` is typed only into a box that already holds text (a query often ends in ``?``: "what time
is it in Tokyo?"); in an empty box, or a number box (which never takes a ``?``), it goes on to
the help binding. The box decides as it reads the key, so a query typed in one go keeps its
``?`` (the screen's bindings would see the box before its earlier keys were typed).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

#: Printable keys whose Textual names do not map back to a character (so the stock Input would
#: let a screen binding on them fire instead of typing them).
TYPED_KEYS = frozenset({"minus", "plus", "slash", "underscore", "full_stop", "comma"})
#: The help key, typed only into text.
HELP_CHARACTER = "?"


class TextBox(Input):
    """An input whose printable keys type into it, but for ``?`` where it would not be typed."""

    def types(self, character: str | None) -> bool:
        """Whether ``character`` is typed here: ``?`` only into a text box holding text."""
        if character != HELP_CHARACTER:
            return True
        return self.type == "text" and bool(self.value)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        if not self.types(character):
            return False
        return key in TYPED_KEYS or super().check_consume_key(key, character)

    async def _on_key(self, event: events.Key) -> None:
        if not self.types(event.character):
            event.prevent_default()  # not typed: it bubbles on to the help binding
