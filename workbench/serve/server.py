"""The FastMCP server of ``holo-tune serve``: the only module that imports ``fastmcp``.

Its listing is FastMCP's search-transform listing: the pinned tools (full definitions, called
directly), then ``search_tools(query)`` and ``call_tool(name, arguments)`` with FastMCP's names
and argument shapes, so a client that knows FastMCP's tool search knows this one; the two are
listed as :data:`~workbench.search.serving.META_TOOLS` words them, the definitions the serve
runtime bills. Unlike
FastMCP's proxy (a new upstream session per request) the tools come from a :class:`ServeProvider`
over holo-tune's index and its sessions kept open; ``search_tools`` answers with holo-tune's
engine and setting (:class:`~workbench.serve.index.ServeIndex`) in a worker thread, so an
embedding request never holds up another call (over stdio a search that is only computation,
milliseconds, runs on the event loop's thread: :func:`build_server`). A plain search is answered
before FastMCP's dispatch (:func:`answer_searches_first`). Every refusal is an MCP error
(``isError``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Annotated, Any

import anyio
import uvicorn
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context, get_http_headers
from fastmcp.server.providers import Provider
from fastmcp.tools import Tool as FastTool
from fastmcp.tools.base import ToolResult
from fastmcp.utilities.versions import VersionSpec
from mcp.types import CallToolResult, TextContent
from pydantic import WithJsonSchema
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.limits import MAX_QUERY_BYTES, query_bytes
from workbench.search.serving import META_TOOLS
from workbench.serve.calls import Router
from workbench.serve.index import QueryTooLong, ServeIndex
from workbench.serve.operate import (
    ERROR_RESULT,
    NO_UPSTREAM,
    OPEN_PATHS,
    REFUSED,
    RESULT,
    Operation,
)
from workbench.serve.upstream import CallFailed
from workbench.serve.usagelog import STDIO_SESSION, call_logged, search_logged, session_digest

logger = logging.getLogger("holo_tune.serve")

SEARCH_TOOL = "search_tools"
CALL_TOOL = "call_tool"
#: serve's own tools as it lists them: the very definitions the serve runtime bills.
LISTED: dict[str, dict[str, Any]] = {tool["name"]: tool for tool in META_TOOLS}
INSTRUCTIONS = (
    "Find tools with search_tools(query): it returns the tools this agent's tuned search selects "
    "for the query, best first, with their input schemas, or says that no tool fits; "
    "select:NAME[,NAME] returns exactly those tools. Call one with call_tool(name, arguments), "
    "or directly by its name."
)


#: ``call_tool``'s ``arguments`` as FastMCP lists it (an object, or null). A JSON string that
#: parses to an object is taken too (the MCP Inspector's CLI sends one), and anything else gets
#: one clear error from the router (:func:`~workbench.serve.calls.call_arguments`), not
#: pydantic's, so the value is not validated here.
ARGUMENTS_SCHEMA: dict[str, Any] = {
    "anyOf": [{"additionalProperties": True, "type": "object"}, {"type": "null"}]
}


class ForwardedTool(FastTool):
    """A tool of an upstream server under its full name: a call goes through the router."""

    _router: Router | None = None
    _operation: Operation | None = None

    def bind(self, router: Router, operation: Operation | None) -> ForwardedTool:
        self._router = router
        self._operation = operation
        return self

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        assert self._router is not None
        return await forward(self._router, self.name, arguments, self._operation)


async def forward(
    router: Router, name: str, arguments: object, operation: Operation | None = None
) -> ToolResult:
    """Call ``name`` through the router: its result, or its one-line refusal as an MCP error
    (counted in ``operation``'s metrics)."""
    started = time.perf_counter()
    upstream = router.upstream_of(name) or NO_UPSTREAM
    try:
        result = await router.call(name, arguments)
    except CallFailed as err:
        if operation is not None:
            operation.called(upstream, REFUSED, time.perf_counter() - started)
        logger.warning("call %s refused: %s", name, err)
        call_logged(router.pool, name, arguments, "refused", started, _session)
        raise ToolError(str(err)) from None
    took = time.perf_counter() - started
    if operation is not None:
        operation.called(upstream, ERROR_RESULT if result.is_error else RESULT, took)
    outcome = "an error result" if result.is_error else "a result"
    logger.info("call %s: %s in %.3f s", name, outcome, took)
    call_logged(router.pool, name, arguments, result.is_error, started, _session)
    return ToolResult.from_mcp_result(result)


def _session() -> str | None:
    """The client's session as the usage log (``--usage-log``) pairs searches and calls: a
    stdio client is serve's one client; over HTTP, the ``Mcp-Session-Id`` header's digest
    (none: a stateless request)."""
    try:
        transport = get_context().transport
    except RuntimeError:
        transport = None
    if transport == "stdio":
        return session_of(None, stdio=True)
    return session_of(get_http_headers(include={"mcp-session-id"}).get("mcp-session-id"))


def session_of(header: str | None, *, stdio: bool = False) -> str | None:
    """The usage log's session: serve's one stdio client, else the digest of an HTTP request's
    ``Mcp-Session-Id`` header (None: a stateless request without one)."""
    if stdio:
        return STDIO_SESSION
    return session_digest(header) if header else None


class ServeProvider(Provider):
    """The pinned tools, ``search_tools`` and ``call_tool``; any tool of the index by name."""

    def __init__(
        self,
        index: ServeIndex,
        router: Router,
        pins: Sequence[str] = (),
        operation: Operation | None = None,
        *,
        inline: bool = False,
    ) -> None:
        super().__init__()
        self.index = index
        self.router = router
        self.pins = list(pins)
        self.operation = operation
        #: Search on the event loop's thread, not a worker's (see :func:`build_server`).
        self.inline = inline
        self._search = listed(FastTool.from_function(self._make_search(), name=SEARCH_TOOL))
        self._call = listed(FastTool.from_function(self._make_call(), name=CALL_TOOL))

    def _make_search(self) -> Any:
        async def search_tools(
            query: Annotated[str, "Natural language query to search for tools"],
        ) -> ToolResult:
            # The engine's answer to ``query``, listed as META_TOOLS says (:func:`listed`). No
            # docstring: FastMCP would parse it with griffe (its import: 40 ms of the start).
            text, structured = await self.search(query, _session)
            return ToolResult(
                content=[TextContent(type="text", text=text)], structured_content=structured
            )

        return search_tools

    async def search(
        self, query: str, session: Callable[[], str | None]
    ) -> tuple[str, dict[str, Any]]:
        """``search_tools``' answer to ``query``: the JSON list as text (``[]`` when nothing is
        found; "no tool fits ..." when the confidence is below the threshold) and the list as
        structured content; logged (``session``: the client's, for the usage log) and counted.
        Raises ToolError for a query over the length limit."""
        failed = _FAILED.get()
        if failed is not None:  # the same search failed before FastMCP's dispatch: not again
            raise failed
        started = time.perf_counter()
        index = self.index
        try:
            if self.inline and index.searches_in_place:
                found = index.search(query)
            else:
                found = await anyio.to_thread.run_sync(index.search, query)
        except QueryTooLong as err:
            search_logged(query, None, started, session, str(err))
            raise ToolError(str(err)) from None
        text, structured = found.text(), {"result": found.definitions()}
        search_logged(query, found, started, session)
        seconds = time.perf_counter() - started
        if self.operation is not None:
            self.operation.searched(seconds, found.refused)
        took = seconds * 1000
        if found.refused:
            logger.info("search: no tool fits (confidence %.3f) in %.1f ms", found.confidence, took)
        else:
            logger.info("search: %d tools in %.1f ms", len(found.tools), took)
        return text, structured

    def _make_call(self) -> Any:
        router = self.router
        operation = self.operation

        async def call_tool(
            name: Annotated[str, "The name of the tool to call"],
            arguments: Annotated[
                Any, WithJsonSchema(ARGUMENTS_SCHEMA), "Arguments to pass to the tool"
            ] = None,
        ) -> ToolResult:
            # Forward the call to the tool's server, listed as META_TOOLS says (no docstring:
            # as search_tools).
            if name in (SEARCH_TOOL, CALL_TOOL):
                raise ToolError(f"{name!r} is one of serve's own tools: call it directly")
            return await forward(router, name, arguments, operation)

        return call_tool

    def _forwarded(self, name: str, schema: dict[str, Any], raw: dict[str, Any]) -> FastTool:
        return ForwardedTool(
            name=name,
            description=raw.get("description") or None,
            parameters=schema,
            output_schema=raw.get("outputSchema"),
        ).bind(self.router, self.operation)

    async def _list_tools(self) -> Sequence[FastTool]:
        pinned = [
            self._forwarded(tool.full_name, dict(tool.input_schema), dict(tool.definition))
            for tool in self.index.pinned(self.pins)
        ]
        return [*pinned, self._search, self._call]

    async def _get_tool(self, name: str, version: VersionSpec | None = None) -> FastTool | None:
        if name == SEARCH_TOOL:
            return self._search
        if name == CALL_TOOL:
            return self._call
        tool = self.index.tool(name)
        if tool is not None:
            return self._forwarded(name, dict(tool.input_schema), dict(tool.definition))
        if self.router.pool is not None and self.router.pool.owner(name) is not None:
            # A tool of a server that is down (or has not listed it): the router says why.
            return self._forwarded(name, {"type": "object"}, {})
        return None


def listed(tool: FastTool) -> FastTool:
    """``tool`` listed with :data:`~workbench.search.serving.META_TOOLS`' description and input
    schema (what the serve runtime bills), not its function's docstring and signature; the
    function still takes what it takes (``call_tool``'s ``arguments`` as a JSON string too)."""
    meta = LISTED[tool.name]
    return tool.model_copy(
        update={"description": meta["description"], "parameters": dict(meta["inputSchema"])}
    )


#: What FastMCP imports on a server's first request (its session-state store, built when first
#: used): 0.35 s, with beartype's decorators, that the first search after a start paid.
FIRST_REQUEST_MODULES = ("key_value.aio.adapters.pydantic", "key_value.aio.stores.memory")


@functools.cache
def warm_first_request() -> None:
    """Import :data:`FIRST_REQUEST_MODULES` in a thread of its own (once), so that the first
    search is as quick as the next ones; a request that comes first waits for the same import, no
    longer than it did. Over stdio at once; over HTTP once ``/readyz`` first answers 200 (begun
    with the transport, the import held the interpreter while HTTP started and ``/readyz`` said
    ready 0.16 s later). A FastMCP that does without these modules is left as it is."""

    def load() -> None:
        for name in FIRST_REQUEST_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    threading.Thread(target=load, name="warm-first-request", daemon=True).start()


def build_server(
    index: ServeIndex,
    router: Router,
    pins: Sequence[str] = (),
    operation: Operation | None = None,
    *,
    inline: bool = False,
) -> FastMCP:
    """The FastMCP server of ``holo-tune serve`` (not started); with ``operation``, its
    searches and calls are counted there and HTTP serves ``/healthz``, ``/readyz`` and
    ``/metrics`` from it (:mod:`~workbench.serve.operate`). ``inline`` (over stdio): a search
    that is only computation (:attr:`ServeIndex.searches_in_place`: no embedding, or a local
    model already loaded; milliseconds) runs on the event loop's thread, where handing it to a
    worker thread and back cost 0.7-1.5 ms of a MiniLM round trip; a search that may wait (an
    embedding API, a model still loading) still goes to a worker thread, so that the client's
    other requests are answered meanwhile. Without it (HTTP) every search runs in a worker
    thread: concurrent searches embed side by side."""
    provider = ServeProvider(index, router, pins, operation, inline=inline)
    server = FastMCP("holo-tune", instructions=INSTRUCTIONS, providers=[provider])
    answer_searches_first(server, provider)
    if operation is not None:
        add_routes(server, operation)
    return server


#: A search that failed before FastMCP's dispatch, for :meth:`ServeProvider.search` to raise
#: again inside FastMCP's (which words it), instead of searching a second time.
_FAILED: ContextVar[Exception | None] = ContextVar("serve_search_failed", default=None)


def answer_searches_first(server: FastMCP, provider: ServeProvider) -> None:
    """Answer a plain ``tools/call`` of ``search_tools`` at the ``mcp`` SDK's handler, before
    FastMCP's: the same answer, logged and counted alike (:meth:`ServeProvider.search`), without
    FastMCP's dispatch around it (its middleware chain, context, provider lookups, argument
    validation and result conversion: 1 ms of a round trip's 5-6 without embeddings, measured
    over stdio). Any other request, and any search this does not answer as FastMCP would (extra
    arguments, ``_meta`` beyond the protocol's own keys, a task, a query that is not a string or
    is over the limit, a search that fails), goes to FastMCP's handler, so every error reads as
    before. serve runs no FastMCP middleware of its own."""
    low = server._mcp_server  # FastMCP's own SDK server: the handlers the runner dispatches to
    fastmcp = low.get_request_handler("tools/call")
    if fastmcp is None:  # a FastMCP that registers it elsewhere: nothing to go before
        return

    async def tools_call(ctx: Any, params: Any) -> Any:
        query = _plain_search(params)
        if query is None:
            return await fastmcp.handler(ctx, params)
        http = ctx.request  # None over stdio
        header = http.headers.get("mcp-session-id") if http is not None else None
        session = functools.partial(session_of, header, stdio=http is None)
        try:
            text, structured = await provider.search(query, session)
        except Exception as err:  # FastMCP words the failure as it always has, not searching again
            token = _FAILED.set(err)
            try:
                return await fastmcp.handler(ctx, params)
            finally:
                _FAILED.reset(token)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured
        )

    low.add_request_handler("tools/call", fastmcp.params_type, tools_call)


