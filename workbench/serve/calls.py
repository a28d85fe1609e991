"""A tool call, from holo-tune's full name to the server that owns it, or one clear error.

Every refusal is a :class:`~workbench.serve.upstream.CallFailed` whose message is the MCP
error the client sees: served from a snapshot, an unknown name, the agent's own (non-MCP)
tool, arguments that break the tool's input schema (checked with ``jsonschema`` before the
server sees them), a server that is down (and why), a call that timed out or whose server
exited. The server's own error result (``isError``) is passed through as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from mcp import types

from workbench.serve.index import ServeIndex
from workbench.serve.upstream import CallFailed, UpstreamPool

ARGUMENTS = "arguments must be an object, or a JSON string of one"
SNAPSHOT = (
    "served from a snapshot: calls need the live servers (add --live-calls, or run serve "
    "without --catalog)"
)


class Router:
    """Calls by full name (``<server>-<tool>``) through the pool; ``pool`` None: a snapshot."""

    def __init__(self, index: ServeIndex, pool: UpstreamPool | None) -> None:
        self.index = index
        self.pool = pool

    def upstream_of(self, name: str) -> str | None:
        """The server a full tool name belongs to (None: no server of the pool's)."""
        found = self.pool.owner(name) if self.pool is not None else None
        return found[0].name if found is not None else None

    async def call(self, name: str, arguments: object) -> types.CallToolResult:
        if self.pool is None:
            raise CallFailed(SNAPSHOT)
        await self.pool.started.wait()  # a replica serves before its servers are up
        args = call_arguments(arguments)
        tool = self.index.tool(name)
        if tool is not None and tool.kind != "mcp":
            raise CallFailed(
                f"{name} is the agent's own {tool.kind} tool: serve forwards MCP servers' "
                "tools only (the runtime runs this one)"
            )
        found = self.pool.owner(name)
        if found is None:
            raise CallFailed(f"unknown tool {name!r}: search_tools gives the tools' names")
        upstream, local = found
        if not upstream.up or upstream.find(local) is None:
            await upstream.ensure_up()  # a down server is started again (or says why not)
        listed = upstream.find(local)
        if listed is None:
            raise CallFailed(
                f"unknown tool {name!r}: server {upstream.name} has no tool {local!r} "
                "(search_tools gives the tools' names)"
            )
        check_arguments(name, listed.get("inputSchema"), args)
        return await upstream.call(str(listed["name"]), args)


def call_arguments(value: object) -> dict[str, Any]:
    """A call's arguments: an object, none (no arguments), or a JSON string that parses to an
    object (clients differ: the MCP Inspector's CLI sends a string). Anything else is refused
    with one line saying what came."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            raise CallFailed(f"{ARGUMENTS}: the string is not JSON") from None
        if isinstance(parsed, dict):
            return parsed
        raise CallFailed(f"{ARGUMENTS}: the string holds {_json_kind(parsed)}")
    raise CallFailed(f"{ARGUMENTS}: got {_json_kind(value)}")


def _json_kind(value: object) -> str:
    """What a JSON value is, in words (for the refusal)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def check_arguments(name: str, schema: Any, arguments: dict[str, Any]) -> None:
    """Refuse arguments that break the tool's input schema (one line: where and why). A schema
    that is not valid itself is left to the server."""
    if not isinstance(schema, Mapping):
        return
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError:
        return
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(arguments))
    if error is None:
        return
    where = "/".join(str(part) for part in error.absolute_path)
    at = f" at {where}" if where else ""
    message = " ".join(error.message.split())
    if len(message) > 300:
        message = message[:297] + "..."
    raise CallFailed(f"arguments for {name} break its input schema{at}: {message}")
