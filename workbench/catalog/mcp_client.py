"""List the tools of every MCP server of an agent, all at once, with the official ``mcp`` client.

Each server runs in its own task under its own deadline (its ``request_timeout``, or the caller's
``timeout``). A server that fails (missing command, exits at once, hangs, writes garbage on
stdout, HTTP error, bad handshake) ends up with state ``error`` and a one-line cause, while the
others finish. Every server's transport and session contexts are entered and left in the one
task that opened them (anyio's cancel-scope rule), and the stdio transport ends its server's
whole process group on the way out, on success, error and timeout alike.

Cancelled (a deadline, or the caller giving up: the dashboard quitting), a stdio server's group
is sent SIGTERM at once rather than after the SDK's grace period for a closed stdin, and should
the SDK's own shutdown be cut short (a cancelled task nobody holds is collected mid-shutdown;
a repeated native ``Task.cancel()`` defeats its cancel shield), whatever is left of the group
is killed (SIGKILL), synchronously, on the way out: no server process outlives its listing.

:func:`open_session` (connect and initialize, every context on the caller's stack) is what a
listing runs, and what ``holo-tune serve`` keeps open for the life of its process.

A stdio server's stderr goes to ``<log dir>/<server>.log``; the log dir is one per run under
``$XDG_CACHE_HOME/holo-tune/logs`` (the newest runs are kept), and our own diagnosis is appended
to the same file.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import anyio
import httpx2
import mcp.client.stdio as sdk_stdio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import MessageHandlerFnT
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PaginatedRequestParams

from workbench.catalog.build import ServerListing
from workbench.catalog.diagnose import (
    Phase,
    ServerFailure,
    StdoutGarbage,
    describe_failure,
    leaf,
)
from workbench.catalog.models import ServerStatus
from workbench.catalog.serverlogs import log_name, new_log_dir, stderr_tail
from workbench.catalog.specs import McpServerSpec

logger = logging.getLogger(__name__)
# The SDK logs a server's bad stdout lines with tracebacks; with no handler configured Python
# would print them on our stderr (and over the dashboard). Each server's log file gets the
# diagnosis instead, so the SDK's records are dropped unless the application routes them.
logging.getLogger("mcp").addHandler(logging.NullHandler())

StatusCallback = Callable[[ServerStatus], None]
#: Called with a server's index in ``specs`` and its listing, as soon as that server is done.
ListingCallback = Callable[[int, ServerListing], None]

#: A server that returns more pages than this is looping on its cursor.
MAX_PAGES = 1000
#: HTTP transports: connect/write timeout and SSE read timeout when the entry sets none
#: (the defaults of Semantic Kernel's MCP plugins and the mcp SDK).
HTTP_TIMEOUT = 5.0
SSE_READ_TIMEOUT = 300.0


def _notify(on_status: StatusCallback | None, status: ServerStatus) -> None:
    if on_status is None:
        return
    try:
        on_status(status)
    except Exception:  # a broken display must not stop the listing
        logger.exception("on_status callback failed for %s", status.name)


#: The process ids the stdio transport starts in this context (``_open_transport`` sets a list).
_spawned: ContextVar[list[int] | None] = ContextVar("holo_tune_spawned", default=None)
_Spawn = Callable[..., Awaitable[Any]]


def _track_spawns() -> None:
    """Wrap the SDK's process spawn so the pids it starts are known here (the SDK does not hand
    the process out). Only records while ``_spawned`` holds a list; otherwise it is the SDK's."""
    original: _Spawn | None = getattr(sdk_stdio, "_create_platform_compatible_process", None)
    if original is None or getattr(original, "_holo_tune_tracked", False):
        return

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        found = _spawned.get()
        if found is not None:
            found.append(process.pid)
        return process

    spawn._holo_tune_tracked = True  # type: ignore[attr-defined]
    sdk_stdio._create_platform_compatible_process = spawn  # type: ignore[attr-defined]


_track_spawns()


def _signal_groups(pids: Sequence[int], sig: signal.Signals) -> None:
    """Send ``sig`` to each server's process group (its pid: the SDK starts each server in a
    session of its own). Synchronous, so no cancellation can cut it short."""
    if sys.platform == "win32":  # pragma: no cover - the SDK's job objects end the tree there
        return
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)


