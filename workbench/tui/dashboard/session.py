"""The server session: listing the servers, the catalog growing while they answer, opening a
workspace on it, a server's log and listing one server again.

A worker lists the servers (the core's ``aload_catalog``, on the event loop); each status change
arrives as :class:`ServerChanged`, and while some servers still connect the catalog so far as
:class:`CatalogGrew`. Each catalog is opened as a workspace in a thread worker (one build at a
time; each keeps the previous workspace's embedder, so a catalog that grew embeds only its new
tools) and handed to the state. Leaving the screen cancels the listing and waits for it,
bounded, so every server it started is stopped before the event loop ends.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine
from contextlib import suppress
from functools import partial
from typing import Any, cast

from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled, WorkerFailed, WorkerState

from workbench.catalog import Catalog, ServerStatus
from workbench.catalog.enumerate import alist_agent_tools, aload_catalog
from workbench.catalog.specs import specs_from_agent
from workbench.search.usage import load_usage
from workbench.tui.dashboard.state import LabState
from workbench.tui.dashboard.workers import LabWorkers, report
from workbench.tui.lab import Lab
from workbench.tui.messages import CatalogGrew, ServerChanged
from workbench.tui.options import Options
from workbench.tui.screens.server_log import ServerLogScreen
from workbench.tui.view import server_tokens
from workbench.workspace import Workspace, build_workspace

#: The groups of the workers started here.
GROUPS = ("catalog", "workspace")
#: Seconds leaving the dashboard waits for a cancelled listing to stop its servers (the core
#: kills what is left of them if the event loop ends first).
STOP_WAIT = 5.0


class ServerSession:
    """The agent's servers and the catalog they list, for one dashboard."""

    def __init__(
        self, host: Screen[None], state: LabState, options: Options, workers: LabWorkers
    ) -> None:
        self.host = host
        self.state = state
        self.options = options
        self.workers = workers
        #: The catalog listing is over (partial catalogs arriving late are dropped).
        self._listed = False
        #: The listing's result (the catalog of every server that listed).
        self._final: Catalog | None = None
        #: A workspace is being built; the newest catalog waiting for its turn; the last one
        #: handed over to be opened.
        self._building = False
        self._next_catalog: Catalog | None = None
        self._last_catalog: Catalog | None = None

    # -- listing -------------------------------------------------------------------------------
    def start(self) -> None:
        """List every server's tools (statuses and catalogs so far arrive as messages)."""
        self.state.say("listing the servers…")
        listing = aload_catalog(
            self.state.agent,
            catalog_file=self.options.catalog,
            timeout=self.options.timeout,
            on_status=self._on_status,
            on_partial=self._on_partial,
            view=self.state.runtime.plugin.catalog_view,
        )
        self._list(listing, "list every server's tools")

    def reconnect(self, status: ServerStatus) -> None:
        """List ``status``'s server again (every other server keeps its listing)."""
        lab = self.state.lab
        name = status.name
        if lab is None or status.state == "local":
            self.host.notify(f"{name} has nothing to list again.", title="reconnect")
            return
        if self.options.catalog is not None:
            self.host.notify(
                f"{name} is not listed again: --catalog replays a snapshot and starts no server.",
                title="reconnect",
            )
            return
        self.host.notify(f"Listing {name} again…", title="reconnect")
        self._list(self._relist(name, lab.workspace.catalog), f"list {name}'s tools")

    def _list(self, work: Coroutine[Any, Any, Catalog], description: str) -> None:
        self.host.run_worker(
            work,
            name="catalog",
            group="catalog",
            exclusive=True,
            exit_on_error=False,
            description=description,
        )

    async def _relist(self, name: str, previous: Catalog) -> Catalog:
        """List ``name`` again through the core; every other server stands in with what it
        listed before (no process of theirs is restarted)."""
        tools = specs_from_agent(self.state.agent)
        others = {spec.name for spec in tools.mcp()} | set(previous.listings)
        snapshot = {n: list(previous.listings.get(n, [])) for n in others if n != name}
        kept = {s.name: s for s in self.state.servers.statuses if s.name != name}

        def on_status(status: ServerStatus) -> None:
            if status.name == name:
                self._on_status(status)

        catalog = await alist_agent_tools(
            tools,
            snapshot=snapshot,
            timeout=self.options.timeout,
            on_status=on_status,
            view=self.state.runtime.plugin.catalog_view,
        )
        catalog.servers = [kept.get(s.name, s) for s in catalog.servers]
        return catalog

    def _on_partial(self, catalog: Catalog) -> None:
        self.host.post_message(CatalogGrew(catalog))

    def _on_status(self, status: ServerStatus) -> None:
        self.host.post_message(ServerChanged(copy.copy(status)))

    async def stop_listing(self, wait: float = STOP_WAIT) -> None:
        """Cancel the catalog workers and wait (at most ``wait`` seconds) for them to end.

        Textual cancels workers on exit without waiting for them, and the event loop ending
        would cut their servers' shutdown short; the core's cancellation stops each server.
        """
        listing = [
            w
            for w in self.host.app.workers
            if w.node is self.host and w.group == "catalog" and not w.is_finished
        ]
        if not listing:
            return
        for worker in listing:
            worker.cancel()
        await asyncio.wait([asyncio.ensure_future(_ended(w)) for w in listing], timeout=wait)

    def show_log(self, status: ServerStatus) -> None:
        """The server's log, as the listing last reported it."""
        self.host.app.push_screen(ServerLogScreen(self.state.servers.get(status.name) or status))

    # -- the catalog arrives -----------------------------------------------------------------------
    def server_changed(self, message: ServerChanged) -> None:
        self.state.server_changed(message.status)

    def catalog_grew(self, message: CatalogGrew) -> None:
        catalog = message.catalog
        if self._listed or not catalog.tools:
            return
        last = self._last_catalog
        if last is not None and last.names() == catalog.names():
            return  # a server failed: nothing new to rank
        self._catalog_ready(catalog, final=False)

    def _catalog_ready(self, catalog: Catalog, *, final: bool = True) -> None:
        """A catalog to open: the final one (the listing's result), or one so far."""
        if final:
            self._listed = True
            self._final = catalog
            self.state.list_servers(self.state.merge_servers(catalog.servers), {})
            for note in catalog.notes:
                self.host.notify(note, title="catalog", severity="warning", timeout=8)
        so_far = "" if final else " so far"
        self.state.say(f"{len(catalog.tools):,} tools{so_far} · counting tokens…")
        self._next_catalog = self._last_catalog = catalog
        if not self._building:
            self._build_workspace()

    def _build_workspace(self) -> None:
        """Open the newest catalog waiting, if any (one build at a time)."""
        catalog, self._next_catalog = self._next_catalog, None
        if catalog is None:
            return
        self._building = True
        previous = self.state.lab.workspace if self.state.lab is not None else None
        self.host.run_worker(
            partial(self._open_workspace, catalog, previous),
            name="workspace",
            group="workspace",
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description="open the workspace",
        )

    def _open_workspace(self, catalog: Catalog, previous: Workspace | None) -> Lab:
        """Thread worker: token table, embedder and engine (the core); the embedder of the
        ``previous`` workspace (a smaller catalog) is kept, with its caches."""
        workspace = build_workspace(
            self.state.agent,
            catalog,
            embedder_spec=self.options.embedder,
            environ=self.options.environ,
            embedder=previous.embedder if previous is not None else None,
        )
        usage = None
        if self.options.usage:
            # Names of servers still listing (or failed) are left out until the catalog has them.
            whole = catalog is self._final and all(s.state == "ok" for s in catalog.servers)
            usage = load_usage(self.options.usage, catalog, partial=not whole)
        return Lab.open(workspace, usage)

    def _workspace_ready(self, lab: Lab) -> None:
        ws = lab.workspace
        by_server = {
            row.server: row.all for row in server_tokens(ws.catalog, ws.tokens.per_tool, ())
        }
        self.state.list_servers(self.state.merge_servers(ws.catalog.servers), by_server)
        self.state.open(lab)
        self.workers.prepare(lab)

    def state_changed(self, event: Worker.StateChanged) -> None:
        """What became of a catalog or workspace worker."""
        worker, state = event.worker, event.state
        if state == WorkerState.ERROR:
            report(self.host, self.state, worker)
        elif state == WorkerState.SUCCESS:
            if worker.name == "catalog":
                self._catalog_ready(cast(Catalog, worker.result))
            elif worker.name == "workspace":
                self._workspace_ready(cast(Lab, worker.result))
        if worker.name == "workspace" and worker.is_finished:
            self._building = False
            self._build_workspace()


async def _ended(worker: Worker[object]) -> None:
    """Wait for ``worker`` to end, however it ends."""
    with suppress(WorkerCancelled, WorkerFailed):
        await worker.wait()
