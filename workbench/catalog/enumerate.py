"""The agent's catalog: start its MCP servers (or replay a snapshot) and build the runtime's view.

``view`` is the runtime's :data:`~workbench.catalog.models.CatalogView` (``Runtime.catalog_view``:
HoloDeck 0.6's Semantic Kernel conversion, the default runtime's, or the listings as they are);
the listings themselves are kept as they came (``Catalog.listings``).

With a snapshot (``catalog_file``) no process is ever started: a server named in the file stands
in for the agent's MCP entry of the same name (state ``snapshot``); servers the agent does not
have are added after the agent's own, in file order (with a catalog note and warning when the
agent has MCP entries of its own: the snapshot may be another agent's); the agent's MCP entries
the file lacks are left out (state ``absent``, a catalog note and warning each).
:func:`alist_agent_tools` can still start the entries its snapshot lacks (``start_absent``): the
dashboard lists one server again that way, the others standing in with what they listed.

A slow server need not hold up the others: ``on_partial`` is given the catalog built so far
(local tools, replayed servers and every server that has answered, always in the runtime's
order) before the first live server answers and after each one that answers while others are
still connecting. The servers still connecting are in its ``servers`` with their current state
and no tools. The last catalog, the one returned, is the same with or without ``on_partial``.
"""

from __future__ import annotations

import copy
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

from workbench.catalog.build import ServerListing, build_catalog
from workbench.catalog.models import (
    NOT_IN_SNAPSHOT,
    SEMANTIC_KERNEL,
    Catalog,
    CatalogView,
    ServerStatus,
)
from workbench.catalog.snapshot import load_snapshot
from workbench.catalog.specs import AgentTools, McpServerSpec, specs_from_agent

StatusCallback = Callable[[ServerStatus], None]
#: Called with each catalog built before the last server has answered (see the module's doc).
PartialCallback = Callable[[Catalog], None]
logger = logging.getLogger(__name__)


def _notify(on_status: StatusCallback | None, status: ServerStatus) -> None:
    if on_status is None:
        return
    try:
        on_status(status)
    except Exception:  # a broken display must not stop the listing
        logger.exception("on_status callback failed for %s", status.name)


def _replayed(name: str, transport: str, tools: list[dict[str, Any]]) -> ServerListing:
    status = ServerStatus(name=name, transport=transport, state="snapshot", tools=len(tools))
    status.seconds = 0.0
    return ServerListing(status=status, tools=tools)


def _absent(spec: McpServerSpec) -> ServerListing:
    status = ServerStatus(spec.name, spec.transport, state="absent", error=NOT_IN_SNAPSHOT)
    return ServerListing(status=status)


async def alist_agent_tools(
    tools: AgentTools,
    *,
    snapshot: dict[str, list[dict[str, Any]]] | None = None,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    log_dir: Path | None = None,
    concurrent: bool = True,
    on_partial: PartialCallback | None = None,
    start_absent: bool = True,
    view: CatalogView = SEMANTIC_KERNEL,
) -> Catalog:
    """The catalog of already-read tool entries (what :func:`aload_catalog` does after loading).

    The MCP entries ``snapshot`` lacks are started, unless ``start_absent`` is False: then they
    are ``absent`` and nothing is started."""
    snapshot = snapshot or {}
    mcp = tools.mcp()
    replayed = {
        spec.name: _replayed(spec.name, spec.transport, snapshot[spec.name])
        if spec.name in snapshot
        else _absent(spec)
        for spec in mcp
        if spec.name in snapshot or not start_absent
    }
    own = {spec.name for spec in mcp}
    extra = [_replayed(name, "snapshot", t) for name, t in snapshot.items() if name not in own]
    for listing in [*replayed.values(), *extra]:
        _notify(on_status, listing.status)
    to_start = [spec for spec in mcp if spec.name not in replayed]
    live: list[ServerListing] = []
    if to_start:
        # Imported here: the mcp SDK takes a second or two to import, and a replay needs none of it.
        from workbench.catalog.mcp_client import list_servers

        on_listing = None
        if on_partial is not None:
            growing = _Growing(tools, mcp, replayed, extra, on_partial, view)
            growing.publish()
            on_status, on_listing = growing.tracking(on_status), growing.answered
        live = await list_servers(
            to_start,
            timeout=timeout,
            on_status=on_status,
            log_dir=log_dir,
            concurrent=concurrent,
            on_listing=on_listing,
        )
    by_name = {listing.status.name: listing for listing in live}
    ordered = [replayed.get(spec.name) or by_name[spec.name] for spec in mcp]
    return build_catalog(tools, [*ordered, *extra], view)


