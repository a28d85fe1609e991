"""Each runtime sees the catalog as it does: HoloDeck 0.6 through Semantic Kernel's conversion
(skips, stand-in descriptions, sorted), every other runtime as the servers list them.

The listing is mongodb-mcp-server's shape: a ``connect`` tool (an attribute of SK's MCP plugin:
HoloDeck 0.6 skips it), a tool with no description, names out of alphabetical order. The CLI
runs in-process on a snapshot (no server started); serve's own index is the one its command
builds; serve over stdio in front of a real MCP server finds and forwards ``connect``.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from serve_client import search_names, serve_stdio, text_of

from workbench.catalog.build import ServerListing, build_catalog, local_name
from workbench.catalog.models import AS_LISTED, SEMANTIC_KERNEL, ServerStatus
from workbench.catalog.specs import AgentTools
from workbench.cli import main, parse_args
from workbench.runtimes import all_runtimes

SERVERS = Path(__file__).resolve().parent / "servers"
TOOLSERVER = str(SERVERS / "toolserver.py")
PARTIAL_DOC = functools.partial.__doc__ or ""

#: The listing, in the server's order.
LISTING: list[dict[str, Any]] = [
    {
        "name": "find",
        "description": "Run a find query against a MongoDB collection",
        "inputSchema": {"type": "object", "properties": {"filter": {"type": "object"}}},
    },
    {
        "name": "connect",
        "description": "Connect to a MongoDB deployment with a connection string",
        "inputSchema": {
            "type": "object",
            "properties": {"connectionString": {"type": "string"}},
            "required": ["connectionString"],
        },
    },
    {
        "name": "undescribed",
        "inputSchema": {"type": "object", "properties": {"collection": {"type": "string"}}},
    },
    {
        "name": "aggregate",
        "description": "Run an aggregation pipeline against a MongoDB collection",
        "inputSchema": {"type": "object", "properties": {"pipeline": {"type": "array"}}},
    },
]
AS_LISTED_NAMES = ["mongo-find", "mongo-connect", "mongo-undescribed", "mongo-aggregate"]
SK_NAMES = ["mongo-aggregate", "mongo-find", "mongo-undescribed"]
#: The runtimes the issue names besides HoloDeck 0.6 (each sees the listing as it is).
LISTING_RUNTIMES = ("serve", "fastmcp", "claude-code", "anthropic", "openai", "argus", "pizzapi")


def _listing() -> ServerListing:
    status = ServerStatus("mongo", "snapshot", state="snapshot")
    return ServerListing(status=status, tools=[dict(t) for t in LISTING])


def test_the_listed_view_keeps_every_tool_its_order_and_its_text() -> None:
    catalog = build_catalog(AgentTools(entries=()), [_listing()], AS_LISTED)
    assert catalog.view == AS_LISTED
    assert catalog.names() == AS_LISTED_NAMES
    undescribed = catalog.get("mongo-undescribed")
    assert undescribed is not None and undescribed.description == ""
    assert undescribed.search_text == "undescribed mongo collection"
    assert catalog.notes == []
    assert catalog.listings["mongo"] == LISTING  # kept as it came


def test_holodecks_view_is_semantic_kernels() -> None:
    catalog = build_catalog(AgentTools(entries=()), [_listing()], SEMANTIC_KERNEL)
    assert catalog.names() == SK_NAMES
    undescribed = catalog.get("mongo-undescribed")
    assert undescribed is not None and undescribed.description == PARTIAL_DOC
    assert any("'connect' is skipped" in note for note in catalog.notes)
    assert catalog.listings["mongo"] == LISTING
    # the default of the catalog layer is the default runtime's view
    assert build_catalog(AgentTools(entries=()), [_listing()]).names() == SK_NAMES


def test_a_listed_name_clash_keeps_the_first_in_listing_order() -> None:
    listing = [{"name": "read/file", "description": "b"}, {"name": "read?file", "description": "a"}]
    status = ServerStatus("fs", "snapshot", state="snapshot")
    catalog = build_catalog(
        AgentTools(entries=()), [ServerListing(status=status, tools=listing)], AS_LISTED
    )
    assert catalog.names() == ["fs-read-file"]
    tool = catalog.get("fs-read-file")
    assert tool is not None and tool.description == "b"
    assert catalog.notes == [
        "fs: tool 'read?file' is skipped: its full name fs-read-file is already 'read/file''s"
    ]


_NAMES = st.text(alphabet="abcXY_.-/ ?", min_size=1, max_size=6)
_TOOLS = st.lists(
    st.fixed_dictionaries({"name": _NAMES, "description": st.sampled_from(["", "d", None])}),
    max_size=12,
)


@given(
    listing=st.lists(st.one_of(_TOOLS, st.just([{"name": "connect"}])), max_size=2).map(
        lambda parts: [tool for part in parts for tool in part]
    )
)
def test_the_listed_view_is_the_listing_and_holodecks_a_subset(
    listing: list[dict[str, Any]],
) -> None:
    status = ServerStatus("s", "snapshot", state="snapshot")
    listed = build_catalog(
        AgentTools(entries=()), [ServerListing(status=status, tools=listing)], AS_LISTED
    )
    sk = build_catalog(
        AgentTools(entries=()), [ServerListing(status=status, tools=listing)], SEMANTIC_KERNEL
    )
    firsts = list(dict.fromkeys(local_name(t["name"]) for t in listing))
    assert [t.name for t in listed.tools] == firsts  # every name, first of each, listing order
    first = {local_name(raw["name"]): raw for raw in reversed(listing)}
    for tool in listed.tools:  # the first of each name's own description, none where it has none
        assert tool.description == (first[tool.name].get("description") or "")
    assert {t.full_name for t in sk.tools} <= set(listed.names())
    assert listed.listings == sk.listings == {"s": listing}
    assert len(listed.notes) == len(listing) - len(firsts)


def test_each_runtime_names_its_view() -> None:
    views = {runtime.name: runtime.catalog_view for runtime in all_runtimes()}
    assert views["holodeck-0.6"] == SEMANTIC_KERNEL
    assert {name for name, view in views.items() if view == SEMANTIC_KERNEL} == {"holodeck-0.6"}
    assert all(views[name] == AS_LISTED for name in LISTING_RUNTIMES)


def _snapshot_agent(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: mongo-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n  - name: mongo\n    type: mcp\n    description: MongoDB\n"
        "    command: holo-tune-not-started\n"
        "tool_filtering:\n  enabled: true\n  search_method: bm25\n  top_k: 10\n"
        "  similarity_threshold: 0.01\n  always_include_top_n_used: 0\n"
    )
    snapshot = tmp_path / "catalog.json"
    snapshot.write_text(
        json.dumps({"holo_tune_catalog": 1, "servers": {"mongo": {"tools": LISTING}}})
    )
    return agent, snapshot


def _tools_json(
    agent: Path, snapshot: Path, runtime: str, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    assert (
        main(["tools", str(agent), "--catalog", str(snapshot), "--runtime", runtime, "--json"]) == 0
    )
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.parametrize("runtime", LISTING_RUNTIMES)
def test_tools_lists_connect_in_the_listings_order(
    runtime: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, snapshot = _snapshot_agent(tmp_path)
    data = _tools_json(agent, snapshot, runtime, capsys)
    assert data["runtime"]["name"] == runtime
    assert [t["name"] for t in data["tools"]] == AS_LISTED_NAMES
    assert data["servers"][0]["tools"] == len(LISTING)


def test_tools_under_holodeck_06_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, snapshot = _snapshot_agent(tmp_path)
    assert [t["name"] for t in _tools_json(agent, snapshot, "holodeck-0.6", capsys)["tools"]] == (
        SK_NAMES
    )
    assert main(["tools", str(agent), "--catalog", str(snapshot), "--runtime", "holodeck-0.6"]) == 0
    table = capsys.readouterr().out
    assert "'connect' is skipped" in table and "functools.partial" in table


def test_serve_indexes_an_undescribed_tool_by_its_name_and_parameters(tmp_path: Path) -> None:
    """serve's index (the one its command builds, whatever runtime the agent is detected as:
    here HoloDeck 0.6 by its block) holds every listed tool, and no partial docstring."""
    from workbench.commands.serve import served_from_args, snapshot_index

    agent, snapshot = _snapshot_agent(tmp_path)
    args = parse_args(["serve", str(agent), "--catalog", str(snapshot), "--embedder", "none"])
    index = snapshot_index(args, served_from_args(args))
    assert index.catalog.names() == AS_LISTED_NAMES
    undescribed = index.tool("mongo-undescribed")
    assert undescribed is not None
    assert undescribed.search_text == "undescribed mongo collection"
    # words of functools.partial's docstring find nothing; the tool's own words find it
    assert index.search("partial application keywords").confidence == 0.0
    assert index.search("undescribed collection").tools[0].full_name == "mongo-undescribed"
    assert index.search("connect to a mongodb deployment").tools[0].full_name == "mongo-connect"


@pytest.mark.slow
@pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])
def test_serve_finds_and_forwards_connect_of_a_real_server(tmp_path: Path, tag: str) -> None:
    agent = tmp_path / "agent.yaml"
    args = [TOOLSERVER, "--tools", "2", "--plugin-names", "--callable", "--tag", tag]
    agent.write_text(
        "name: mongo-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n  - name: mongo\n    type: mcp\n    description: MongoDB\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
        "tool_filtering:\n  enabled: true\n  search_method: bm25\n  top_k: 3\n"
        "  similarity_threshold: 0.0\n  always_include_top_n_used: 0\n"
    )

    async def scenario() -> None:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio([str(agent), "--embedder", "none"], errlog) as session:
                found = await search_names(session, "connect to a mongodb deployment")
                assert found[0] == "mongo-connect"
                result = await session.call_tool(
                    "call_tool",
                    {"name": "mongo-connect", "arguments": {"connectionString": "mongodb://h"}},
                )
                assert not result.is_error, text_of(result)
                assert text_of(result) == 'connect called with {"connectionString": "mongodb://h"}'
                found = await search_names(session, "close the current session")
                assert found[0] == "mongo-close"

    anyio.run(scenario)


@pytest.mark.parametrize(("runtime", "says"), [("serve", False), ("holodeck-0.6", True)])
def test_check_says_what_an_undescribed_tool_is_indexed_with(
    runtime: str, says: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, snapshot = _snapshot_agent(tmp_path)
    argv = ["check", str(agent), "--catalog", str(snapshot), "--runtime", runtime, "--json"]
    main(argv)
    findings = json.loads(capsys.readouterr().out)["findings"]
    empty = next(f for f in findings if f["code"] == "empty-description")
    assert empty["evidence"]["tools"] == ["mongo-undescribed"]
    assert ("functools.partial" in empty["message"]) is says
    assert ("their names and parameters: " in empty["message"]) is not says
