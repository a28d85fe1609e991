"""The dashboard's keys and what they do: each binding (and palette command) is an action that
changes the lab's state, opens a view, or moves the focus. Nothing here draws a panel.

:class:`DashboardActions` is the base of the dashboard screen (Textual finds ``action_*`` and
``BINDINGS`` on the screen's classes); the screen provides the parts the actions talk to.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.command import SimpleCommand
from textual.screen import Screen
from textual.widgets import Input, TabbedContent

from workbench.config.filtering import SEARCH_METHODS
from workbench.tui.caseruns import CasesMemory
from workbench.tui.dashboard.session import ServerSession
from workbench.tui.dashboard.state import LabState
from workbench.tui.dashboard.writeback import WriteBack
from workbench.tui.messages import ToggleAlways, ToggleLabel
from workbench.tui.screens.compare import CompareEnginesScreen
from workbench.tui.screens.evaluate import Choice, EvaluateScreen
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.runtimes import WhichRuntimeScreen
from workbench.tui.widgets.catalog_table import CatalogTable
from workbench.tui.widgets.query_input import QueryInput
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.servers_panel import ServersPanel, server_line


def _b(
    key: str,
    action: str,
    description: str,
    tooltip: str,
    *,
    show: bool = True,
    key_display: str | None = None,
    priority: bool = False,
    group: Binding.Group | None = None,
) -> Binding:
    """A binding with an id (its action's name) so keymaps can rebind it."""
    return Binding(
        key,
        action,
        description,
        show=show,
        key_display=key_display,
        tooltip=tooltip,
        id=action.split("(")[0],
        priority=priority,
        group=group,
    )


#: The footer shows each pair of keys once: ``[] top_k``, ``-+ thr`` (room for ``space label``).
TOP_K = Binding.Group("top_k", compact=True)
THRESHOLD = Binding.Group("thr", compact=True)


BINDINGS: list[BindingType] = [
    _b(
        "ctrl+s", "write_back", "write", "Write the block into the YAML (diff first)", priority=True
    ),
    _b("ctrl+e", "export", "export", "Show the block and copy it", priority=True, show=False),
    # While the query has focus this binding is off: ? types into a query that holds text, so
    # the query's own F1 (shown) and ? (from an empty query) bindings stand in (show_help).
    # A number box never takes ?: it comes here (see widgets/text_box.py).
    _b("question_mark,f1", "help", "help", "Keys and what they do", key_display="?"),
    _b("m", "cycle_method", "method", "Cycle search_method"),
    _b("left_square_bracket", "top_k(-1)", "k−", "top_k minus one", key_display="[", group=TOP_K),
    _b("right_square_bracket", "top_k(1)", "k+", "top_k plus one", key_display="]", group=TOP_K),
    _b("left_curly_bracket", "top_k(-5)", "top_k−5", "top_k minus five", show=False),
    _b("right_curly_bracket", "top_k(5)", "top_k+5", "top_k plus five", show=False),
    _b(
        "minus",
        "threshold(-0.01)",
        "thr−",
        "Threshold minus 0.01",
        key_display="-",
        group=THRESHOLD,
    ),
    _b(
        "plus,equals_sign",
        "threshold(0.01)",
        "thr+",
        "Threshold plus 0.01",
        key_display="+",
        group=THRESHOLD,
    ),
    _b("underscore", "threshold(-0.1)", "thr−.1", "Threshold minus 0.1", show=False),
    _b("asterisk", "threshold(0.1)", "thr+.1", "Threshold plus 0.1", show=False),
    _b("e", "toggle_enabled", "enabled", "Toggle enabled", show=False),
    _b("n", "top_n(1)", "top_n+", "always_include_top_n_used plus one", show=False),
    _b("N", "top_n(-1)", "top_n−", "always_include_top_n_used minus one", show=False),
    # The keys that move the focus are priority bindings: Textual routes a key to the focused
    # widget as soon as the app reads it, so a key typed right after one of these would still
    # reach the old widget if the focus moved only when that widget handled the first key.
    # ``check_action`` leaves them to a text box that has the focus (they type there).
    # The screen's own Tab (next widget) stays beside it: a subclass's binding for a key
    # replaces its base classes' ones, and focus_results is only for the query.
    Binding("tab", "app.focus_next", show=False, id="focus-next"),
    _b(
        "tab,down",
        "focus_results",
        "results",
        "From the query into the results",
        show=False,
        priority=True,
    ),
    # The tab keys stay out of the footer (the tabs show their names; help lists the keys), so it
    # fits 120 columns with space label and w runtimes.
    _b(
        "c",
        "show_tab('tab-compare')",
        "compare",
        "semantic, bm25, hybrid side by side",
        show=False,
        priority=True,
    ),
    _b(
        "h",
        "show_tab('tab-history')",
        "history",
        "Recent queries (Enter in the query keeps one)",
        show=False,
        priority=True,
    ),
    _b("g", "show_tab('tab-ranking')", "ranking", "The ranking", show=False, priority=True),
    _b("d", "show_tab('tab-findings')", "findings", "Diagnostics", show=False, priority=True),
    _b(
        "t", "show_tab('tab-catalog')", "catalog", "Every tool by tokens", show=False, priority=True
    ),
    _b(
        "slash",
        "focus_query",
        "query",
        "Back to the query",
        key_display="/",
        show=False,
        priority=True,
    ),
    _b("v", "evaluate", "eval", "Measure the setting on labelled queries"),
    _b(
        "x",
        "compare_engines",
        "engines",
        "Every search engine on labelled queries: table and recall/tokens plot",
    ),
    _b(
        "w",
        "which_runtime",
        "runtimes",
        "Which runtime? Every runtime at its tuned setting on labelled queries, with error bars",
    ),
    _b(
        "a", "toggle_always", "always", "Toggle always_include for the highlighted tool", show=False
    ),
    # The ranking and the catalog show space as "label" in the footer (their own bindings); this
    # one is the palette's, and space anywhere but a text box.
    _b(
        "space",
        "label",
        "label",
        "Mark the highlighted tool as expected for the query (again: unmark)",
        show=False,
    ),
    _b("ctrl+r", "revert", "revert", "Knobs back to the file's values", show=False),
    _b("f2", "toggle_sidebar", "panel", "Show or hide servers and catalog", show=False),
    # The servers list's own l and r, from anywhere but a text box (the list need not have
    # focus, nor be shown: the header names the servers, the palette asks which).
    _b("l", "server_log", "log", "The highlighted server's log", show=False),
    _b("r", "reconnect_server", "reconnect", "List the highlighted server again", show=False),
    _b("q", "app.quit", "quit", "Quit", show=False),
]

#: Where the focus goes in each tab ("the results").
RESULTS = {
    "tab-ranking": "#ranking",
    "tab-history": "#history",
    "tab-compare": "#compare-semantic RowList",
    "tab-catalog": "#catalog-full",
    "tab-findings": "#findings-scroll",
}


class DashboardActions(Screen[None]):
    """Key bindings -> state changes, views and focus."""

    BINDINGS: ClassVar[list[BindingType]] = BINDINGS

    state: LabState
    session: ServerSession
    writeback: WriteBack
    #: The cases path typed in Evaluate, Compare engines or Which runtime? (one for all, for
    #: the session).
    cases: CasesMemory

    # -- the knobs -----------------------------------------------------------------------------
    def set_knob(self, key: str, value: object) -> None:
        """One knob to ``value``; a value the setting refuses is said, and the knob shows the
        setting's value again."""
        error = self.state.edit(key, value)
        if error is not None:
            self.notify(error, title=key, severity="error")

    def action_cycle_method(self) -> None:
        current = self.state.setting.search_method
        self.set_knob("search_method", SEARCH_METHODS[(SEARCH_METHODS.index(current) + 1) % 3])

    def action_set_method(self, method: str) -> None:
        self.set_knob("search_method", method)

    def action_top_k(self, delta: int) -> None:
        self.set_knob("top_k", min(max(self.state.setting.top_k + delta, 1), 50))

    def action_threshold(self, delta: float) -> None:
        value = round(self.state.setting.similarity_threshold + delta, 2)
        self.set_knob("similarity_threshold", min(max(value, 0.0), 1.0))

    def action_top_n(self, delta: int) -> None:
        value = min(max(self.state.setting.always_include_top_n_used + delta, 0), 20)
        self.set_knob("always_include_top_n_used", value)

    def action_toggle_enabled(self) -> None:
        self.set_knob("enabled", not self.state.setting.enabled)

    def action_revert(self) -> None:
        self.state.revert()

    def tool_table(self) -> RankingTable | CatalogTable | None:
        """The table whose highlighted tool ``a`` and ``space`` act on: the catalog or ranking
        that has the focus, else the ranking while its tab shows; None when neither is in sight
        (a key must never change a tool the user cannot see)."""
        focused = self.focused
        if isinstance(focused, CatalogTable | RankingTable):
            return focused
        if self.query_one(TabbedContent).active == "tab-ranking":
            return self.query_one(RankingTable)
        return None

    def action_toggle_always(self) -> None:
        """Toggle the tool highlighted in the ranking (or the catalog when it has focus)."""
        table = self.tool_table()
        tool = table.highlighted_tool() if table is not None else None
        if tool is not None:
            self.post_message(ToggleAlways(tool))

    def action_label(self) -> None:
        """Label the tool highlighted in the ranking (or the catalog when it has focus) as
        expected for the query in the lab, or unlabel it."""
        table = self.tool_table()
        tool = table.highlighted_tool() if table is not None else None
        if tool is None:
            self.notify("Type a query first, then highlight a tool to label.", title="label")
            return
        self.post_message(ToggleLabel(tool))

    # -- views and focus -----------------------------------------------------------------------
    # Focus moves at once (``set_focus``), not after the queue (``Widget.focus`` defers it): keys
    # typed right after Tab, / or a tab key must reach the widget they were typed for.
    def action_focus_results(self) -> None:
        active = self.query_one(TabbedContent).active
        self.set_focus(self.query_one(RESULTS.get(active, "#ranking")))

    def action_focus_query(self) -> None:
        self.set_focus(self.query_one("#query", QueryInput))

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.action_focus_results()

    def action_toggle_sidebar(self) -> None:
        self.toggle_class("-sidebar")

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_show_help(self) -> None:
        """Help from anywhere (F1 in the query, the palette): ``?`` is hidden while typing."""
        self.action_help()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``?`` is not offered while the query has focus (its own bindings: F1, shown, and ``?``
        from an empty query; after text ``?`` types);
        ``a`` and ``space`` only while a ranking or catalog is in sight; the focus keys
        (priority bindings) go to a text box that has the focus, Tab and ↓ only from the query
        (elsewhere Tab moves on as usual)."""
        focused = self.focused
        if action in ("label", "toggle_always") and self.tool_table() is None:
            return False
        if action == "focus_results":
            return isinstance(focused, QueryInput)
        if action in ("show_tab", "focus_query"):
            return not isinstance(focused, Input)
        return not (action == "help" and isinstance(focused, QueryInput))

    def open_query(self, query: str) -> None:
        """Put ``query`` in the query box and show its ranking (history, an Evaluate miss)."""
        self.query_one("#query", QueryInput).value = query
        self.query_one(TabbedContent).active = "tab-ranking"
        self.set_focus(self.query_one(RankingTable))

    # -- labelled queries ----------------------------------------------------------------------
    def action_evaluate(self) -> None:
        lab = self.state.lab
        if lab is None:
            self.notify("The catalog is still loading.", title="evaluate")
            return
        screen = EvaluateScreen(lab, Path(self.state.agent.path), self.cases, self.state.runtime)
        self.app.push_screen(screen, self._evaluated)

    def action_compare_engines(self) -> None:
        lab = self.state.lab
        if lab is None:
            self.notify("The catalog is still loading.", title="compare engines")
            return
        self.app.push_screen(CompareEnginesScreen(lab, Path(self.state.agent.path), self.cases))

    def action_which_runtime(self) -> None:
        lab = self.state.lab
        if lab is None:
            self.notify("The catalog is still loading.", title="which runtime?")
            return
        agent = Path(self.state.agent.path)
        self.app.push_screen(WhichRuntimeScreen(lab, agent, self.cases, self.state.runtime))

    def _evaluated(self, choice: Choice | None) -> None:
        if choice is None or self.state.lab is None:
            return
        if choice.setting is not None:
            self.state.adopt(choice.setting)
            self.notify("Adopted the front point: ctrl+s writes it.", title="evaluate")
        if choice.query is not None:
            self.open_query(choice.query)

    # -- the file ------------------------------------------------------------------------------
    def action_export(self) -> None:
        self.writeback.export()

    def action_write_back(self) -> None:
        self.writeback.start()

    # -- servers -------------------------------------------------------------------------------
    def action_server_log(self) -> None:
        self.query_one(ServersPanel).action_log()  # the list's own l, wherever the focus is

    def action_reconnect_server(self) -> None:
        self.query_one(ServersPanel).action_reconnect()

    def action_pick_server(self, what: str) -> None:
        """The palette's "Server log…" and "Reconnect server…": which server (the highlighted
        one first, so Enter takes it)."""
        panel = self.query_one(ServersPanel)
        statuses = panel.statuses
        if not statuses:
            self.notify("No server is listed yet.", title=what)
            return
        current = panel.current()
        if current is not None:
            statuses = [current, *[s for s in statuses if s.name != current.name]]
        act = self.session.show_log if what == "log" else self.session.reconnect
        verb = "Log of" if what == "log" else "Reconnect"
        commands = [
            SimpleCommand(f"{verb} {s.name}", partial(act, s), server_line(s, None).plain)
            for s in statuses
        ]
        self.app.search_commands(commands, placeholder="Which server?")
