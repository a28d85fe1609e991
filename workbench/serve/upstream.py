"""The agent's MCP servers for ``holo-tune serve``: one session per MCP entry, kept open.

Each :class:`Upstream` runs its session in a task of its own (its transport and session
contexts are entered and left in that task, as :mod:`workbench.catalog.mcp_client` requires),
opened with the listing's own :func:`~workbench.catalog.mcp_client.open_session`: the same
transports, environment, process groups and per-server log file. Calls come from other tasks
and go through the open session, each bounded by the server's timeout.

A server that fails to start or dies is ``down`` with a one-line reason; the next call starts
it again, at once the first time, then no sooner than :class:`Backoff` allows (2 s, 4 s, ...
up to a minute, until a call succeeds). The end of a stdio server is seen as it happens (a
watcher stands between the transport and the session), so a call never goes to a dead one.
An upstream's ``notifications/tools/list_changed`` lists that server again. Whenever a
server's tools change (a new listing, a restart listing other tools), ``on_change`` is called.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, types
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.shared.exceptions import MCPError

from workbench.catalog.build import ServerListing, local_name
from workbench.catalog.diagnose import Phase, StdoutGarbage, describe_failure
from workbench.catalog.mcp_client import (
    all_tools,
    explain_failure,
    kill_leftovers,
    open_session,
)
from workbench.catalog.models import ServerStatus
from workbench.catalog.serverlogs import log_name, stderr_tail
from workbench.catalog.specs import McpServerSpec

logger = logging.getLogger("holo_tune.serve")

#: Seconds :meth:`UpstreamPool.stop` waits for the sessions to end before killing what is left.
STOP_GRACE = 5.0
#: What the session's task is told: list the tools again, or the server's output ended.
RELIST, CLOSED = "relist", "closed"


class CallFailed(Exception):
    """A call that did not reach a result; the message is the MCP error the client sees."""


@dataclass
class Backoff:
    """When a down server may be started again: the first restart at once, then no sooner than
    ``first`` seconds after the last one, doubling up to ``cap``, until a call succeeds."""

    first: float = 2.0
    cap: float = 60.0
    restarts: int = 0
    last: float = 0.0

    def wait(self, now: float) -> float:
        """Seconds until a restart is allowed (0: now)."""
        if self.restarts == 0:
            return 0.0
        delay: float = min(self.first * 2.0 ** (self.restarts - 1), self.cap)
        return max(0.0, self.last + delay - now)

    def attempted(self, now: float) -> None:
        self.restarts += 1
        self.last = now

    def succeeded(self) -> None:
        self.restarts = 0


class Upstream:
    """One MCP entry's session, started in the pool's task group and kept open."""

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        log_dir: Path,
        timeout: float | None,
        on_change: Callable[[Upstream], None],
    ) -> None:
        self.spec = spec
        #: Bounds the start and every call: ``--timeout``, else the entry's request_timeout.
        self.timeout = spec.request_timeout if timeout is None else timeout
        self.status = ServerStatus(name=spec.name, transport=spec.transport)
        self.status.log_path = log_dir / log_name(spec.name)
        #: The last ``tools/list`` (kept while the server is down: its tools stay searchable).
        self.tools: list[dict[str, Any]] | None = None
        #: The process ids each run started (a run's own list: a run ending kills only its own).
        self.runs: list[list[int]] = []
        self.backoff = Backoff()
        self._on_change = on_change
        self._session: ClientSession | None = None
        self._scope: anyio.CancelScope | None = None
        self._lock = anyio.Lock()
        self._task_group: TaskGroup | None = None
        #: Set when the session's task has ended (every context left, the process gone).
        self.ended = anyio.Event()
        self._stopped = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def up(self) -> bool:
        return self._session is not None

    # -- the session's task ----------------------------------------------------------------
    async def start(self, task_group: TaskGroup) -> None:
        """Start the session in ``task_group`` and wait until it is up or down (its timeout)."""
        self._task_group = task_group
        ready = anyio.Event()
        self.ended = anyio.Event()
        task_group.start_soon(self._run, ready)
        with anyio.move_on_after(self.timeout):
            await ready.wait()
        if not ready.is_set():
            self._down(f"no answer within {self.timeout:g} s")
            if self._scope is not None:
                self._scope.cancel()
            await ready.wait()

    async def _run(self, ready: anyio.Event) -> None:
        try:
            await self._session_task(ready)
        finally:  # also when the pool is cancelled
            ready.set()
            self.ended.set()

    async def _session_task(self, ready: anyio.Event) -> None:
        spec, status = self.spec, self.status
        garbage, phase = StdoutGarbage(), Phase()
        send, receive = anyio.create_memory_object_stream[str](8)
        status.state, status.error = "connecting", None
        status = self.status  # (a fresh name: the steps below change its state)
        failure: BaseException | None = None
        started = time.perf_counter()
        pids: list[int] = []
        self.runs.append(pids)
        assert status.log_path is not None
        # Each run its own log (a restart starts it afresh; serve.log keeps every diagnosis).
        with status.log_path.open("w", encoding="utf-8") as errlog, anyio.CancelScope() as scope:
            self._scope = scope
            try:
                async with AsyncExitStack() as stack:
                    session = await open_session(
                        spec,
                        stack,
                        errlog=errlog,
                        handler=_handler(garbage, send),
                        phase=phase,
                        pids=pids,
                        relay=_watcher(stack, send),
                    )
                    phase.step = "tools/list"
                    tools, _ = await all_tools(session)
                    status.seconds = time.perf_counter() - started
                    self._listed(session, tools)
                    ready.set()
                    await self._serve(session, receive)
                    self._down("the server exited" + stderr_tail(status.log_path))
            except Exception as err:
                failure = err
                self._down(describe_failure(err, spec, phase))
            finally:
                self._session = None
                kill_leftovers(pids)
        if status.state == "error" and not ready.is_set():
            explain_failure(status, spec, garbage, failure)
        if self._stopped:
            logger.info("server %s: stopped", spec.name)
        elif status.state == "error":
            logger.warning("server %s is down: %s", spec.name, status.error)

    async def _serve(self, session: ClientSession, events: MemoryObjectReceiveStream[str]) -> None:
        """Until the server's output ends: list its tools again when it says they changed."""
        async for event in events:
            if event == CLOSED:
                return
            with anyio.move_on_after(self.timeout):
                try:
                    tools, _ = await all_tools(session)
                except MCPError as err:
                    logger.warning("server %s: listing its tools again failed: %s", self.name, err)
                    continue
                logger.info("server %s: its tools changed; listed again", self.name)
                self._listed(session, tools)

    def _listed(self, session: ClientSession, tools: list[dict[str, Any]]) -> None:
        changed = tools != self.tools
        self._session, self.tools = session, tools
        self.status.state, self.status.error, self.status.tools = "ok", None, len(tools)
        logger.info("server %s: up, %d tools", self.name, len(tools))
        if changed:
            self._on_change(self)

    def _down(self, why: str) -> None:
        if self.status.state != "error":
            self.status.state, self.status.error = "error", why

    # -- calls -----------------------------------------------------------------------------
    async def ensure_up(self) -> ClientSession:
        """The open session, starting the server again if it is down and the backoff allows."""
        async with self._lock:
            if self._session is not None:
                return self._session
            if self._stopped:
                raise CallFailed(f"server {self.name} is stopped: serve is stopping")
            now = time.monotonic()
            wait = self.backoff.wait(now)
            if wait > 0 or self._task_group is None:
                raise CallFailed(
                    f"server {self.name} is down ({self.status.error}); "
                    f"it is started again on a call in {wait:.0f} s or later"
                )
            self.backoff.attempted(now)
            with anyio.move_on_after(STOP_GRACE):
                await self.ended.wait()  # the last run has left its contexts
            logger.info("server %s: starting it again", self.name)
            await self.start(self._task_group)
            if self._session is None:
                raise CallFailed(f"server {self.name} is down: {self.status.error}")
            return self._session

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call ``tool`` (the server's own name) within the timeout; MCP errors as CallFailed."""
        session = await self.ensure_up()
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self.timeout)
        except MCPError as err:
            if err.code == types.REQUEST_TIMEOUT:
                raise CallFailed(
                    f"server {self.name}: {tool} gave no answer within {self.timeout:g} s"
                ) from None
            if err.code == types.CONNECTION_CLOSED:
                self._close("the server exited during a call")
                raise CallFailed(
                    f"server {self.name} exited during the call to {tool}; "
                    "the next call starts it again"
                ) from None
            raise CallFailed(f"server {self.name}: {err.message or err}") from None
        except Exception as err:  # the transport failed (an HTTP server gone): start afresh
            why = describe_failure(err, self.spec)
            self._close(why)
            raise CallFailed(f"server {self.name}: {why}") from None
        self.backoff.succeeded()
        return result

    def stop(self) -> None:
        """End the session for good: no call starts it again."""
        self._stopped = True
        self._close("serve is stopping")

    def _close(self, why: str) -> None:
        """End the session (its task leaves its contexts); the next call starts it again."""
        self._down(why)
        self._session = None
        if self._scope is not None:
            self._scope.cancel()

    def listing(self) -> ServerListing:
        """This server as the catalog sees it: its last tools while it has listed any."""
        status = copy.copy(self.status)
        if self.tools is None:
            return ServerListing(status=status)
        status.state = "ok"
        return ServerListing(status=status, tools=list(self.tools))

    def find(self, local: str) -> dict[str, Any] | None:
        """The listed tool whose runtime (local) name is ``local``: the first, as the catalog
        keeps the first of two names that become the same."""
        for tool in self.tools or ():
            if local_name(str(tool.get("name", ""))) == local:
                return tool
        return None


