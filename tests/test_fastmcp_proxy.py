"""End to end: a real FastMCP proxy of real stdio MCP servers answers ``search_tools`` with
exactly the tools the ``fastmcp`` engine finds, in its order, under the proxy's names.

The proxy (tests/servers/fastmcp_proxy.py: ``create_proxy`` of an MCPConfig plus
``add_transform(BM25SearchTransform(...))``) is reached with the ``mcp`` client over stdio; the
engine runs on the catalog holo-tune lists from the same servers (an agent file naming them).
Two servers: the proxy namespaces the tools ``<server>_<tool>``; one server: bare names. The
``--odd`` server lists names HoloDeck rewrites (``read/file``) or skips (``read?file``), which the
proxy keeps as they are.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from workbench.search.strategies import FastMCPParams, FastMCPStrategy
from workbench.workspace import open_workspace

SERVERS = Path(__file__).resolve().parent / "servers"
TOOLSERVER = str(SERVERS / "toolserver.py")
PROXY = str(SERVERS / "fastmcp_proxy.py")
ProcessFinder = Callable[[str], list[int]]

pytestmark = pytest.mark.slow


def agent_and_config(tmp_path: Path, servers: dict[str, list[str]]) -> tuple[Path, Path]:
    """An agent file whose MCP entries run these servers, and the MCPConfig of the same."""
    entries = "".join(
        f"  - name: {name}\n    type: mcp\n    description: test server {name}\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
        for name, args in servers.items()
    )
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: proxied\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        f"instructions:\n  inline: test\ntools:\n{entries}"
    )
    config = tmp_path / "mcp.json"
    entries_json = {n: {"command": sys.executable, "args": a} for n, a in servers.items()}
    config.write_text(json.dumps({"mcpServers": entries_json}))
    return agent, config


async def ask_proxy(
    config: Path, queries: Sequence[str], max_results: int, always_visible: Sequence[str], tag: str
) -> tuple[list[str], list[list[dict[str, Any]]]]:
    """The proxy's listing and its ``search_tools`` answer to each query."""
    args = [PROXY, str(config), "--max-results", str(max_results), "--tag", tag]
    for name in always_visible:
        args += ["--always-visible", name]
    params = StdioServerParameters(command=sys.executable, args=args)
    return await listing_and_answers(params, config.parent / "proxy.log", queries)


async def listing_and_answers(
    params: StdioServerParameters, log: Path, queries: Sequence[str]
) -> tuple[list[str], list[list[dict[str, Any]]]]:
    """A search proxy started with ``params`` over stdio (its stderr in ``log``): its listing
    and its ``search_tools`` answer to each query."""
    answers = []
    with log.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listing = [t.name for t in (await session.list_tools()).tools]
            for query in queries:
                result = await session.call_tool("search_tools", {"query": query})
                assert not result.is_error, result
                answers.append(json.loads(result.content[0].text))  # type: ignore[union-attr]
    return listing, answers


def check(
    tmp_path: Path,
    servers: dict[str, list[str]],
    queries: Sequence[str],
    max_results: int,
    always_visible: Sequence[str],
    tag: str,
) -> list[list[str]]:
    agent, config = agent_and_config(tmp_path, servers)
    ws = open_workspace(agent, embedder_spec="none")
    params = FastMCPParams(max_results=max_results, always_visible=tuple(always_visible))
    engine = FastMCPStrategy(ws.catalog, ws.tokens, params)
    listing, answers = anyio.run(ask_proxy, config, queries, max_results, always_visible, tag)
    assert listing == [*always_visible, "search_tools", "call_tool"]
    found = [[tool["name"] for tool in answer] for answer in answers]
    assert found == [engine.found_names(q) for q in queries]
    for answer in answers:  # full definitions, as the proxy lists them
        assert all({"name", "inputSchema"} <= set(tool) for tool in answer)
    return found


def test_proxy_of_two_servers_namespaces_and_ranks_as_the_engine(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    servers = {
        "office": [TOOLSERVER, "--tools", "4", "--odd"],
        "lab": [TOOLSERVER, "--tools", "3"],
    }
    queries = ["read a file", "test tool 02 for what to look", "alpha space zeta"]
    found = check(tmp_path, servers, queries, 4, ["office_tool_00"], tag)
    assert found[0][:2] == ["office_read/file", "office_read?file"]  # HoloDeck skips the second
    # equal scores keep the proxy's listing order: the server lists tool_03 before tool_01
    # (HoloDeck's catalog sorts them the other way)
    assert found[1] == ["office_tool_02", "lab_tool_02", "office_tool_03", "office_tool_01"]
    assert all(name.startswith(("office_", "lab_")) for names in found for name in names)
    assert not any("office_tool_00" in names for names in found)
    assert find_processes(tag) == []  # the proxy is gone with its client


def test_proxy_of_one_server_lists_bare_names(tmp_path: Path, tag: str) -> None:
    servers = {"office": [TOOLSERVER, "--tools", "3", "--odd"]}
    found = check(tmp_path, servers, ["read file", "tool 01"], 3, [], tag)
    assert found[0][0] == "read/file"
    assert found[1][0] == "tool_01"
