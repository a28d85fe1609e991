"""The agent's catalog: start its MCP servers (or replay a snapshot) and build the runtime's view.

With a snapshot (``catalog_file``) a server named in the file stands in for the agent's MCP entry
of the same name (no process is started, state ``snapshot``); servers the agent does not have are
added after the agent's own, in file order; the agent's other MCP entries are still started.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

from workbench.catalog.build import ServerListing, build_catalog
from workbench.catalog.models import Catalog, ServerStatus
from workbench.catalog.snapshot import load_snapshot
from workbench.catalog.specs import AgentTools, specs_from_agent

StatusCallback = Callable[[ServerStatus], None]
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


async def alist_agent_tools(
    tools: AgentTools,
    *,
    snapshot: dict[str, list[dict[str, Any]]] | None = None,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    log_dir: Path | None = None,
    concurrent: bool = True,
) -> Catalog:
    """The catalog of already-read tool entries (what :func:`aload_catalog` does after loading)."""
    snapshot = snapshot or {}
    mcp = tools.mcp()
    replayed = {
        spec.name: _replayed(spec.name, spec.transport, snapshot[spec.name])
        for spec in mcp
        if spec.name in snapshot
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

        live = await list_servers(
            to_start, timeout=timeout, on_status=on_status, log_dir=log_dir, concurrent=concurrent
        )
    by_name = {listing.status.name: listing for listing in live}
    ordered = [replayed.get(spec.name) or by_name[spec.name] for spec in mcp]
    return build_catalog(tools, [*ordered, *extra])


async def aload_catalog(
    agent: Any,
    *,
    catalog_file: str | Path | None = None,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    log_dir: Path | None = None,
) -> Catalog:
    """The catalog of a loaded agent (``workbench.config.AgentConfig``), servers listed at once.

    Raises CatalogError for an unreadable snapshot; a server that fails is not an exception (its
    status says why and the catalog is built from the others).
    """
    snapshot = load_snapshot(catalog_file) if catalog_file else None
    return await alist_agent_tools(
        specs_from_agent(agent),
        snapshot=snapshot,
        timeout=timeout,
        on_status=on_status,
        log_dir=log_dir,
    )


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
) -> Catalog:
    """Synchronous :func:`aload_catalog`: runs its own event loop, so call it off any running
    loop (e.g. from a worker thread); ``on_status`` is called in that thread. In the main thread
    a SIGTERM during the listing still shuts the servers down (see :func:`sigterm_as_interrupt`).
    """
    with sigterm_as_interrupt():
        return anyio.run(
            partial(
                aload_catalog,
                agent,
                catalog_file=catalog_file,
                timeout=timeout,
                on_status=on_status,
                log_dir=log_dir,
            )
        )
