"""The query input: focused when the app opens; ↓ moves into the results."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input


class QueryInput(Input):
    """A user message to rank the tools for."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "screen.focus_results", "results", show=False, id="to-results"),
    ]