#: ``_meta`` keys that only say what the protocol says of every request (the stateless
#: protocol's version, client and log level; a progress token, of a search that reports none).
PROTOCOL_META = ("io.modelcontextprotocol/", "progress_token", "progressToken")


def _protocol_meta(meta: Any) -> bool:
    """Whether a call's ``_meta`` is absent or holds only :data:`PROTOCOL_META` keys (anything
    else, a trace context say, is FastMCP's to read)."""
    if meta is None:
        return True
    keys = meta.model_dump(exclude_none=True) if hasattr(meta, "model_dump") else meta
    return isinstance(keys, dict) and all(str(key).startswith(PROTOCOL_META) for key in keys)


def _plain_search(params: Any) -> str | None:
    """The query of a ``search_tools`` call with nothing else to it, else None."""
    arguments = getattr(params, "arguments", None)
    if (
        getattr(params, "name", None) != SEARCH_TOOL
        or not _protocol_meta(getattr(params, "meta", None))
        or getattr(params, "task", None) is not None
        or getattr(params, "input_responses", None) is not None
        or getattr(params, "request_state", None) is not None
        or not isinstance(arguments, dict)
        or list(arguments) != ["query"]
        or type(arguments["query"]) is not str
    ):
        return None
    query: str = arguments["query"]
    return query if query_bytes(query) <= MAX_QUERY_BYTES else None


