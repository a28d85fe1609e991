"""``holo-tune serve`` running: the servers started, the index built, the transport served.

:func:`serve_live` starts every MCP entry of the agent at once (:class:`UpstreamPool`), builds
the index from what they listed, serves until the client leaves (stdio: stdin closed) or a
SIGINT/SIGTERM arrives, then stops every server (its process group killed if it lingers);
over HTTP a signal drains first (:mod:`~workbench.serve.operate`): the requests in flight
finish, new ones are refused, then the transport ends, then the servers stop. A change of a
server's tools re-indexes in a worker thread. :func:`serve_snapshot` serves a snapshot's index,
with no server started or (``--live-calls``) the servers started beside it for the calls. Only
this package's ``server`` module imports fastmcp.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskGroup, TaskStatus

from workbench import startup
from workbench.catalog.models import Catalog, CatalogView
from workbench.catalog.specs import specs_from_agent
from workbench.config import AgentConfig
from workbench.errors import EXIT_INTERRUPTED, InputError
from workbench.search.embedders import EmbedderChoice
from workbench.search.holo.neighbours import Labelled
from workbench.search.holo.settings import HoloSettings
from workbench.serve.calls import Router
from workbench.serve.index import ServeIndex, live_catalog
from workbench.serve.operate import DRAIN_SECONDS, Operation
from workbench.serve.upstream import STOP_GRACE, UpstreamPool

logger = logging.getLogger("holo_tune.serve")

#: Seconds a stop by signal waits for the transport to end before the process leaves anyway
#: (uvicorn's graceful shutdown takes up to 2 s).
EXIT_GRACE = {"stdio": 1.0, "http": 4.0}
#: The line every command ends with on Ctrl-C (``workbench.cli``'s).
INTERRUPTED = "holo-tune: interrupted\n"
#: The streamable-HTTP endpoint's path (FastMCP's default).
HTTP_PATH = "/mcp"


@dataclass(frozen=True)
class Transport:
    """How serve is reached: stdio, or streamable HTTP at ``http://host:port/mcp``."""

    kind: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    #: The servers ``/readyz`` needs up (``--ready-needs``).
    ready_needs: tuple[str, ...] = ()
    #: HTTP's listening socket, bound before any server starts (:func:`listen`); None: uvicorn
    #: binds ``host:port`` itself.
    sock: socket.socket | None = field(default=None, compare=False, repr=False)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{HTTP_PATH}"