def _group_alive(pid: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover
        return False
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_leftovers(pids: Sequence[int]) -> None:
    """SIGKILL whatever is left of the servers' groups (nothing, when the SDK's shutdown ran)."""
    _signal_groups([pid for pid in pids if _group_alive(pid)], signal.SIGKILL)


def _terminate_if_cancelled(pids: list[int]) -> Callable[..., bool]:
    """An exit callback for the transport's stack: on cancellation, SIGTERM the server's group
    now, so the SDK's shutdown that follows finds it gone instead of waiting out its grace."""

    def on_exit(
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        cancelled = anyio.get_cancelled_exc_class()
        if exc_type is not None and issubclass(exc_type, cancelled):
            _signal_groups(pids, signal.SIGTERM)
        return False

    return on_exit


async def all_tools(session: ClientSession) -> tuple[list[dict[str, Any]], int]:
    """Every tool of a session, following ``nextCursor`` page after page."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    pages = 0
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        result = await session.list_tools(params=params)
        pages += 1
        tools += [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in result.tools]
        cursor = result.next_cursor
        if cursor is None:
            return tools, pages
        if cursor in seen or pages >= MAX_PAGES:
            raise ServerFailure(f"tools/list pagination does not end (cursor {cursor!r} repeats)")
        seen.add(cursor)


async def _open_transport(
    spec: McpServerSpec, stack: AsyncExitStack, errlog: TextIO, phase: Phase, pids: list[int]
) -> tuple[Any, Any]:
    """Enter the spec's transport on ``stack``; returns (read stream, write stream). A stdio
    server's process id is added to ``pids``."""
    if spec.transport == "stdio":
        if spec.env_error:
            raise ServerFailure(spec.env_error)
        if not spec.command:
            raise ServerFailure("no command to start")
        params = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) if spec.env is not None else None,
            cwd=spec.cwd,
            encoding=spec.encoding,
        )
        token = _spawned.set(pids)
        try:
            streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        finally:
            _spawned.reset(token)
        stack.push(_terminate_if_cancelled(pids))  # left first: before the SDK's shutdown
        return streams[0], streams[1]
    if not spec.url:
        raise ServerFailure(f"no url for the {spec.transport} transport")
    headers = dict(spec.headers) if spec.headers else None
    connect = spec.timeout or HTTP_TIMEOUT
    read = spec.sse_read_timeout or SSE_READ_TIMEOUT
    if spec.transport == "sse":
        streams = await stack.enter_async_context(
            sse_client(spec.url, headers=headers, timeout=connect, sse_read_timeout=read)
        )
        return streams[0], streams[1]
    if spec.transport == "http":
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(connect, read=read),
                event_hooks={"response": [phase.on_response]},
            )
        )
        streams = await stack.enter_async_context(
            streamable_http_client(
                spec.url, http_client=client, terminate_on_close=spec.terminate_on_close
            )
        )
        return streams[0], streams[1]
    raise ServerFailure(f"the {spec.transport} transport is not supported by the mcp client")


async def open_session(
    spec: McpServerSpec,
    stack: AsyncExitStack,
    *,
    errlog: TextIO,
    handler: MessageHandlerFnT,
    phase: Phase,
    pids: list[int],
    relay: Callable[[Any], Awaitable[Any]] | None = None,
) -> ClientSession:
    """Connect to the server and initialize its session, every context entered on ``stack``
    (leave it in the task that entered it). ``relay``, if given, stands between the transport's
    read stream and the session (it returns the stream the session reads: a watcher of the
    server's end). A stdio server's process id is added to ``pids``."""
    read, write = await _open_transport(spec, stack, errlog, phase, pids)
    if relay is not None:
        read = await relay(read)
    session = await stack.enter_async_context(ClientSession(read, write, message_handler=handler))
    phase.step = "initialize"
    await session.initialize()
    return session


async def prompt_names(session: ClientSession) -> list[str]:
    """The names of the session's prompts (first page), when the server offers prompts.

    HoloDeck 0.6 (Semantic Kernel) registers them as functions beside the tools; a server that
    fails the request has none for it either (SK swallows the error), so neither does this."""
    capabilities = session.server_capabilities
    if capabilities is None or capabilities.prompts is None:
        return []
    try:
        result = await session.list_prompts()
    except Exception:
        return []
    return [prompt.name for prompt in result.prompts]