class _Growing:
    """The catalog of a listing in progress: which servers answered, and each one's state."""

    def __init__(
        self,
        tools: AgentTools,
        mcp: list[McpServerSpec],
        replayed: dict[str, ServerListing],
        extra: list[ServerListing],
        on_partial: PartialCallback,
        view: CatalogView,
    ) -> None:
        self.tools = tools
        self.view = view
        self.mcp = mcp
        self.extra = extra
        self.on_partial = on_partial
        self.to_start = [spec for spec in mcp if spec.name not in replayed]
        self.names = {spec.name for spec in mcp}
        self.done: dict[str, ServerListing] = dict(replayed)
        #: The live servers' statuses (the listing's own objects, updated as they move on).
        self.current: dict[str, ServerStatus] = {
            spec.name: ServerStatus(name=spec.name, transport=spec.transport)
            for spec in self.to_start
        }

    def tracking(self, on_status: StatusCallback | None) -> StatusCallback:
        def track(status: ServerStatus) -> None:
            self.current[status.name] = status
            _notify(on_status, status)

        return track

    def answered(self, index: int, listing: ServerListing) -> None:
        self.done[self.to_start[index].name] = listing
        if len(self.done) < len(self.names):  # the last answer makes the returned catalog
            self.publish()

    def publish(self) -> None:
        """Build the catalog so far and hand it to ``on_partial`` (a snapshot: nothing in it
        changes when the listing moves on)."""
        listings = []
        for spec in self.mcp:
            listing = self.done.get(spec.name)
            if listing is None:
                listings.append(ServerListing(status=copy.copy(self.current[spec.name])))
            else:
                status = copy.copy(listing.status)
                listings.append(ServerListing(status=status, tools=listing.tools))
        for listing in self.extra:
            listings.append(ServerListing(status=copy.copy(listing.status), tools=listing.tools))
        catalog = build_catalog(self.tools, listings, self.view)
        try:
            self.on_partial(catalog)
        except Exception:  # a broken display must not stop the listing
            logger.exception("on_partial callback failed")


async def aload_catalog(
    agent: Any,
    *,
    catalog_file: str | Path | None = None,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    log_dir: Path | None = None,
    on_partial: PartialCallback | None = None,
    view: CatalogView = SEMANTIC_KERNEL,
) -> Catalog:
    """The catalog of a loaded agent (``workbench.config.AgentConfig``), servers listed at once,
    as ``view`` sees it.

    Raises CatalogError for an unreadable snapshot; a server that fails is not an exception (its
    status says why and the catalog is built from the others). ``on_partial`` gets the catalog
    so far while servers are still connecting (see the module's doc).
    """
    snapshot = load_snapshot(catalog_file) if catalog_file else None
    specs = specs_from_agent(agent)
    catalog = await alist_agent_tools(
        specs,
        snapshot=snapshot,
        timeout=timeout,
        on_status=on_status,
        log_dir=log_dir,
        on_partial=on_partial,
        start_absent=snapshot is None,
        view=view,
    )
    # An agent with no MCP entry of its own takes the whole catalog from the snapshot (the data
    # sets' layout); otherwise a server it does not declare may be a snapshot of another agent.
    own = {spec.name for spec in specs.mcp()}
    added = [name for name in snapshot or {} if name not in own]
    if own and added:
        where = getattr(agent, "path", "the agent")
        note = (
            f"{catalog_file}: servers not in {where}: {', '.join(added)} "
            "(added after the agent's own)"
        )
        catalog.notes.append(note)
        catalog.warnings.append(note)
    where = getattr(agent, "path", "the agent")
    for server in catalog.servers:
        if server.state == "absent":
            note = (
                f"{catalog_file}: server {server.name} of {where} is not in the snapshot: its "
                "tools are left out (--catalog starts no server)"
            )
            catalog.notes.append(note)
            catalog.warnings.append(note)
    return catalog


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside: SIGTERM raises KeyboardInterrupt, so the servers are shut down before we exit.

    Python's default SIGTERM ends the process at once, and the servers (each in its own session,
    out of reach of the terminal's signals) would live on. Only in the main thread (where
    handlers can be set); elsewhere it does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def load_catalog(
    agent: Any,
    *,
    catalog_file: str | Path | None = None,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    log_dir: Path | None = None,
    on_partial: PartialCallback | None = None,
    view: CatalogView = SEMANTIC_KERNEL,
) -> Catalog:
    """Synchronous :func:`aload_catalog`: runs its own event loop, so call it off any running
    loop (e.g. from a worker thread); ``on_status`` and ``on_partial`` are called in that
    thread. In the main thread
    a SIGTERM during the listing still shuts the servers down (see :func:`sigterm_as_interrupt`).
    """
    loaded: list[Catalog] = []

    async def load() -> None:
        # The catalog leaves through ``loaded``, not as the main task's result: in the main
        # thread asyncio's runner puts its SIGINT handler back at the end, and Python's enum
        # then formats that handler, the main task and its result into an error message it
        # discards, a repr of every tool (50 ms of a 1,287-tool start).
        loaded.append(
            await aload_catalog(
                agent,
                catalog_file=catalog_file,
                timeout=timeout,
                on_status=on_status,
                log_dir=log_dir,
                on_partial=on_partial,
                view=view,
            )
        )

    with sigterm_as_interrupt():
        anyio.run(load)
    return loaded[0]
