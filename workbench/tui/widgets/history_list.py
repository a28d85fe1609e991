"""Recent queries, newest first, then the labelled queries of the cases file; Enter runs the
highlighted one again.

A query is kept when Enter is pressed in the query box (typing alone ranks but keeps nothing,
or every keystroke's prefix would land here); while none is kept, the list says so. A labelled
query shows ``✓`` and how many tools it expects (``✓2``), among the recent ones too.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from workbench.evaluate.casestore import query_key
from workbench.tui.messages import RerunQuery

#: How many recent queries are kept.
HISTORY_SIZE = 50
#: What the list shows while no query is kept.
EMPTY = "No queries yet: Enter in the query keeps it here; space on a tool labels it."


def remember(history: list[str], query: str, size: int = HISTORY_SIZE) -> list[str]:
    """``history`` with ``query`` moved (or added) to the front, trimmed to ``size``."""
    query = query.strip()
    if not query:
        return history
    return [query, *[q for q in history if q != query]][:size]


def history_line(query: str, expected: int) -> Text:
    """One query: ``✓2`` before a labelled one (how many tools it expects), blanks before the
    rest (pure: unit-tested)."""
    text = Text()
    text.append(f"✓{expected:<2} " if expected else "    ", style="bold green")
    text.append(query)
    return text


class HistoryList(OptionList):
    """The recent queries and the labelled ones (a disabled line says how to add one while
    there is none)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Option(EMPTY, disabled=True), id=id)
        self.queries: list[str] = []
        #: ``{query_key: how many tools it expects}`` of the labelled queries, in the file's order.
        self.labelled: dict[str, int] = {}
        self._shown: list[str] = []

    def add(self, query: str) -> None:
        queries = remember(self.queries, query)
        if queries == self.queries:
            return
        self.queries = queries
        self._draw()

    def set_labelled(self, labelled: Mapping[str, int]) -> None:
        if dict(labelled) == self.labelled:
            return
        self.labelled = dict(labelled)
        self._draw()

    def _draw(self) -> None:
        highlighted = self.highlighted
        recent = {query_key(q) for q in self.queries}
        others = [key for key in self.labelled if key not in recent]
        self._shown = [*self.queries, *others]
        self.clear_options()
        if not self._shown:
            self.add_option(Option(EMPTY, disabled=True))
            return
        options = [
            Option(history_line(q, self.labelled.get(query_key(q), 0)), id=str(i))
            for i, q in enumerate(self._shown)
        ]
        if others:
            title = f"── labelled ({len(self.labelled)}) " + "─" * 20
            split = len(self.queries)
            options.insert(split, Option(Text(title, style="dim"), disabled=True))
        self.add_options(options)
        if highlighted is not None:
            self.highlighted = min(highlighted, self.option_count - 1)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(RerunQuery(self._shown[int(event.option.id)]))