async def _list_tools(
    spec: McpServerSpec, errlog: TextIO, garbage: StdoutGarbage, phase: Phase, pids: list[int]
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Connect, initialize, list every page (and the prompts' names), and leave: all inside this
    one task."""
    async with AsyncExitStack() as stack:
        session = await open_session(
            spec, stack, errlog=errlog, handler=garbage, phase=phase, pids=pids
        )
        phase.step = "tools/list"
        tools, pages = await all_tools(session)
        phase.step = "prompts/list"
        return tools, pages, await prompt_names(session)


def explain_failure(
    status: ServerStatus, spec: McpServerSpec, garbage: StdoutGarbage, failure: BaseException | None
) -> None:
    """Complete a failed server's error with its stderr and stdout clues; log the details."""
    assert status.log_path is not None
    error = status.error or "failed"
    if spec.transport == "stdio" and not isinstance(leaf(failure or Exception()), OSError):
        error += stderr_tail(status.log_path)
    status.error = error + garbage.describe()
    with status.log_path.open("a", encoding="utf-8") as log:
        # A process that could not start (no such command, no permission) is said in its one
        # line; a traceback is kept for failures whose cause it may show (the protocol, a crash).
        if failure is not None and not isinstance(leaf(failure), OSError):
            log.write("\n[holo-tune] " + "".join(traceback.format_exception(failure)))
        log.write(f"\n[holo-tune] {spec.name}: {status.error}\n")


async def list_server(
    spec: McpServerSpec,
    *,
    log_dir: Path,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    status: ServerStatus | None = None,
) -> ServerListing:
    """List one server's tools; never raises for a server failure (the status carries it)."""
    status = status or ServerStatus(name=spec.name, transport=spec.transport)
    status.log_path = log_dir / log_name(spec.name)
    if not spec.load_tools:
        status.state, status.seconds = "ok", 0.0
        _notify(on_status, status)
        return ServerListing(status=status)
    status.state = "connecting"
    _notify(on_status, status)
    limit = spec.request_timeout if timeout is None else timeout
    garbage = StdoutGarbage()
    phase = Phase()
    started = time.perf_counter()
    tools: list[dict[str, Any]] = []
    prompts: list[str] = []
    pages = 0
    failure: BaseException | None = None
    pids: list[int] = []
    with status.log_path.open("w", encoding="utf-8") as errlog:
        # move_on_after, not fail_after: a TimeoutError from a socket inside is a failure of its
        # own, not our deadline.
        with anyio.move_on_after(limit) as deadline:
            try:
                tools, pages, prompts = await _list_tools(spec, errlog, garbage, phase, pids)
                status.state, status.tools = "ok", len(tools)
            except Exception as err:
                failure = err
                status.state, status.error = "error", describe_failure(err, spec, phase)
            finally:
                # Also when cancelled from outside: nothing the server started lives on.
                kill_leftovers(pids)
        if deadline.cancelled_caught:
            tools, prompts, failure = [], [], None
            status.state, status.error = "error", f"no answer within {limit:g} s"
    status.seconds = time.perf_counter() - started
    if status.state == "error":
        explain_failure(status, spec, garbage, failure)
    _notify(on_status, status)
    return ServerListing(status=status, tools=tools, pages=max(pages, 1), prompts=prompts)


async def list_servers(
    specs: Sequence[McpServerSpec],
    *,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
    log_dir: Path | None = None,
    concurrent: bool = True,
    on_listing: ListingCallback | None = None,
) -> list[ServerListing]:
    """Every server's listing, in the order of ``specs``; all run at once unless told not to.

    ``on_listing(i, listing)`` is called as each server is done (in the order they answer), so
    a caller can use the first answers while slower servers are still connecting.
    """
    if not specs:
        return []
    log_dir = log_dir or new_log_dir()
    statuses = [ServerStatus(name=s.name, transport=s.transport) for s in specs]
    for status in statuses:
        _notify(on_status, status)
    results: list[ServerListing | None] = [None] * len(specs)

    async def one(i: int) -> None:
        listing = await list_server(
            specs[i], log_dir=log_dir, timeout=timeout, on_status=on_status, status=statuses[i]
        )
        results[i] = listing
        if on_listing is not None:
            try:
                on_listing(i, listing)
            except Exception:  # a broken consumer must not stop the listing
                logger.exception("on_listing callback failed for %s", listing.status.name)

    if concurrent:
        async with anyio.create_task_group() as tg:
            for i in range(len(specs)):
                tg.start_soon(one, i)
    else:
        for i in range(len(specs)):
            await one(i)
    return [r for r in results if r is not None]
