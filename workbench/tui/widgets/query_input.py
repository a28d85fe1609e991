"""The query input: focused when the app opens; ↓ moves into the results, F1 opens the help
(``?`` too while the query is empty; after text it types, see :class:`TextBox`)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.reactive import Reactive

from workbench.tui.widgets.text_box import TextBox


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
