"""The dashboard: servers and catalog, the query lab, the knobs and the token bill.

This screen only wires widgets to the core: a worker lists the servers (``aload_catalog``),
a thread worker builds the workspace and embeds the tools, a thread worker per keystroke scores
the query (the next keystroke cancels it), and knob changes re-select from cached scores on the
UI thread. While some servers still connect, the workspace is built again (one build at a time)
each time others answer, and the query re-ranked (the tools already embedded come from the
cache). Every worker's failure lands in :meth:`on_worker_state_changed`. Leaving the screen (the
app quitting) cancels the listing and waits for it, bounded, so every server it started is
stopped before the event loop ends.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import ClassVar, Literal, cast

from pydantic import ValidationError
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.command import Provider, SimpleCommand
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, TabbedContent, TabPane
from textual.worker import (
    Worker,
    WorkerCancelled,
    WorkerFailed,
    WorkerState,
    get_current_worker,
)

from workbench.catalog import Catalog, ServerStatus
from workbench.catalog.enumerate import alist_agent_tools, aload_catalog
from workbench.catalog.specs import specs_from_agent
from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import BLOCK_KEYS, SEARCH_METHODS, ToolFiltering
from workbench.config.writeback_render import render_block_text
from workbench.errors import InputError
from workbench.evaluate import Finding, diagnose
from workbench.search.embedders.local import model_to_load
from workbench.search.selection import match_always_include, select
from workbench.search.types import Ranking, Selection
from workbench.search.usage import load_usage
from workbench.tui.caseruns import CasesMemory
from workbench.tui.commands import DashboardCommands
from workbench.tui.lab import Lab
from workbench.tui.messages import (
    CatalogGrew,
    EmbedderLoading,
    RankingsReady,
    RerunQuery,
    ServerChanged,
    SettingEdited,
    ToggleAlways,
)
from workbench.tui.options import Options
from workbench.tui.screens.compare import CompareEnginesScreen
from workbench.tui.screens.evaluate import Choice, EvaluateScreen
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.server_log import ServerLogScreen
from workbench.tui.screens.writeback import RELOAD, WriteBackScreen
from workbench.tui.view import ranking_rows, server_tokens
from workbench.tui.widgets.banner import Banner
from workbench.tui.widgets.catalog_table import CatalogTable
from workbench.tui.widgets.compare_view import CompareView, column_title
from workbench.tui.widgets.findings_list import FindingsList
from workbench.tui.widgets.header_bar import HeaderBar, HeaderInfo
from workbench.tui.widgets.history_list import HistoryList
from workbench.tui.widgets.knobs_panel import KnobsPanel
from workbench.tui.widgets.query_input import QueryInput
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.score_strip import ScoreShape, ScoreStrip
from workbench.tui.widgets.servers_panel import ServersPanel, server_line
from workbench.tui.widgets.status_line import StatusLine
from workbench.tui.widgets.token_bars import TokenBars, TokenBill
from workbench.workspace import Workspace, build_workspace

#: Rows of the ranking table (the rest of a 10,000-tool ranking is not drawn).
RANKING_ROWS = 50
COMPARE_ROWS = 25
#: Below this width the servers/catalog column hides (f2 shows it).
NARROW = 110
#: Seconds leaving the dashboard waits for a cancelled listing to stop its servers (the core
#: kills what is left of them if the event loop ends first).
STOP_WAIT = 5.0


def _b(
    key: str,
    action: str,
    description: str,
    tooltip: str,
    *,
    show: bool = True,
    key_display: str | None = None,
    priority: bool = False,
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
    )


class DashboardScreen(Screen[None]):
    """The workbench for one agent."""

    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {DashboardCommands}

    BINDINGS: ClassVar[list[BindingType]] = [
        _b(
            "ctrl+s",
            "write_back",
            "write",
            "Write the block into the YAML (diff first)",
            priority=True,
        ),
        _b("ctrl+e", "export", "export", "Show the block and copy it", priority=True, show=False),
        # While the query has focus ? types into it: this binding is hidden there and the query's
        # own F1 binding (show_help) stands in, in the footer too.
        _b("question_mark,f1", "help", "help", "Keys and what they do", key_display="?"),
        _b("m", "cycle_method", "method", "Cycle search_method"),
        _b("left_square_bracket", "top_k(-1)", "k−", "top_k minus one", key_display="["),
        _b("right_square_bracket", "top_k(1)", "k+", "top_k plus one", key_display="]"),
        _b("left_curly_bracket", "top_k(-5)", "top_k−5", "top_k minus five", show=False),
        _b("right_curly_bracket", "top_k(5)", "top_k+5", "top_k plus five", show=False),
        _b("minus", "threshold(-0.01)", "thr−", "Threshold minus 0.01", key_display="-"),
        _b("plus,equals_sign", "threshold(0.01)", "thr+", "Threshold plus 0.01", key_display="+"),
        _b("underscore", "threshold(-0.1)", "thr−.1", "Threshold minus 0.1", show=False),
        _b("asterisk", "threshold(0.1)", "thr+.1", "Threshold plus 0.1", show=False),
        _b("e", "toggle_enabled", "enabled", "Toggle enabled", show=False),
        _b("n", "top_n(1)", "top_n+", "always_include_top_n_used plus one", show=False),
        _b("N", "top_n(-1)", "top_n−", "always_include_top_n_used minus one", show=False),
        _b("c", "show_tab('tab-compare')", "compare", "semantic, bm25, hybrid side by side"),
        _b(
            "h",
            "show_tab('tab-history')",
            "history",
            "Recent queries (Enter in the query keeps one)",
            show=False,
        ),
        _b("g", "show_tab('tab-ranking')", "ranking", "The ranking", show=False),
        _b("d", "show_tab('tab-findings')", "findings", "Diagnostics", show=False),
        _b("t", "show_tab('tab-catalog')", "catalog", "Every tool by tokens", show=False),
        _b("slash", "focus_query", "query", "Back to the query", key_display="/", show=False),
        _b("v", "evaluate", "eval", "Measure the setting on labelled queries"),
        _b(
            "x",
            "compare_engines",
            "engines",
            "Every search engine on labelled queries: table and recall/tokens plot",
        ),
        _b(
            "a",
            "toggle_always",
            "always",
            "Toggle always_include for the highlighted tool",
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

    def __init__(self, agent: AgentConfig, options: Options) -> None:
        super().__init__(id="dashboard")
        self.agent = agent
        self.options = options
        self.lab: Lab | None = None
        self.query_text = options.query
        self.statuses: dict[str, ServerStatus] = {}
        self._setting = agent.filtering or ToolFiltering()
        self._rank_started = 0.0
        self.rank_seconds: float | None = None
        self.shown_query = ""
        #: The catalog listing is over (partial catalogs arriving late are dropped).
        self._listed = False
        #: A workspace is being built; the newest catalog waiting for its turn; the last one
        #: handed over to be opened.
        self._building = False
        self._next_catalog: Catalog | None = None
        self._last_catalog: Catalog | None = None
        #: The cases path typed in the Evaluate or Compare-engines view (one for both, for the
        #: session).
        self._cases = CasesMemory()

    # -- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield HeaderBar(id="header")
        yield Banner(id="banner")
        with Horizontal(id="body"):
            with Vertical(id="sidebar"):
                yield ServersPanel(id="servers")
                yield CatalogTable(compact=True, id="catalog")
            with Vertical(id="lab"):
                yield QueryInput(
                    self.options.query,
                    placeholder="type a user message: the ranking follows as you type",
                    id="query",
                )
                yield StatusLine(id="lab-status")
                with TabbedContent(initial="tab-ranking", id="tabs"):
                    with TabPane("ranking", id="tab-ranking"):
                        yield RankingTable(id="ranking")
                    with TabPane("compare", id="tab-compare"):
                        yield CompareView(id="compare")
                    with TabPane("history", id="tab-history"):
                        yield HistoryList(id="history")
                    with TabPane("catalog", id="tab-catalog"):
                        yield CatalogTable(id="catalog-full")
                    with TabPane("findings", id="tab-findings"):
                        yield FindingsList(id="findings")
            with VerticalScroll(id="side"):
                yield KnobsPanel(self._setting, id="knobs")
                yield TokenBars(id="tokens")
                yield ScoreStrip(id="scores")
        yield Footer()

    def on_mount(self) -> None:
        self._show_header()
        self._status("listing the servers…")
        self.query_one("#query", QueryInput).focus()
        for warning in self.agent.warnings:
            self.notify(warning, title="config", severity="warning", timeout=8)
        self.run_worker(
            self._list_servers(),
            name="catalog",
            group="catalog",
            exclusive=True,
            exit_on_error=False,
            description="list every server's tools",
        )

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    async def on_unmount(self) -> None:
        """The app is quitting: stop listing, and wait for the servers' processes to end."""
        await self.stop_listing()

    async def stop_listing(self, wait: float = STOP_WAIT) -> None:
        """Cancel the catalog workers and wait (at most ``wait`` seconds) for them to end.

        Textual cancels workers on exit without waiting for them, and the event loop ending
        would cut their servers' shutdown short; the core's cancellation stops each server.
        """
        listing = [
            w
            for w in self.app.workers
            if w.node is self and w.group == "catalog" and not w.is_finished
        ]
        if not listing:
            return
        for worker in listing:
            worker.cancel()
        await asyncio.wait([asyncio.ensure_future(_ended(w)) for w in listing], timeout=wait)

    # -- workers ---------------------------------------------------------------------------
    async def _list_servers(self) -> Catalog:
        """Runs on the event loop: the core's async listing, statuses posted as they change, and
        the catalog so far each time a server answers while others are still connecting."""
        return await aload_catalog(
            self.agent,
            catalog_file=self.options.catalog,
            timeout=self.options.timeout,
            on_status=self._on_status,
            on_partial=self._on_partial,
        )

    def _on_partial(self, catalog: Catalog) -> None:
        self.post_message(CatalogGrew(catalog))

    def _on_status(self, status: ServerStatus) -> None:
        self.post_message(ServerChanged(copy.copy(status)))

    def _open_workspace(self, catalog: Catalog, previous: Workspace | None) -> Lab:
        """Thread worker: token table, embedder and engine (the core); the embedder of the
        ``previous`` workspace (a smaller catalog) is kept, with its caches."""
        workspace: Workspace = build_workspace(
            self.agent,
            catalog,
            embedder_spec=self.options.embedder,
            environ=self.options.environ,
            embedder=previous.embedder if previous is not None else None,
        )
        usage = load_usage(self.options.usage, catalog) if self.options.usage else None
        return Lab.open(workspace, usage)

    def _prepare(self, lab: Lab) -> float:
        """Thread worker: embed every tool once (slow with a real model), timed."""
        started = time.perf_counter()
        lab.workspace.engine.prepare()
        return time.perf_counter() - started

    def _score(self, lab: Lab, query: str, methods: Sequence[str]) -> None:
        """Thread worker: score ``query`` by each method; posts each ranking as it is ready.

        Never touches a widget; a newer keystroke cancels it (it then posts nothing more).
        """
        worker = get_current_worker()
        for method in methods:
            if worker.is_cancelled:
                return
            loading = model_to_load(lab.workspace.engine.embedder) if method != "bm25" else None
            if loading is not None:  # the engine's first embedding: the model loads (seconds)
                self.post_message(EmbedderLoading(query, loading))
            ranking = lab.rank(query, method)
            if worker.is_cancelled:
                return
            self.post_message(RankingsReady(query, {method: ranking}))

    def _diagnose(self, lab: Lab, setting: ToolFiltering) -> Diagnosed:
        """Thread worker: the core's diagnostics for this agent, catalog and setting."""
        return Diagnosed(setting, diagnose(lab.workspace, setting, usage=lab.usage))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker results and failures are handled."""
        worker, state = event.worker, event.state
        if state == WorkerState.ERROR:
            self._worker_failed(worker)
        elif state == WorkerState.SUCCESS:
            result = worker.result
            if worker.name == "catalog":
                self._catalog_ready(cast(Catalog, result))
            elif worker.name == "workspace":
                self._workspace_ready(cast(Lab, result))
            elif worker.name == "prepare":
                self._prepared(cast(float, result))
            elif worker.name == "diagnose":
                self._show_findings(cast(Diagnosed, result))
        if worker.name == "workspace" and worker.is_finished:
            self._building = False
            self._build_workspace()

    def _worker_failed(self, worker: Worker[object]) -> None:
        err = worker.error
        message = str(err) if err is not None else "failed"
        if worker.name == "diagnose":
            self.query_one(FindingsList).update(f"diagnostics failed: {message}")
            return
        if worker.name == "rank":
            self._status(f"scoring failed: {message}", error=True)
            return
        self._status(f"{worker.description or worker.name} failed: {message}", error=True)
        self.notify(message, title=f"{worker.name} failed", severity="error", timeout=10)

    # -- the catalog and the workspace arrive ------------------------------------------------
    @on(ServerChanged)
    def _server_changed(self, message: ServerChanged) -> None:
        self.statuses[message.status.name] = message.status
        self.query_one(ServersPanel).update_server(message.status)
        self._show_header()

    @on(CatalogGrew)
    def _catalog_grew(self, message: CatalogGrew) -> None:
        catalog = message.catalog
        if self._listed or not catalog.tools:
            return
        last = self._last_catalog
        if last is not None and last.names() == catalog.names():
            return  # a server failed: nothing new to rank
        self._catalog_ready(catalog, final=False)

    def _catalog_ready(self, catalog: Catalog, *, final: bool = True) -> None:
        """A catalog to open: the final one (the listing's result), or one so far."""
        servers = self._merge_statuses(catalog)
        if final:
            self._listed = True
            self.query_one(ServersPanel).set_servers(servers, {})
            for note in catalog.notes:
                self.notify(note, title="catalog", severity="warning", timeout=8)
        so_far = "" if final else " so far"
        self._status(f"{len(catalog.tools):,} tools{so_far} · counting tokens…")
        self._next_catalog = self._last_catalog = catalog
        if not self._building:
            self._build_workspace()

    def _build_workspace(self) -> None:
        """Open the newest catalog waiting, if any (one build at a time: each reuses the last
        workspace's embedder, so a catalog that grew embeds only its new tools)."""
        catalog, self._next_catalog = self._next_catalog, None
        if catalog is None:
            return
        self._building = True
        previous = self.lab.workspace if self.lab is not None else None
        self.run_worker(
            partial(self._open_workspace, catalog, previous),
            name="workspace",
            group="workspace",
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description="open the workspace",
        )

    def _merge_statuses(self, catalog: Catalog) -> list[ServerStatus]:
        """The catalog's sources in its order; a server it shows still connecting (a catalog
        so far) keeps the state the listing has reported since."""
        merged = []
        for status in catalog.servers:
            now = self.statuses.get(status.name)
            if now is not None and status.state in ("pending", "connecting"):
                status = now
            self.statuses[status.name] = status
            merged.append(status)
        return merged

    def _workspace_ready(self, lab: Lab) -> None:
        previous = self.lab
        if previous is not None:
            lab.setting = previous.setting
        elif self._setting != lab.setting:  # knobs moved while the servers were listed
            lab.setting = self._setting
        self.lab = lab
        ws = lab.workspace
        per_tool = ws.tokens.per_tool
        by_server = {row.server: row.all for row in server_tokens(ws.catalog, per_tool, ())}
        self.query_one(ServersPanel).set_servers(self._merge_statuses(ws.catalog), by_server)
        for table in self.query(CatalogTable):
            table.set_catalog(ws.catalog, per_tool)
        self._show_header()
        self._show_setting()
        self._rank_now()
        self._start_diagnose()
        if not ws.engine.prepared:
            self._status(f"embedding {len(ws.catalog):,} tools with {ws.embedder.model_id}…")
            self.run_worker(
                partial(self._prepare, lab),
                name="prepare",
                group="prepare",
                thread=True,
                exclusive=True,
                exit_on_error=False,
                description="embed the tools",
            )

    def _prepared(self, seconds: float) -> None:
        lab = self.lab
        if lab is None:
            return
        error = lab.workspace.engine.tool_embedding_error
        if error:
            self._status(f"tool embeddings failed: {error}", error=True)
        else:
            took = f" in {seconds:.1f}s" if self.options.show_timing else ""
            self._status(f"embedded {len(lab.workspace.catalog):,} tools{took}")
        self._rank_now()

    def _show_findings(self, diagnosed: Diagnosed) -> None:
        if diagnosed.setting != self._current_setting():
            return  # a later change's diagnostics are on their way
        findings = diagnosed.findings
        self.query_one(FindingsList).show(findings)
        serious = sum(1 for f in findings if f.severity in ("error", "warning"))
        label = f"findings ({serious})" if serious else "findings"
        self.query_one(TabbedContent).get_tab("tab-findings").label = label

    def _start_diagnose(self) -> None:
        if self.lab is None:
            return
        self.run_worker(
            partial(self._diagnose, self.lab, self.lab.setting),
            name="diagnose",
            group="diagnose",
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description="diagnose",
        )

    # -- typing ----------------------------------------------------------------------------
    @on(Input.Changed, "#query")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_text = event.value
        self._rank_now()

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(HistoryList).add(event.value)
        self.action_focus_results()

    @on(RerunQuery)
    def _rerun(self, message: RerunQuery) -> None:
        query = self.query_one("#query", QueryInput)
        query.value = message.query
        self.query_one(TabbedContent).active = "tab-ranking"
        self.query_one(RankingTable).focus()

    def _methods_wanted(self) -> list[str]:
        """The current method first; all three when the compare view is open."""
        current = self._current_setting().search_method
        if self.query_one(TabbedContent).active == "tab-compare":
            return [current, *[m for m in SEARCH_METHODS if m != current]]
        return [current]

    def _rank_now(self) -> None:
        """Show what is cached at once; score what is missing in a worker."""
        lab = self.lab
        query = self.query_text.strip()
        if lab is None:
            return
        if not query:
            self._refresh()
            return
        missing = [m for m in self._methods_wanted() if lab.cached(query, m) is None]
        self._refresh()
        if not missing:
            return
        self._rank_started = time.perf_counter()
        engine = lab.workspace.engine
        if not engine.prepared and any(m != "bm25" for m in missing):
            model = lab.workspace.embedder.model_id
            self._status(f"embedding {len(lab.workspace.catalog):,} tools with {model}…")
        self.run_worker(
            partial(self._score, lab, query, missing),
            name="rank",
            group="rank",
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description="score the query",
        )

    @on(EmbedderLoading)
    def _embedder_loading(self, message: EmbedderLoading) -> None:
        if message.query == self.query_text.strip():
            self._status(f"loading embedding model {message.model}…")

    @on(RankingsReady)
    def _rankings_ready(self, message: RankingsReady) -> None:
        lab = self.lab
        if lab is None:
            return
        for ranking in message.rankings.values():
            lab.remember(ranking)
        if message.query == self.query_text.strip():
            self.rank_seconds = time.perf_counter() - self._rank_started
            self._refresh()

    # -- knobs -----------------------------------------------------------------------------
    def _current_setting(self) -> ToolFiltering:
        return self.lab.setting if self.lab is not None else self._setting

    @on(SettingEdited)
    def _setting_edited(self, message: SettingEdited) -> None:
        self._edit(message.field, message.value)

    def _edit(self, key: str, value: object) -> None:
        try:
            if self.lab is not None:
                self.lab.edit(key, value)
            else:
                self._setting = self._setting.with_(**{key: value})
        except ValidationError as err:
            self.notify(err.errors()[0]["msg"], title=key, severity="error")
        self._setting_changed(rerank=key == "search_method")

    @on(ToggleAlways)
    def _toggle_always(self, message: ToggleAlways) -> None:
        if self.lab is None:
            return
        self.lab.toggle_always(message.tool)
        self._setting_changed()

    def _setting_changed(self, *, rerank: bool = False) -> None:
        """The one way a setting change reaches the screen (a knob, ``a``, a revert, a point
        adopted from Evaluate): the knobs, the diagnostics and the ranking follow it.
        ``rerank`` when the method changed (its scores may not be cached)."""
        self._show_setting()
        self._start_diagnose()
        if rerank:
            self._rank_now()
        else:
            self._refresh()

    def _show_setting(self) -> None:
        setting = self._current_setting()
        file_setting = (
            self.lab.file_setting if self.lab else self.agent.filtering or ToolFiltering()
        )
        self.query_one(KnobsPanel).show(setting, file_setting)
        if self.lab is not None:
            catalog = self.lab.workspace.catalog
            found = (match_always_include(catalog, e) for e in setting.always_include)
            names = frozenset(catalog.tools[i].full_name for i in found if i is not None)
            for table in self.query(CatalogTable):
                table.set_always(names)

    # -- drawing ---------------------------------------------------------------------------
    def _status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#lab-status", StatusLine)
        status.text, status.error = text, error

    def _show_header(self) -> None:
        lab = self.lab
        ok = sum(1 for s in self.statuses.values() if s.ok)
        info = HeaderInfo(
            agent=self.agent.agent.name,
            model=f"{self.agent.agent.model.provider}:{self.agent.agent.model.name}",
            servers_ok=ok,
            servers=len(self.statuses),
        )
        if lab is not None:
            ws = lab.workspace
            info = HeaderInfo(
                agent=info.agent,
                model=info.model,
                encoding=ws.tokens.encoding,
                exact=ws.tokens.exact,
                servers_ok=ok,
                servers=len(self.statuses),
                tools=len(ws.catalog),
                embedder=ws.embedder.model_id or "bm25 only",
            )
        self.query_one(HeaderBar).show(info)

    def _refresh(self) -> None:
        """Redraw everything that depends on the current ranking and setting (no scoring)."""
        lab = self.lab
        if lab is None:
            return
        setting = lab.setting
        query = self.query_text.strip()
        ranking = lab.cached(query, setting.search_method) if query else None
        banner = lab.workspace.embedder.note
        if ranking is None:
            if not query:
                self.query_one(RankingTable).show([])
                self._show_bill(None)
                self.query_one(ScoreStrip).shape = None
                self._status(f"{len(lab.workspace.catalog):,} tools · type a query")
            self.query_one(Banner).show(banner)
            return
        selection = lab.select(ranking)
        ws = lab.workspace
        rows = ranking_rows(
            ranking, selection, ws.catalog, ws.tokens.per_tool, setting, limit=RANKING_ROWS
        )
        follow = ranking.query == self.shown_query
        self.shown_query = ranking.query
        self.query_one(RankingTable).show(rows, follow=follow)
        self._show_bill(selection)
        self.query_one(ScoreStrip).shape = ScoreShape(
            ranking.scores, setting.similarity_threshold, ranking.method
        )
        if ranking.fallback and not banner:
            banner = f"{ranking.requested} is really BM25 here: {ranking.fallback}"
        self.query_one(Banner).show(banner)
        self._status(self._scored_by(ranking, selection))
        if self.query_one(TabbedContent).active == "tab-compare":
            self._show_compare(query)

    def _scored_by(self, ranking: Ranking, selection: Selection) -> str:
        model = ranking.model_id or ("BM25" if ranking.method == "bm25" else ranking.method)
        took = ""
        if self.rank_seconds is not None and self.options.show_timing:
            took = f" · {self.rank_seconds * 1000:.0f} ms"
        sent = len(selection.indices)
        passing = selection.passing
        if not self._current_setting().enabled:
            return f"{ranking.requested} by {model}{took} · enabled: false, so every tool is sent"
        return f"{ranking.requested} scored by {model}{took} · {sent} sent · {passing:,} pass"

    def _show_bill(self, selection: Selection | None) -> None:
        lab = self.lab
        bars = self.query_one(TokenBars)
        if lab is None:
            bars.bill = None
            return
        ws, setting = lab.workspace, lab.setting
        if selection is None or not setting.enabled:
            chosen: Sequence[int] = range(len(ws.catalog))
        else:
            chosen = selection.indices
        bars.bill = TokenBill(
            all=ws.tokens.all,
            sent=ws.tokens.total(list(chosen)),
            encoding=ws.tokens.encoding,
            exact=ws.tokens.exact,
            tools=len(ws.catalog),
            chosen=len(chosen),
            servers=tuple(server_tokens(ws.catalog, ws.tokens.per_tool, list(chosen))),
            filtering=setting.enabled,
            overhead=ws.tokens.overhead,
        )

    def _show_compare(self, query: str) -> None:
        lab = self.lab
        if lab is None:
            return
        view = self.query_one(CompareView)
        ws = lab.workspace
        for method in SEARCH_METHODS:
            ranking = lab.cached(query, method)
            column = view.column(method)
            if ranking is None:
                continue
            setting = lab.setting.with_(search_method=method)
            selection = (
                lab.select(ranking)
                if method == lab.setting.search_method
                else (_select_as(lab, ranking, setting))
            )
            rows = ranking_rows(
                ranking, selection, ws.catalog, ws.tokens.per_tool, setting, limit=COMPARE_ROWS
            )
            column.show(column_title(method, ranking.model_id, ranking.fallback), rows)

    @on(TabbedContent.TabActivated)
    def _tab(self, event: TabbedContent.TabActivated) -> None:
        # The compare and catalog tabs need the width: the servers column steps aside.
        self.set_class(event.pane.id in ("tab-compare", "tab-catalog"), "-wide-tab")
        if event.pane.id == "tab-compare":
            self._rank_now()

    # -- actions ---------------------------------------------------------------------------
    def action_focus_results(self) -> None:
        tabs = self.query_one(TabbedContent)
        target = {
            "tab-ranking": "#ranking",
            "tab-history": "#history",
            "tab-compare": "#compare-semantic RowList",
            "tab-catalog": "#catalog-full",
            "tab-findings": "#findings",
        }.get(tabs.active, "#ranking")
        self.query_one(target).focus()

    def action_focus_query(self) -> None:
        self.query_one("#query", QueryInput).focus()

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self.action_focus_results()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_show_help(self) -> None:
        """Help from anywhere (F1 in the query, the palette): ``?`` is hidden while typing."""
        self.action_help()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``?`` is not offered while the query has focus (it types there; F1 is shown)."""
        return not (action == "help" and isinstance(self.focused, QueryInput))

    def action_cycle_method(self) -> None:
        current = self._current_setting().search_method
        self._edit("search_method", SEARCH_METHODS[(SEARCH_METHODS.index(current) + 1) % 3])

    def action_set_method(self, method: str) -> None:
        self._edit("search_method", method)

    def action_top_k(self, delta: int) -> None:
        value = min(max(self._current_setting().top_k + delta, 1), 50)
        self._edit("top_k", value)

    def action_threshold(self, delta: float) -> None:
        value = round(self._current_setting().similarity_threshold + delta, 2)
        self._edit("similarity_threshold", min(max(value, 0.0), 1.0))

    def action_top_n(self, delta: int) -> None:
        value = min(max(self._current_setting().always_include_top_n_used + delta, 0), 20)
        self._edit("always_include_top_n_used", value)

    def action_toggle_enabled(self) -> None:
        self._edit("enabled", not self._current_setting().enabled)

    def action_revert(self) -> None:
        if self.lab is not None:
            self.lab.setting = self.lab.file_setting
            self._setting_changed(rerank=True)

    def action_toggle_sidebar(self) -> None:
        self.toggle_class("-sidebar")

    def action_toggle_always(self) -> None:
        """Toggle the tool highlighted in the ranking (or the catalog when it has focus)."""
        focused = self.focused
        table = focused if isinstance(focused, CatalogTable) else self.query_one(RankingTable)
        tool = table.highlighted_tool()
        if tool is not None:
            self.post_message(ToggleAlways(tool))

    def action_evaluate(self) -> None:
        if self.lab is None:
            self.notify("The catalog is still loading.", title="evaluate")
            return
        screen = EvaluateScreen(self.lab, Path(self.agent.path), self._cases)
        self.app.push_screen(screen, self._evaluated)

    def action_compare_engines(self) -> None:
        if self.lab is None:
            self.notify("The catalog is still loading.", title="compare engines")
            return
        screen = CompareEnginesScreen(self.lab, Path(self.agent.path), self._cases)
        self.app.push_screen(screen)

    def _evaluated(self, choice: Choice | None) -> None:
        lab = self.lab
        if choice is None or lab is None:
            return
        if choice.setting is not None:
            lab.setting = choice.setting
            self._setting_changed(rerank=True)
            self.notify("Adopted the front point: ctrl+s writes it.", title="evaluate")
        if choice.query is not None:
            self.query_one("#query", QueryInput).value = choice.query
            self.query_one(TabbedContent).active = "tab-ranking"
            self.query_one(RankingTable).focus()

    def action_export(self) -> None:
        block = render_block_text(self._current_setting())
        self.app.push_screen(ExportScreen(block))

    def action_write_back(self) -> None:
        self.write_back()

    def write_back(self, *, then_quit: bool = False) -> None:
        """The write-back dialog (diff first); with ``then_quit`` the app quits once written."""
        path = Path(self.agent.path)
        screen = WriteBackScreen(
            path,
            self._current_setting(),
            original=self.agent.raw,
            current=self.agent.filtering,
        )
        self.app.push_screen(screen, partial(self._written, then_quit=then_quit))

    def _written(self, result: Path | Literal["reload"] | None, *, then_quit: bool = False) -> None:
        if result == RELOAD:  # the file changed on disk: read it again, diff again
            if self._reload_file_setting():
                self.write_back(then_quit=then_quit)
            return
        if result is None:
            self.notify("Nothing written.", title="write back")
            return
        self.notify(f"Written. Backup: {result}", title="write back")
        self._reload_file_setting()
        if then_quit:
            self.app.exit()

    def changed_knobs(self) -> list[str]:
        """The ``tool_filtering`` keys whose knob differs from the file (marked ``*``), in the
        block's order; quitting with any asks first."""
        if self.lab is None:
            return []
        changed = self.lab.changed()
        return [key for key in BLOCK_KEYS if key in changed]

    def _reload_file_setting(self) -> bool:
        """After a write the file holds the knobs' values: read it again (the core's loader) so
        they are no longer marked as changed and a second write sees the new bytes. Also when
        the file changed on disk (write back's Reload): the knobs keep their values. False when
        the file no longer loads (said in a notification)."""
        lab = self.lab
        try:
            self.agent = load_agent(
                self.agent.path, environ=self.options.environ, missing_env="warn"
            )
        except InputError as err:
            self.notify(str(err), title="reload", severity="error")
            return False
        if lab is not None:
            lab.workspace = replace(lab.workspace, agent=self.agent)
        self._setting_changed()
        return True

    # -- servers ---------------------------------------------------------------------------
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
        act = self.show_log if what == "log" else self.reconnect
        verb = "Log of" if what == "log" else "Reconnect"
        commands = [
            SimpleCommand(f"{verb} {s.name}", partial(act, s), server_line(s, None).plain)
            for s in statuses
        ]
        self.app.search_commands(commands, placeholder="Which server?")

    @on(ServersPanel.ShowLog)
    def _show_log(self, message: ServersPanel.ShowLog) -> None:
        self.show_log(message.status)

    def show_log(self, status: ServerStatus) -> None:
        self.app.push_screen(ServerLogScreen(self.statuses.get(status.name, status)))

    @on(ServersPanel.Reconnect)
    def _reconnect(self, message: ServersPanel.Reconnect) -> None:
        self.reconnect(message.status)

    def reconnect(self, status: ServerStatus) -> None:
        """List ``status``'s server again (every other server keeps its listing)."""
        lab = self.lab
        name = status.name
        if lab is None or status.state == "local":
            self.notify(f"{name} has nothing to list again.", title="reconnect")
            return
        self.notify(f"Listing {name} again…", title="reconnect")
        self.run_worker(
            self._relist(name, lab.workspace.catalog),
            name="catalog",
            group="catalog",
            exclusive=True,
            exit_on_error=False,
            description=f"list {name}'s tools",
        )

    async def _relist(self, name: str, previous: Catalog) -> Catalog:
        """Runs on the event loop: list ``name`` again through the core; every other server
        stands in with what it listed before (no process of theirs is restarted)."""
        tools = specs_from_agent(self.agent)
        others = {spec.name for spec in tools.mcp()} | set(previous.listings)
        snapshot = {n: list(previous.listings.get(n, [])) for n in others if n != name}
        kept = {n: s for n, s in self.statuses.items() if n != name}

        def on_status(status: ServerStatus) -> None:
            if status.name == name:
                self._on_status(status)

        catalog = await alist_agent_tools(
            tools, snapshot=snapshot, timeout=self.options.timeout, on_status=on_status
        )
        catalog.servers = [kept.get(s.name, s) for s in catalog.servers]
        return catalog


@dataclass(frozen=True)
class Diagnosed:
    """The findings of one setting (a late result of an older setting is not shown)."""

    setting: ToolFiltering
    findings: list[Finding]


async def _ended(worker: Worker[object]) -> None:
    """Wait for ``worker`` to end, however it ends."""
    with suppress(WorkerCancelled, WorkerFailed):
        await worker.wait()


def _select_as(lab: Lab, ranking: Ranking, setting: ToolFiltering) -> Selection:
    """The selection ``ranking`` gets under ``setting`` (the compare view's other methods)."""
    return select(ranking, setting, lab.workspace.catalog, lab.usage)