def _handler(garbage: StdoutGarbage, events: MemoryObjectSendStream[str]) -> MessageHandlerFnT:
    """The session's message handler: stdout garbage collected, ``tools/list_changed`` relayed."""

    async def handle(message: IncomingMessage) -> None:
        await garbage(message)
        if isinstance(message, types.ToolListChangedNotification):
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                events.send_nowait(RELIST)

    return handle


def _watcher(
    stack: AsyncExitStack, events: MemoryObjectSendStream[str]
) -> Callable[[Any], Awaitable[Any]]:
    """A relay between the transport and the session that says ``closed`` when the server's
    output ends (a stdio server that exited), so the session is closed before the next call."""

    async def relay(read: Any) -> Any:
        send, receive = anyio.create_memory_object_stream[Any](0)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)  # left before the group: the relay ends

        async def forward() -> None:
            async with send:
                with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for item in read:
                        await send.send(item)
            with suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                events.send_nowait(CLOSED)

        group.start_soon(forward)
        return receive

    return relay


class UpstreamPool:
    """Every MCP entry's :class:`Upstream`, started at once and stopped together.

    ``async with`` starts them all concurrently (a server that fails is down, the others serve)
    and, on the way out, ends every session and kills whatever is left of their process groups.
    """

    def __init__(
        self,
        specs: Sequence[McpServerSpec],
        *,
        log_dir: Path,
        timeout: float | None = None,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._on_change = on_change
        self.upstreams = [
            Upstream(spec, log_dir=log_dir, timeout=timeout, on_change=self._changed)
            for spec in specs
            if spec.load_tools
        ]
        self._by_name = {upstream.name: upstream for upstream in self.upstreams}
        self._group: TaskGroup | None = None
        self._starting = False
        #: Set once every server has been started (up or down): a call waits for it.
        self.started = anyio.Event()

    def _changed(self, upstream: Upstream) -> None:
        if self._on_change is not None and not self._starting:
            self._on_change()

    async def __aenter__(self) -> UpstreamPool:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._starting = True
        try:
            async with anyio.create_task_group() as starting:
                for upstream in self.upstreams:
                    starting.start_soon(upstream.start, self._group)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        finally:
            self._starting = False
            self.started.set()
        return self

    async def __aexit__(self, *exc: object) -> None:
        group, self._group = self._group, None
        if group is None:
            return
        group.cancel_scope.cancel()
        try:
            await group.__aexit__(None, None, None)
        finally:
            self.kill_all()

    async def stop(self) -> None:
        """End every session now, from any task, and wait until each one's task has left its
        contexts (its process stopped); what lingers of a process group is killed. (Not the
        group's scope: it also covers the code of the task that entered the pool.)"""
        for upstream in self.upstreams:
            upstream.stop()
        with anyio.move_on_after(STOP_GRACE):
            for upstream in self.upstreams:
                await upstream.ended.wait()
        self.kill_all()

    def revive(self, upstream: Upstream) -> None:
        """Start a down server again in the background, when its backoff allows (what a call
        would do; ``/readyz`` does it for a server it needs). Nothing when the pool is not
        running."""
        group = self._group
        if group is None or upstream.up or upstream.backoff.wait(time.monotonic()) > 0:
            return

        async def attempt() -> None:
            with suppress(CallFailed):
                await upstream.ensure_up()

        group.start_soon(attempt)

    def kill_all(self) -> None:
        """SIGKILL whatever is left of every server's process group (synchronous)."""
        kill_leftovers([pid for up in self.upstreams for pids in up.runs for pid in pids])

    def get(self, name: str) -> Upstream | None:
        return self._by_name.get(name)

    def listings(self) -> dict[str, ServerListing]:
        return {upstream.name: upstream.listing() for upstream in self.upstreams}

    def owner(self, full_name: str) -> tuple[Upstream, str] | None:
        """The server a full tool name (``<server>-<tool>``) belongs to and the tool's local
        name: the longest server name that is a prefix (server names may hold ``-``)."""
        best: Upstream | None = None
        for upstream in self.upstreams:
            prefix = upstream.name + "-"
            if full_name.startswith(prefix) and (best is None or len(prefix) > len(best.name) + 1):
                best = upstream
        if best is None:
            return None
        return best, full_name[len(best.name) + 1 :]
