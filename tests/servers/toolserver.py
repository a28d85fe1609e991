"""A small, well-behaved MCP server for the tests, built on the mcp SDK's low-level Server.

    python toolserver.py [--tools N] [--page-size K] [--odd] [--slow-list S] [--slow-call S]
                         [--wait-file F]
                         [--echo-env NAME] [--callable] [--prompts N] [--plugin-names]
                         [--transport stdio|http|sse] [--port P] [--tag TEXT]

``--tools N`` serves tools ``tool_00`` ... (listed in reverse name order, so the catalog's
alphabetical sort is visible); ``--page-size K`` paginates tools/list with ``nextCursor``;
``--odd`` adds names the runtime rewrites or skips and a tool with no description;
``--slow-list S`` sleeps S seconds in every tools/list (a hang when S is large);
``--slow-call S`` sleeps S seconds in every call of a ``tool_NN`` (a call that stays in flight);
``--wait-file F`` answers tools/list only once file F exists (a test decides when it answers);
``--echo-env NAME`` adds a tool ``env_probe`` whose description is ``NAME=<value or <unset>>``;
``--callable`` answers tools/call: a ``tool_NN`` says its name and arguments, and three more tools
misbehave on purpose: ``hang`` never answers, ``crash`` ends the process mid-call, ``grow`` adds
``tool_new`` to the listing and sends ``notifications/tools/list_changed``;
``--plugin-names`` adds, after the others, tools named like attributes of Semantic Kernel's MCP
plugin (``connect``, ``close``: HoloDeck 0.6 skips them) and ``undescribed``, listed with no
description (mongodb-mcp-server lists a ``connect``);
``--prompts N`` also serves prompts ``prompt_00`` ... (with one argument each);
``--tag`` is ignored (tests put a unique tag on the command line to find the process).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server


def make_tools(count: int, odd: bool) -> list[types.Tool]:
    tools = [
        types.Tool(
            name=f"tool_{i:02d}",
            description=f"Test tool number {i}",
            input_schema={
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "limit": {"type": "integer"},
                },
                "required": ["query"],
            },
        )
        for i in reversed(range(count))
    ]
    if odd:
        empty = {"type": "object"}
        tools += [
            types.Tool(name="read/file", description="Read a file", input_schema=empty),
            types.Tool(name="read?file", description="Also read", input_schema=empty),
            types.Tool(name="Zeta.v2", description="", input_schema=empty),
            types.Tool(
                name="alpha tool",
                description="Has a space",
                input_schema={"type": "object", "properties": {"b": {}, "a": {}}},
            ),
        ]
    return tools


def build_server(args: argparse.Namespace) -> Server[Any]:
    tools = make_tools(args.tools, args.odd)
    for name in args.echo_env:
        value = os.environ.get(name, "<unset>")
        tools.append(
            types.Tool(
                name="env_probe", description=f"{name}={value}", input_schema={"type": "object"}
            )
        )

    if args.plugin_names:
        tools += [
            types.Tool(
                name="connect",
                description="Connect to a MongoDB deployment with a connection string",
                input_schema={
                    "type": "object",
                    "properties": {"connectionString": {"type": "string"}},
                    "required": ["connectionString"],
                },
            ),
            types.Tool(
                name="close",
                description="Close the current session",
                input_schema={"type": "object"},
            ),
            types.Tool(
                name="undescribed",
                input_schema={"type": "object", "properties": {"collection": {"type": "string"}}},
            ),
        ]

    if args.callable:
        empty = {"type": "object"}
        tools += [
            types.Tool(name=name, description=f"Misbehaves: {name}", input_schema=empty)
            for name in ("hang", "crash", "grow")
        ]

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "hang":
            await anyio.sleep_forever()
        if params.name == "crash":
            os._exit(1)
        if params.name == "grow":
            new = types.Tool(name="tool_new", description="Added by grow", input_schema=empty)
            tools.append(new)
            await ctx.session.send_tool_list_changed()
        if args.slow_call and params.name.startswith("tool_"):
            await anyio.sleep(args.slow_call)
        text = f"{params.name} called with {json.dumps(params.arguments or {}, sort_keys=True)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if args.slow_list:
            await anyio.sleep(args.slow_list)
        while args.wait_file and not os.path.exists(args.wait_file):
            await anyio.sleep(0.05)
        if not args.page_size:
            return types.ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + args.page_size
        cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=cursor)

    prompts = [
        types.Prompt(
            name=f"prompt_{i:02d}",
            description=f"Test prompt number {i}",
            arguments=[types.PromptArgument(name="topic", required=True)],
        )
        for i in range(args.prompts)
    ]

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=prompts)

    return Server(
        "holo-tune-test-server",
        version="1.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool if args.callable else None,
        on_list_prompts=list_prompts if args.prompts else None,
    )


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(server: Server[Any], port: int, transport: str) -> None:
    import uvicorn

    if transport == "http":
        app = server.streamable_http_app()
    else:
        from mcp.server.sse import SseServerTransport
        from starlette.applications import Starlette
        from starlette.responses import Response
        from starlette.routing import Mount, Route

        sse = SseServerTransport("/messages/")

        async def handle_sse(request: Any) -> Response:
            async with sse.connect_sse(request.scope, request.receive, request._send) as streams:
                await server.run(streams[0], streams[1], server.create_initialization_options())
            return Response()

        app = Starlette(
            routes=[
                Route("/sse", endpoint=handle_sse),
                Mount("/messages/", app=sse.handle_post_message),
            ]
        )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=3)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--odd", action="store_true")
    parser.add_argument("--slow-list", type=float, default=0.0)
    parser.add_argument("--slow-call", type=float, default=0.0)
    parser.add_argument("--wait-file", default="")
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--echo-env", action="append", default=[])
    parser.add_argument("--callable", action="store_true")
    parser.add_argument("--prompts", type=int, default=0)
    parser.add_argument("--plugin-names", action="store_true")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    server = build_server(args)
    if args.transport == "stdio":
        anyio.run(serve_stdio, server)
    else:
        serve_http(server, args.port, args.transport)


if __name__ == "__main__":
    main()
