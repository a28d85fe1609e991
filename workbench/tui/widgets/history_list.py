"""Recent queries, newest first; Enter runs the highlighted one again.

A query is kept when Enter is pressed in the query box (typing alone ranks but keeps nothing,
or every keystroke's prefix would land here); while none is kept, the list says so.
"""

from __future__ import annotations

from textual.widgets import OptionList
from textual.widgets.option_list import Option

from workbench.tui.messages import RerunQuery

#: How many recent queries are kept.
HISTORY_SIZE = 50
#: What the list shows while no query is kept.
EMPTY = "No queries yet: Enter in the query keeps it here."


def remember(history: list[str], query: str, size: int = HISTORY_SIZE) -> list[str]:
    """``history`` with ``query`` moved (or added) to the front, trimmed to ``size``."""
    query = query.strip()
    if not query:
        return history
    return [query, *[q for q in history if q != query]][:size]


class HistoryList(OptionList):
    """The recent queries (a disabled line says how to add one while there is none)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Option(EMPTY, disabled=True), id=id)
        self.queries: list[str] = []

    def add(self, query: str) -> None:
        queries = remember(self.queries, query)
        if queries == self.queries:
            return
        self.queries = queries
        self.clear_options()
        self.add_options(Option(q) for q in queries)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(RerunQuery(self.queries[event.option_index]))
