"""The query input: focused when the app opens; ↓ moves into the results, F1 opens the help
(``?`` types into the query)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input

#: Printable keys whose Textual names do not map back to a character (so the stock Input would
#: let a screen binding on them fire instead of typing them).
TYPED_KEYS = frozenset({"minus", "plus", "slash", "underscore", "full_stop", "comma"})


class QueryInput(Input):
    """A user message to rank the tools for."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # ↓ and Tab into the results are the dashboard's (priority bindings: see its actions).
        # ? types into the query, so help is F1 here (shown in the footer while typing).
        Binding(
            "f1",
            "screen.show_help",
            "help",
            key_display="F1",
            tooltip="Keys and what they do (? types into the query)",
            id="query-help",
        ),
    ]

    #: Input sets its virtual size on every keystroke, and the layout it sees after a layout
    #: differs from that, so with the stock reactive (``layout=True``) each keystroke re-lays out
    #: the whole dashboard. This box never changes size: a new virtual size only repaints it.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=True)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Every printable key types into the query, never triggers a knob."""
        return key in TYPED_KEYS or super().check_consume_key(key, character)
