"""Deferred-loading runtimes: what to send Anthropic's Messages API, Claude Code and OpenAI's
Responses API so that tools are found by the provider's search tool instead of sent whole.

Each builder takes the catalog and the set of tools kept loaded (everything else is deferred)
and returns plain JSON data; the ``check_*`` functions state the providers' documented rules
(docs/runtimes.md) and return the first one broken (None when the output follows them all), so
the CLI can refuse to print something the API would answer with HTTP 400.

* Anthropic (platform.claude.com, "Tool search tool"): one ``tool_search_tool_{bm25,regex}``
  tool, not deferred; every tool with ``input_schema`` and ``defer_loading``; at least one
  deferred; names unique and matching ``^[a-zA-Z0-9_-]{1,64}$``.
* Claude Code: ``.mcp.json`` with ``mcpServers`` (stdio: ``command``/``args``/``env``; http and
  sse: ``type``/``url``/``headers``) and ``alwaysLoad: true`` on servers whose tools stay loaded;
  ``${VAR}`` references are kept as written (Claude Code expands them), never expanded here.
* OpenAI Responses: ``{"type": "tool_search"}`` and one ``namespace`` per server whose functions
  carry ``defer_loading`` (OpenAI applies it to the functions, not the namespace).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal

from workbench.catalog.models import Catalog, Tool
from workbench.search.strategies.anthropic import Variant

API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD = re.compile(r"[^a-zA-Z0-9_-]")
#: Claude models' context window, for ENABLE_TOOL_SEARCH=auto (10% of it by default).
CONTEXT_WINDOW = 200_000
AUTO_PERCENT = 10
Transport = Literal["stdio", "sse", "http", "websocket"]


def api_names(catalog: Catalog) -> list[str]:
    """A name per tool valid for the Anthropic API: ``<server>-<tool>`` with other characters
    as ``_``, at most 64 characters, unique (a clash or a cut gets a short hash suffix)."""
    out: list[str] = []
    seen: set[str] = set()
    for tool in catalog.tools:
        name = _BAD.sub("_", tool.full_name) or "tool"
        if len(name) > 64 or name in seen:
            digest = hashlib.sha256(tool.full_name.encode("utf-8")).hexdigest()[:8]
            name = f"{name[:55]}_{digest}"
        while name in seen:  # pragma: no cover - a sha256 prefix clash
            name = f"{name[:-1]}x"
        seen.add(name)
        out.append(name)
    return out


def search_tool(variant: Variant) -> dict[str, str]:
    return {"type": f"tool_search_tool_{variant}_20251119", "name": f"tool_search_tool_{variant}"}


def anthropic_tools(
    catalog: Catalog, loaded: Collection[str], variant: Variant = "bm25"
) -> list[dict[str, Any]]:
    """The Messages API ``tools``: the search tool, then every tool (``loaded``: full names kept
    loaded; every other tool deferred)."""
    tools: list[dict[str, Any]] = [search_tool(variant)]
    for name, tool in zip(api_names(catalog), catalog.tools, strict=True):
        tools.append(
            {
                "name": name,
                "description": tool.description,
                "input_schema": dict(tool.input_schema),
                "defer_loading": tool.full_name not in loaded,
            }
        )
    return tools


def check_anthropic(tools: Sequence[Mapping[str, Any]]) -> str | None:
    """The first documented rule ``tools`` breaks, None when it keeps them all."""
    searches = [t for t in tools if str(t.get("type", "")).startswith("tool_search_tool_")]
    if len(searches) != 1:
        return f"expected one tool search tool, found {len(searches)}"
    if searches[0].get("defer_loading"):
        return "the tool search tool must not be deferred"
    names = [str(t.get("name", "")) for t in tools]
    bad = [n for n in names if not API_NAME.match(n)]
    if bad:
        return f"tool name {bad[0]!r} does not match {API_NAME.pattern}"
    if len(set(names)) != len(names):
        return "tool names are not unique"
    custom = [t for t in tools if t not in searches]
    if not any(t.get("defer_loading") is True for t in custom):
        return "no tool is deferred"
    missing = [t["name"] for t in custom if not isinstance(t.get("input_schema"), dict)]
    if missing:
        return f"tool {missing[0]!r} has no input_schema"
    return None


def openai_tools(
    catalog: Catalog, loaded: Collection[str], descriptions: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """The Responses API ``tools``: ``tool_search`` and a namespace per server (described by
    ``descriptions[server]``, the agent's entry, else by its tools' names)."""
    spaces: dict[str, list[Tool]] = {}
    for tool in catalog.tools:
        spaces.setdefault(tool.plugin, []).append(tool)
    tools: list[dict[str, Any]] = [{"type": "tool_search"}]
    for server, members in spaces.items():
        described = (descriptions or {}).get(server) or _server_description(server, members)
        tools.append(
            {
                "type": "namespace",
                "name": _BAD.sub("_", server)[:64],
                "description": described,
                "tools": [
                    {
                        "type": "function",
                        "name": _BAD.sub("_", t.name)[:64],
                        "description": t.description,
                        "parameters": dict(t.input_schema),
                        "defer_loading": t.full_name not in loaded,
                    }
                    for t in members
                ],
            }
        )
    return tools


def _server_description(server: str, members: Sequence[Tool]) -> str:
    names = ", ".join(t.name for t in members[:8])
    more = f" and {len(members) - 8} more" if len(members) > 8 else ""
    return f"{server}: {len(members)} tools ({names}{more})"


def check_openai(tools: Sequence[Mapping[str, Any]]) -> str | None:
    if sum(1 for t in tools if t.get("type") == "tool_search") != 1:
        return "expected one tool_search tool"
    spaces = [t for t in tools if t.get("type") == "namespace"]
    if len({t["name"] for t in spaces}) != len(spaces):
        return "namespace names are not unique"
    for space in spaces:
        if "defer_loading" in space:
            return f"namespace {space['name']!r}: defer_loading belongs on its functions"
        names = [f["name"] for f in space["tools"]]
        if len(set(names)) != len(names):
            return f"namespace {space['name']!r}: function names are not unique"
    if not any(f.get("defer_loading") for s in spaces for f in s["tools"]):
        return "no function is deferred"
    return None


def mcp_json(
    entries: Sequence[Mapping[str, Any]], always_load: Collection[str]
) -> tuple[dict[str, Any], list[str]]:
    """``.mcp.json`` for the agent's MCP entries (raw YAML, ``${VAR}`` unexpanded) and notes on
    what could not be carried over."""
    servers: dict[str, Any] = {}
    notes: list[str] = []
    for entry in entries:
        name = str(entry.get("name"))
        transport = str(entry.get("transport") or "stdio")
        server: dict[str, Any]
        if transport == "stdio":
            server = {
                "command": str(entry.get("command", "")),
                "args": list(entry.get("args") or []),
            }
            if entry.get("env"):
                server["env"] = {str(k): str(v) for k, v in dict(entry["env"]).items()}
        elif transport in ("sse", "http"):
            server = {"type": transport, "url": str(entry.get("url", ""))}
            if entry.get("headers"):
                server["headers"] = {str(k): str(v) for k, v in dict(entry["headers"]).items()}
        else:
            notes.append(f"{name}: Claude Code has no {transport} transport; left out")
            continue
        if name in always_load:
            server["alwaysLoad"] = True
        servers[name] = server
    return {"mcpServers": servers}, notes


def check_mcp_json(doc: Mapping[str, Any]) -> str | None:
    servers = doc.get("mcpServers")
    if not isinstance(servers, dict):
        return "mcpServers is not an object"
    for name, server in servers.items():
        if not isinstance(server, dict):
            return f"{name}: not an object"
        kind = server.get("type", "stdio")
        if kind == "stdio" and not (server.get("command") and isinstance(server.get("args"), list)):
            return f"{name}: a stdio server needs command and args"
        if kind in ("http", "sse") and not server.get("url"):
            return f"{name}: an {kind} server needs url"
        if kind not in ("stdio", "http", "sse"):
            return f"{name}: unknown type {kind!r}"
        if "alwaysLoad" in server and not isinstance(server["alwaysLoad"], bool):
            return f"{name}: alwaysLoad must be true or false"
    return None


def tool_search_advice(mcp_tokens: int, window: int = CONTEXT_WINDOW) -> list[str]:
    """What ``ENABLE_TOOL_SEARCH`` does with this many tokens of MCP tool definitions."""
    share = 100.0 * mcp_tokens / window if window else 0.0
    crosses = share > AUTO_PERCENT
    lines = [
        f"MCP tool definitions: ~{mcp_tokens:,} tokens, {share:.1f}% of a {window:,}-token "
        "context window",
        "ENABLE_TOOL_SEARCH unset (default): tools are deferred (on a first-party API host)",
        f"ENABLE_TOOL_SEARCH=auto (defers above {AUTO_PERCENT}%): "
        + ("defers (this catalog crosses it)" if crosses else "loads everything up front"),
        f"ENABLE_TOOL_SEARCH=auto:N defers for any N below {share:.0f}"
        if share >= 1
        else "ENABLE_TOOL_SEARCH=auto:N never defers this catalog (under 1%)",
    ]
    return lines