def listen(host: str, port: int) -> socket.socket:
    """HTTP's socket bound to ``host:port`` now, before any server starts and before serve says
    where it serves: a port in use, an address this machine does not have or a host name that
    does not resolve is one line (InputError naming ``--port`` or ``--host``), not uvicorn's
    traceback after the servers have started."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise InputError(f"{host}: cannot resolve it: {err.strerror}", field="--host") from None
    family, kind, proto, _, address = found[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as err:
        sock.close()
        why = (err.strerror or str(err)).lower()
        raise InputError(f"cannot listen on {host}:{port}: {why}", field="--port") from None
    sock.set_inheritable(True)
    return sock


@dataclass(frozen=True)
class LiveServers:
    """The agent's MCP servers a snapshot's index forwards calls to (``--live-calls``)."""

    agent: AgentConfig
    log_dir: Path
    timeout: float | None


async def serve_snapshot(
    index: ServeIndex, transport: Transport, live: LiveServers | None = None
) -> int:
    """Serve a snapshot's index: search works at once. Without ``live`` every call says it
    needs the live servers; with it the agent's servers start beside the transport (a replica
    lists and embeds nothing to answer a search; a call waits until they have started), and
    stop at the end. The index stays the snapshot's. Returns the exit code
    (:meth:`_Stopping.exit_code`)."""
    stopping = _Stopping()
    async with anyio.create_task_group() as group:
        await group.start(_stop_on_signal, group, stopping, transport)
        pool: UpstreamPool | None = None
        done, left = anyio.Event(), anyio.Event()
        if live is not None:
            specs = specs_from_agent(live.agent).mcp()
            logger.info("starting %d servers", len(specs))
            pool = UpstreamPool(specs, log_dir=live.log_dir, timeout=live.timeout)
            stopping.pool = pool
            group.start_soon(_keep_open, pool, done, left)
        await _run(index, Router(index, pool), transport, stopping)
        if pool is not None:
            await pool.stop()
            done.set()
            await left.wait()
        group.cancel_scope.cancel()
    return stopping.exit_code()


async def _keep_open(pool: UpstreamPool, done: anyio.Event, left: anyio.Event) -> None:
    """Start ``pool``'s servers and keep them open until ``done``; ``left`` once they are
    stopped (their process groups killed)."""
    try:
        async with pool:
            _say_down(pool)
            await done.wait()
    finally:
        left.set()


async def serve_live(
    agent: AgentConfig,
    settings: HoloSettings,
    *,
    embedder: EmbedderChoice,
    labelled: Callable[[Catalog], Labelled | None] | None,
    transport: Transport,
    log_dir: Path,
    timeout: float | None,
    view: CatalogView,
) -> int:
    """Start the agent's servers, index what they list (as ``view``, serve's runtime's, sees
    it), serve, and stop them all at the end. Returns the exit code
    (:meth:`_Stopping.exit_code`)."""
    changed = anyio.Event()
    specs = specs_from_agent(agent).mcp()

    def on_change() -> None:
        changed.set()

    stopping = _Stopping()
    async with anyio.create_task_group() as group:
        await group.start(_stop_on_signal, group, stopping, transport)
        logger.info("starting %d servers", len(specs))
        pool = UpstreamPool(specs, log_dir=log_dir, timeout=timeout, on_change=on_change)
        stopping.pool = pool
        async with pool:
            _say_down(pool)
            catalog = live_catalog(agent, pool.listings(), view)
            index = await anyio.to_thread.run_sync(
                lambda: ServeIndex(agent, catalog, settings, embedder=embedder, labelled=labelled)
            )

            async def reindex() -> None:
                nonlocal changed
                while True:
                    await changed.wait()
                    changed = anyio.Event()
                    catalog = live_catalog(agent, pool.listings(), view)
                    await anyio.to_thread.run_sync(index.rebuild, catalog)
                    logger.info("re-indexed: %d tools", len(catalog))

            group.start_soon(reindex)
            await _run(index, Router(index, pool), transport, stopping)
            await pool.stop()  # after the transport: a drain lets the calls in flight finish
        group.cancel_scope.cancel()
    return stopping.exit_code()


def _say_down(pool: UpstreamPool) -> None:
    for upstream in pool.upstreams:
        if not upstream.up:
            logger.warning(
                "server %s failed to start (%s); its tools are left out (log: %s)",
                upstream.name,
                upstream.status.error,
                upstream.status.log_path,
            )


async def _run(
    index: ServeIndex, router: Router, transport: Transport, stopping: _Stopping
) -> None:
    from workbench.serve.server import build_server, http_runner, warm_first_request

    pins = index.settings.pins
    operation = Operation(index, router.pool, transport.ready_needs)
    stopping.operation = operation
    server = build_server(index, router, pins, operation, inline=transport.kind == "stdio")
    startup.loaded()  # the index and the server built: serve's start is over
    _say_ready(index, pins, transport)
    _load_model_soon(index, operation)
    if transport.kind == "stdio":  # over HTTP, once /readyz first says ready
        warm_first_request()
    if transport.kind == "stdio":
        stopping.serving = True
        await server.run_stdio_async(show_banner=False, log_level="WARNING")
    else:
        runner = http_runner(server, transport.host, transport.port, HTTP_PATH, operation)
        stopping.serving = True
        await runner.serve(sockets=None if transport.sock is None else [transport.sock])


class _Stopping:
    """What a signal stops (the pool, once there is one; the HTTP transport's drain, once it
    runs), whether the transport runs, and the signal that stopped serve (None: the client
    left)."""

    pool: UpstreamPool | None = None
    operation: Operation | None = None
    serving: bool = False
    signum: int | None = None

    def exit_code(self) -> int:
        """130 after SIGINT (Ctrl-C: interrupted, as every command), else 0 (the client left, or
        SIGTERM: a service's ordinary stop)."""
        return EXIT_INTERRUPTED if self.signum == signal.SIGINT else 0


async def _stop_on_signal(
    group: TaskGroup,
    stopping: _Stopping,
    transport: Transport,
    *,
    task_status: TaskStatus[None] = TASK_STATUS_IGNORED,
) -> None:
    """SIGINT or SIGTERM. HTTP, once serving: the drain (new requests refused with 503,
    ``/readyz`` not ready, the requests in flight finished), then the transport ends, then the
    servers stop (:func:`serve_live` and :func:`serve_snapshot` stop them once the transport
    has ended). Otherwise every server is stopped first, then the transport: the stdio
    transport is cancelled, but its reader may not end until its client writes or leaves, so
    the process then leaves after :data:`EXIT_GRACE` (every server is already stopped)."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            logger.info("%s: stopping", signal.Signals(signum).name)
            stopping.signum = signum
            op = stopping.operation
            if transport.kind == "http" and stopping.serving and op is not None:
                await _drain(op)
                # The transport ends, then the servers stop; whatever hangs, the process
                # leaves with no server behind once they have had their time.
                _exit_after(EXIT_GRACE["http"] + STOP_GRACE + 1.0, stopping.exit_code(), op.pool)
                assert op.stop_transport is not None
                op.stop_transport()
                return
            if stopping.pool is not None:
                await stopping.pool.stop()
            _exit_after(EXIT_GRACE[transport.kind], stopping.exit_code())
            if transport.kind == "stdio" or not stopping.serving:
                group.cancel_scope.cancel()
            return


async def _drain(op: Operation) -> None:
    """Refuse new requests and let those in flight finish (:meth:`Operation.drain`)."""
    if op.in_flight:
        logger.info("draining: %d requests in flight", op.in_flight)
    left = await op.drain()
    if left:
        logger.warning("%d requests still in flight after %g s: stopping", left, DRAIN_SECONDS)
    else:
        logger.info("drained: no request in flight")


def _exit_after(seconds: float, code: int, pool: UpstreamPool | None = None) -> None:
    """End the process in ``seconds`` with ``code`` unless it has ended by then: the stdio
    transport reads stdin in a thread that no cancellation reaches while the client keeps its
    pipe open. Called once every server has stopped, or with the ``pool`` whose leftovers are
    killed first, so nothing is left behind."""

    def leave() -> None:
        if pool is not None:
            pool.kill_all()
        logger.info("stopped")
        logging.shutdown()
        if code == EXIT_INTERRUPTED:
            sys.stderr.write(INTERRUPTED)
            sys.stderr.flush()
        os._exit(code)

    timer = threading.Timer(seconds, leave)
    timer.daemon = True
    timer.start()


def _say_ready(index: ServeIndex, pins: Sequence[str], transport: Transport) -> None:
    logger.info("search: %s over %d tools", settings_line(index), len(index.catalog))
    if index.engine.tool_error:
        logger.warning("no dense signal: %s", index.engine.tool_error)
    elif index.settings.weights.get("dense") and index.embedder.serve_note:
        logger.warning("%s", index.embedder.serve_note)
    unmatched = [pin for pin in pins if not index.pinned([pin])]
    for pin in unmatched:
        logger.warning("--pin %s matches no tool: it is not listed", pin)
    where = "stdio" if transport.kind == "stdio" else transport.url
    logger.info("serving on %s", where)


def _load_model_soon(index: ServeIndex, operation: Operation) -> None:
    """Load the embedding model in a thread of its own while serve already answers: the tool
    vectors come from the disk cache, so without this the first search would wait seconds for
    the model its query vector needs (a search in the meantime waits for the same load).
    ``/readyz`` says not ready until it is loaded, and why when it failed
    (:meth:`Operation.model`)."""
    from workbench.search.embedders.local import load_model, model_to_load, own_model

    embedder = index.engine.embedder
    one_thread_per_query(embedder)  # before the load: a search may wait for it, then embed
    own = own_model(embedder)
    if own is None:
        return
    backend = getattr(own, "backend", None)
    model = str(getattr(own, "model_id", "") or "") + (f" ({backend})" if backend else "")
    if model_to_load(embedder) is None:  # loaded already, beside the index (load_model_early)
        logger.info("embedding model %s loaded", model)
        return

    def load() -> None:
        started = time.perf_counter()
        try:
            load_model(embedder)
        except Exception as err:  # the first search says it again, as an MCP error
            logger.warning("embedding model %s failed to load: %s", model, err)
            operation.model_error = str(err)
            return
        one_thread_per_query(embedder)
        logger.info("embedding model %s loaded in %.1f s", model, time.perf_counter() - started)

    threading.Thread(target=load, name="load-model", daemon=True).start()


def one_thread_per_query(embedder: object | None = None) -> None:
    """Serve's queries run on one thread each: a query's work is small (a local model's
    forward pass over one short text; numpy's product of one vector with the tool vectors,
    1,287 x 384 on bfcl: 0.05 ms), and handing it to a second thread costs more than it saves,
    on a busy machine many times more (OpenBLAS's two threads took that product from 0.05 ms to
    8-12 ms at a load of 4-8 on 2 cores; torch's two, MiniLM's forward pass from 50 ms to
    500 ms). numpy's BLAS is told always; ``embedder``'s local model, in whichever thread it
    embeds (:func:`~workbench.search.embedders.local.embed_on_threads`: the search that waited
    for the model's load ran every later search of its worker thread on torch's two threads
    before); torch's count for new threads, when torch is already loaded (the tools were
    embedded before, with every thread)."""
    from threadpoolctl import threadpool_limits

    from workbench.search.embedders.local import embed_on_threads

    threadpool_limits(limits=1, user_api="blas")
    if embedder is not None:
        embed_on_threads(embedder, 1)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def settings_line(index: ServeIndex) -> str:
    """The served settings in words: the signals that count, the cut and the threshold."""
    s = index.settings
    dense = index.dense
    signals = [
        f"{name} {weight:g}" + (f" ({dense})" if name == "dense" else "")
        for name, weight in s.weights.items()
        if weight and (name != "dense" or dense)
    ]
    cut = []
    if s.top_k is not None:
        cut.append(f"top_k {s.top_k}")
    if s.max_tokens is not None:
        cut.append(f"max_tokens {s.max_tokens:,}")
    threshold = f"threshold {s.threshold:g}" if s.threshold is not None else "no threshold"
    return f"holo engine ({', '.join(signals) or 'no signal'}), {', '.join(cut)}, {threshold}"
