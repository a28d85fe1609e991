"""The help screen (``?`` or F1): what each key does, drawn from the live bindings."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# holo-tune

Type a query: the ranking updates as you type. **Tab** / **↓** moves into the ranking;
**/** comes back to the query. **?** or **F1** opens this help from anywhere, but once the
query holds text `?` types into it ("what time is it in Tokyo?"): **F1** opens it there.

| key | what it does |
|---|---|
| `m` | cycle search_method (semantic → bm25 → hybrid) |
| `[` `]` | top_k − / + (shift: by 5) |
| `-` `+` | similarity_threshold − / + 0.01 (shift: by 0.1) |
| `a` | toggle always_include for the highlighted tool (ranking or catalog) |
| `space` | label the highlighted tool as expected for the query (again: unlabel); saved at once |
| `e` | toggle enabled |
| `n` `N` | always_include_top_n_used + / − |
| `c` | compare semantic, bm25 and hybrid for this query |
| `v` | evaluate: labelled queries, metrics, the recall/tokens front, the misses, what-if rows |
| `x` | compare engines: every tool-search engine on labelled queries, one recall/tokens plot |
| `w` | which runtime? every runtime at its tuned setting on labelled queries, error bars, a plot |
| `t` | the catalog tab (every tool, its server, tokens and description) |
| `d` | the findings (what the runtime will do differently) |
| `h` | recent queries (Enter in the query keeps it there) and labelled ones (✓2: two tools) |
| `s` | sort the catalog by tokens, name or server |
| `l` `r` | the highlighted server's log / reconnect it (palette: "Server log…" asks which) |
| `ctrl+s` | write the block back to the YAML (diff first) |
| `ctrl+e` | export the block (shown and copied) |
| `ctrl+r` | revert the knobs to the file's values |
| `ctrl+p` | command palette: every action by name |
| `f2` | show or hide the servers and catalog panel |
| `?` `F1` | this help (`?` types into a query that holds text; F1 opens it there) |
| `q` `ctrl+q` | quit (asks first when knobs differ from the file: write back, discard, cancel) |

In the sliders: **←/→** fine step, **shift+←/→** or **PgUp/PgDn** coarse step,
**Home/End** the ends. The number next to a slider takes a typed value (checked against
HoloDeck's bounds). A `*` marks a value that differs from the file.

Labels: **space** in the ranking or the catalog marks the tool as expected for the query:
✓ the setting sends it, **✗** (red, "missed") it does not. Each label is saved at once to the
cases file (`--cases FILE`, else `<agent>.cases.yaml` beside the agent), which **v** and **x**
then run on; the last tool unlabelled removes the case.
"""


class HelpScreen(ModalScreen[None]):
    """Keys and what they do."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss", "close", id="close-help")
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)
