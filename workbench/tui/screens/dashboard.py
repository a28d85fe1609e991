"""The dashboard: servers and catalog, the query lab, the knobs and the token bill.

A thin shell: it lays the panels out and wires the parts together (docs/architecture.md has
the map).

- :class:`~workbench.tui.dashboard.state.LabState`: what is shown; panels watch it
  (:mod:`~workbench.tui.dashboard.panels`).
- :class:`~workbench.tui.dashboard.session.ServerSession`: listing, partial catalogs, the
  workspace, logs, reconnect.
- :class:`~workbench.tui.dashboard.workers.LabWorkers`: scoring, embedding, diagnosing.
- :class:`~workbench.tui.dashboard.findings.FindingsWorkers`: the catalog's findings (once per
  catalog) and its unreachable tools (per setting, with labelled cases).
- :class:`~workbench.tui.dashboard.actions.DashboardActions` (the base class): keys -> state.
- :class:`~workbench.tui.dashboard.writeback.WriteBack`: export, write back, reload.
- :class:`~workbench.tui.dashboard.labels.Labeller`: labels read from and saved to the cases file.

Messages from widgets and workers arrive here and go to the part that owns them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.command import Provider
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Input, TabbedContent, TabPane
from textual.worker import Worker

from workbench.config import AgentConfig
from workbench.config.notices import warnings_to_say
from workbench.limits import MAX_QUERY_BYTES
from workbench.tui.caseruns import CasesMemory
from workbench.tui.commands import DashboardCommands
from workbench.tui.dashboard.actions import DashboardActions
from workbench.tui.dashboard.findings import GROUPS as FINDINGS_GROUPS
from workbench.tui.dashboard.findings import FindingsWorkers
from workbench.tui.dashboard.labels import GROUPS as LABEL_GROUPS
from workbench.tui.dashboard.labels import Labeller
from workbench.tui.dashboard.panels import bind_panels
from workbench.tui.dashboard.runtime import write_back_off
from workbench.tui.dashboard.session import GROUPS as SESSION_GROUPS
from workbench.tui.dashboard.session import STOP_WAIT, ServerSession
from workbench.tui.dashboard.state import LabState
from workbench.tui.dashboard.workers import GROUPS as WORKER_GROUPS
from workbench.tui.dashboard.workers import LabWorkers
from workbench.tui.dashboard.writeback import WriteBack
from workbench.tui.lab import Lab
from workbench.tui.messages import (
    CatalogGrew,
    EmbedderLoading,
    RankingsReady,
    RerunQuery,
    ServerChanged,
    SettingEdited,
    SignalsScored,
    ToggleAlways,
    ToggleLabel,
)
from workbench.tui.options import Options
from workbench.tui.widgets.banner import Banner
from workbench.tui.widgets.catalog_table import CatalogTable
from workbench.tui.widgets.compare_view import CompareView
from workbench.tui.widgets.findings_list import FindingsList
from workbench.tui.widgets.header_bar import HeaderBar
from workbench.tui.widgets.history_list import HistoryList
from workbench.tui.widgets.knobs_panel import KnobsPanel
from workbench.tui.widgets.query_input import QueryInput
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.score_strip import ScoreStrip
from workbench.tui.widgets.servers_panel import ServersPanel
from workbench.tui.widgets.status_line import DetailLine, StatusLine
from workbench.tui.widgets.token_bars import TokenBars

#: Below this width the servers/catalog column hides (f2 shows it).
NARROW = 110
#: How long the query limit's notification shows; keys refused meanwhile add none.
CAPPED_SECONDS = 6.0


class DashboardScreen(DashboardActions):
    """The workbench for one agent."""

    COMMANDS: ClassVar[set[type[Provider] | Callable[[], type[Provider]]]] = {DashboardCommands}

    def __init__(self, agent: AgentConfig, options: Options) -> None:
        super().__init__(id="dashboard")
        self.options = options
        self.state = LabState(
            agent, query=options.query, show_timing=options.show_timing, runtime=options.runtime
        )
        self.lab_workers = LabWorkers(self, self.state)
        self.findings = FindingsWorkers(self, self.state, options)
        self.session = ServerSession(self, self.state, options, self.lab_workers)
        self.writeback = WriteBack(self, self.state, options)
        self.cases = CasesMemory()
        self.labeller = Labeller(self, self.state, options.cases, self.cases)
        self._capped_at = -CAPPED_SECONDS

    # -- what the app and the tests read ---------------------------------------------------------
    @property
    def agent(self) -> AgentConfig:
        return self.state.agent

    @property
    def lab(self) -> Lab | None:
        return self.state.lab

    @property
    def query_text(self) -> str:
        return self.state.query_text

    @property
    def shown_query(self) -> str:
        """The query whose ranking the table draws."""
        return self.state.shown_query

    def changed_knobs(self) -> list[str]:
        """The ``tool_filtering`` keys whose knob differs from the file (marked ``*``), in the
        block's order; quitting with any asks first."""
        return self.state.changed()

    def write_off(self) -> str | None:
        """Why the knobs cannot be written into the file under the runtime (None: they can)."""
        return write_back_off(self.state.runtime)

    def write_back(self, *, then_quit: bool = False) -> None:
        """The write-back dialog (diff first); with ``then_quit`` the app quits once written."""
        self.writeback.start(then_quit=then_quit)

    async def stop_listing(self, wait: float = STOP_WAIT) -> None:
        await self.session.stop_listing(wait)

    # -- layout ----------------------------------------------------------------------------------
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
                yield FindingsList(id="query-findings")
                with TabbedContent(initial="tab-ranking", id="tabs"):
                    with TabPane("ranking", id="tab-ranking"):
                        yield RankingTable(id="ranking")
                        yield DetailLine(id="ranking-split")
                    with TabPane("compare", id="tab-compare"):
                        yield CompareView(id="compare")
                    with TabPane("history", id="tab-history"):
                        yield HistoryList(id="history")
                    with TabPane("catalog", id="tab-catalog"):
                        yield CatalogTable(id="catalog-full")
                        with VerticalScroll(id="catalog-findings-scroll"):
                            yield FindingsList(id="catalog-findings")
                    with (
                        TabPane("findings", id="tab-findings"),
                        VerticalScroll(id="findings-scroll"),
                    ):
                        yield FindingsList(id="findings")
            with VerticalScroll(id="side"):
                yield KnobsPanel(self.state.setting, id="knobs")
                yield TokenBars(id="tokens")
                yield ScoreStrip(id="scores")
        yield Footer()

    def on_mount(self) -> None:
        bind_panels(self, self.state)
        self.labeller.load()
        self.lab_workers.subscribe()
        self.findings.subscribe()
        self.query_one("#query", QueryInput).focus()
        agent = self.state.agent  # under --catalog no server starts: not their keys
        for warning in warnings_to_say(
            agent.warnings, agent.data, servers_start=self.options.catalog is None
        ):
            self.notify(warning, title="config", severity="warning", timeout=8)
        self.session.start()

    def on_resize(self) -> None:
        self.set_class(self.size.width < NARROW, "-narrow")

    async def on_unmount(self) -> None:
        """The app is quitting: stop listing, and wait for the servers' processes to end."""
        await self.session.stop_listing()

    # -- messages, each to its owner -------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group in SESSION_GROUPS:
            self.session.state_changed(event)
        elif event.worker.group in WORKER_GROUPS:
            self.lab_workers.state_changed(event)
        elif event.worker.group in FINDINGS_GROUPS:
            self.findings.state_changed(event)
        elif event.worker.group in LABEL_GROUPS and self.labeller.state_changed(event):
            self.findings.labels_saved()

    @on(ServerChanged)
    def _server_changed(self, message: ServerChanged) -> None:
        self.session.server_changed(message)

    @on(CatalogGrew)
    def _catalog_grew(self, message: CatalogGrew) -> None:
        self.session.catalog_grew(message)

    @on(ServersPanel.ShowLog)
    def _show_log(self, message: ServersPanel.ShowLog) -> None:
        self.session.show_log(message.status)

    @on(ServersPanel.Reconnect)
    def _reconnect(self, message: ServersPanel.Reconnect) -> None:
        self.session.reconnect(message.status)

    @on(RankingsReady)
    def _rankings_ready(self, message: RankingsReady) -> None:
        self.lab_workers.rankings_ready(message)

    @on(SignalsScored)
    def _signals_scored(self, message: SignalsScored) -> None:
        self.lab_workers.signals_scored(message)

    @on(EmbedderLoading)
    def _embedder_loading(self, message: EmbedderLoading) -> None:
        self.lab_workers.embedder_loading(message)

    @on(Input.Changed, "#query")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if event.value != event.input.value:
            # Keys came faster than they are handled (a paste a terminal types key by key):
            # the box has moved on and its own Changed is queued; reading and ranking every
            # text in between would cost the length of the query once per key.
            return
        self.state.type_query(event.value)

    @on(QueryInput.Capped)
    def _capped(self, message: QueryInput.Capped) -> None:
        message.stop()
        now = time.monotonic()
        if now - self._capped_at < CAPPED_SECONDS:
            return
        self._capped_at = now
        self.notify(
            f"The query box takes at most {MAX_QUERY_BYTES:,} bytes (64 KiB), the longest "
            f"query search and serve rank: {message.dropped:,} bytes were left out.",
            title="query limit",
            severity="warning",
            timeout=CAPPED_SECONDS,
        )

    @on(Input.Submitted, "#query")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(HistoryList).add(event.value)
        self.action_focus_results()

    @on(RerunQuery)
    def _rerun(self, message: RerunQuery) -> None:
        self.open_query(message.query)

    @on(SettingEdited)
    def _setting_edited(self, message: SettingEdited) -> None:
        self.set_knob(message.field, message.value)

    @on(ToggleAlways)
    def _toggle_always(self, message: ToggleAlways) -> None:
        self.state.toggle_always(message.tool)

    @on(ToggleLabel)
    def _toggle_label(self, message: ToggleLabel) -> None:
        self.labeller.toggle(message.tool)

    @on(TabbedContent.TabActivated)
    def _tab(self, event: TabbedContent.TabActivated) -> None:
        # The compare and catalog tabs need the width: the servers column steps aside.
        self.set_class(event.pane.id in ("tab-compare", "tab-catalog"), "-wide-tab")
        self.state.show_tab(event.pane.id)
        # The focus never stays in a tab that is hidden (a mouse click, a tab key).
        focused = self.focused
        if focused is not None and any(
            isinstance(node, TabPane) and node is not event.pane for node in focused.ancestors
        ):
            self.action_focus_results()