def add_routes(server: FastMCP, op: Operation) -> None:
    """``/healthz`` (alive: 200 while the process answers, draining or not), ``/readyz`` (200
    or 503, and a JSON body: :meth:`Operation.readiness`) and ``/metrics`` (Prometheus)."""

    @server.custom_route("/healthz", methods=["GET"], include_in_schema=False)
    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok\n")

    @server.custom_route("/readyz", methods=["GET"], include_in_schema=False)
    async def readyz(request: Request) -> Response:
        ready, body = op.readiness()
        if ready:
            warm_first_request()
        return JSONResponse(body, status_code=200 if ready else 503)

    @server.custom_route("/metrics", methods=["GET"], include_in_schema=False)
    async def metrics(request: Request) -> Response:
        return Response(op.exposition(), media_type=METRICS_TYPE)


#: ``/metrics``' content type (Prometheus' text format 0.0.4).
METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: What a request gets while serve drains: 503 (a load balancer tries another replica), a
#: JSON-RPC error its client can show, and the connection closed.
DRAINING = "serve is stopping (draining): send the request to another replica"


class DrainGate:
    """ASGI middleware: every request but the probes' and the scrape's is counted in flight
    (:meth:`Operation.enter`), and refused with 503 once serve drains."""

    def __init__(self, app: ASGIApp, operation: Operation) -> None:
        self.app = app
        self.operation = operation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        if not self.operation.enter():
            refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": DRAINING}}
            headers = {"Retry-After": "1", "Connection": "close"}
            await JSONResponse(refusal, status_code=503, headers=headers)(scope, receive, send)
            return
        try:
            await self.app(scope, receive, whole_answers(send))
        finally:
            self.operation.leave()


def whole_answers(send: Send) -> Send:
    """``send`` with a response's start held until its body is ready, then both sent at once:
    the MCP SDK sends them from different steps of the event loop, and a replica killed between
    them left the balancer a header without a body, which it can neither retry nor complete
    (a client's read error, seen under load). An event stream's start goes at once (it may wait
    long for its first event)."""
    held: list[Message] = []

    async def send_whole(message: Message) -> None:
        if message["type"] == "http.response.start" and not _event_stream(message):
            held.append(message)
            return
        while held:
            await send(held.pop())
        await send(message)

    return send_whole


def _event_stream(start: Message) -> bool:
    return any(
        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
        for name, value in start.get("headers", ())
    )


class _Uvicorn(uvicorn.Server):
    """Uvicorn that leaves the signals to serve (:mod:`~workbench.serve.app` drains first)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def http_runner(server: FastMCP, host: str, port: int, path: str, op: Operation) -> _Uvicorn:
    """The HTTP transport, not started (``await runner.serve()``): streamable HTTP at ``path``
    in FastMCP's stateless mode (any replica answers any request; a client of the
    session-based protocol is still answered) behind the drain gate, until
    ``op.stop_transport()`` (set here): then uvicorn ends its connections (2 s at most) and
    ``serve()`` returns."""
    app = server.http_app(
        path=path,
        transport="http",
        stateless_http=True,
        # Each answer whole, as JSON, once it is ready (not an event stream opened at once): a
        # replica that dies mid-request has sent nothing, so a load balancer can send the
        # request to another (deploy/holo-tune.conf.template).
        json_response=True,
        middleware=[Middleware(DrainGate, operation=op)],
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
        ws="websockets-sansio",
    )
    runner = _Uvicorn(config)

    def stop() -> None:
        runner.should_exit = True

    op.stop_transport = stop
    return runner
