"""TokenTable: per-tool counts in catalog order, selections, rankings, arbitrary definitions."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.errors import InputError
from workbench.tokens import TokenTable, token_table
from workbench.tokens.count import count_functions, tool_function
from workbench.tokens.encodings import get_encoding
from workbench.tokens.formats import GPT_4O, FunctionDef

SHARED = Path(__file__).resolve().parents[1] / "tests" / "data"
BFCL = SHARED / "datasets" / "bfcl" / "catalog.json"


def mcp_tool(plugin: str, listing: dict[str, Any]) -> Tool:
    """A catalog Tool from one tools/list entry, the plain way (name, description, schema)."""
    schema = listing.get("inputSchema") or {}
    return Tool(
        full_name=f"{plugin}-{listing['name']}",
        plugin=plugin,
        name=listing["name"],
        description=listing.get("description") or "",
        parameters=tuple(schema.get("properties") or {}),
        kind="mcp",
        definition=listing,
    )


SEARCH: dict[str, Any] = {
    "name": "web_search",
    "description": "Search the web.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "count": {"type": "integer", "description": "How many results", "default": 10},
        },
        "required": ["query"],
    },
}
NEWS: dict[str, Any] = {
    "name": "news_search",
    "description": "Search recent news articles about a topic, newest first.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Topic"},
            "filter": {
                "type": "object",
                "description": "Narrowing",
                "properties": {
                    "since": {"type": "string", "description": "ISO date"},
                    "sources": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
}
READ_GRAPH: dict[str, Any] = {
    "name": "read_graph",
    "description": "Read the whole knowledge graph.",
}


def small_catalog() -> Catalog:
    tools = [
        Tool(
            full_name="vectorstore-search_papers",
            plugin="vectorstore",
            name="search_papers",
            description="Search the paper collection",
            parameters=("query",),
            kind="vectorstore",
        ),
        mcp_tool("brave", SEARCH),
        mcp_tool("brave", NEWS),
        mcp_tool("memory", READ_GRAPH),
    ]
    servers = [ServerStatus(name, "stdio", "ok") for name in ("vectorstore", "brave", "memory")]
    return Catalog(tools=tools, servers=servers)


def expected_count(name: str, description: str, parameters: dict[str, Any]) -> int:
    function = FunctionDef(name, description, parameters)
    return int(count_functions([function], get_encoding("o200k_base"), GPT_4O)[0])


def test_per_tool_counts_use_the_full_name_and_input_schema() -> None:
    catalog = small_catalog()
    table = token_table(catalog, "openai", "gpt-4o")
    assert (table.encoding, table.exact, table.model, table.overhead) == (
        "o200k_base",
        True,
        "gpt-4o",
        12,
    )
    assert table.per_tool.dtype == np.int64
    assert len(table) == 4
    assert table.per_tool[1] == expected_count(
        "brave-web_search", "Search the web.", SEARCH["inputSchema"]
    )
    assert table.per_tool[2] == expected_count(
        "brave-news_search", NEWS["description"], NEWS["inputSchema"]
    )
    # The full name is what is sent: the bare name would count fewer tokens.
    assert table.per_tool[1] > expected_count(
        "web_search", "Search the web.", SEARCH["inputSchema"]
    )
    # No inputSchema at all: an object with no properties.
    assert table.per_tool[3] == expected_count(
        "memory-read_graph", "Read the whole knowledge graph.", {}
    )


def test_local_tool_without_schema_sends_its_parameters_as_strings() -> None:
    tool = small_catalog().tools[0]
    assert tool_function(tool).parameters == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
    }
    table = token_table(small_catalog(), "openai", "gpt-4o")
    assert table.per_tool[0] == expected_count(
        "vectorstore-search_papers",
        "Search the paper collection",
        {"properties": {"query": {"type": "string"}}},
    )


def test_totals_of_selections() -> None:
    table = token_table(small_catalog(), "openai", "gpt-4o")
    per = [int(x) for x in table.per_tool]
    assert table.total([]) == 0
    assert table.total(np.array([], dtype=np.int64)) == 0
    assert table.total([2]) == per[2] + 12
    assert table.total([0, 3]) == per[0] + per[3] + 12
    assert table.total(np.array([3, 1])) == per[3] + per[1] + 12
    assert table.all == sum(per) + 12
    assert table.all == table.total(range(len(table)))


def test_cumulative_along_a_ranking() -> None:
    table = token_table(small_catalog(), "openai", "gpt-4o")
    order = [2, 0, 3, 1]
    prefix = table.cumulative(order)
    assert prefix.dtype == np.int64
    assert prefix.tolist() == [table.total(order[:k]) for k in range(len(order) + 1)]
    assert prefix[0] == 0 and prefix[-1] == table.all
    assert table.cumulative([]).tolist() == [0]


def test_table_is_frozen_and_its_counts_read_only() -> None:
    table = token_table(small_catalog(), "openai", "gpt-4o")
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.overhead = 0  # type: ignore[misc]
    with pytest.raises(ValueError):
        table.per_tool[0] = 1


def test_count_definitions_matches_the_table() -> None:
    table = token_table(small_catalog(), "openai", "gpt-4o")
    renamed = [{**SEARCH, "name": "brave-web_search"}, {**NEWS, "name": "brave-news_search"}]
    assert table.count_definitions(renamed) == table.total([1, 2])
    assert table.count_definitions([]) == 0
    with pytest.raises(InputError, match="no name"):
        table.count_definitions([{"description": "x"}])


def test_model_decides_encoding_framing_and_exactness() -> None:
    catalog = small_catalog()
    gpt4 = token_table(catalog, "openai", "gpt-4")
    claude = token_table(catalog, "anthropic", "claude-sonnet-4-5")
    assert (gpt4.encoding, gpt4.exact, gpt4.tool_format.func_init) == ("cl100k_base", True, 10)
    assert (claude.encoding, claude.exact) == ("cl100k_base", False)
    assert claude.note.startswith("estimate")
    # Same tokenizer, different framing constants: 3 more per function for gpt-4.
    assert (gpt4.per_tool - claude.per_tool).tolist() == [3, 3, 3, 3]


def test_empty_catalog() -> None:
    table = token_table(Catalog(tools=[], servers=[]), "openai", "gpt-4o")
    assert len(table) == 0 and table.all == 0
    assert isinstance(table, TokenTable)


def bfcl_catalog() -> Catalog:
    data = json.loads(BFCL.read_text(encoding="utf-8"))
    tools = [
        mcp_tool(server, listing)
        for server, entry in data["servers"].items()
        for listing in entry["tools"]
    ]
    return Catalog(
        tools=tools, servers=[ServerStatus(s, "snapshot", "snapshot") for s in data["servers"]]
    )


def plain_cookbook_count(listing: dict[str, Any], name: str) -> int:
    """The cookbook's function, restated plainly, for flat schemas (gpt-4o constants)."""
    encoding = get_encoding("o200k_base")
    description = listing.get("description") or ""
    description = description[:-1] if description.endswith(".") else description
    total = 7 + len(encoding.encode(f"{name}:{description}"))
    properties = listing["inputSchema"].get("properties") or {}
    if properties:
        total += 3
        for key, prop in properties.items():
            total += 3
            if "enum" in prop:
                total -= 3
                for item in prop["enum"]:
                    total += 3 + len(encoding.encode(item))
            p_desc = prop["description"]
            p_desc = p_desc[:-1] if p_desc.endswith(".") else p_desc
            total += len(encoding.encode(f"{key}:{prop['type']}:{p_desc}"))
    return total


def _flat(listing: dict[str, Any]) -> bool:
    extra = {"default", "items", "properties", "anyOf", "oneOf"}
    return all(
        isinstance(p.get("type"), str)
        and isinstance(p.get("description"), str)
        and not extra & p.keys()
        and all(isinstance(e, str) for e in p.get("enum", []))
        for p in (listing["inputSchema"].get("properties") or {}).values()
    )


def test_bfcl_catalog() -> None:
    catalog = bfcl_catalog()
    table = token_table(catalog, "openai", "gpt-4o")
    assert len(table) == len(catalog) == 1287
    assert (table.per_tool > 7).all()
    assert table.all == int(table.per_tool.sum()) + 12
    assert table.cumulative(np.arange(len(table)))[-1] == table.all
    # Where the schema is flat, each count is the cookbook's, computed independently.
    flat = [(i, tool) for i, tool in enumerate(catalog.tools) if _flat(dict(tool.definition))]
    assert len(flat) > 300
    for i, tool in flat:
        assert table.per_tool[i] == plain_cookbook_count(dict(tool.definition), tool.full_name)


def test_the_filter_s_stand_in_description_is_not_sent() -> None:
    """HoloDeck indexes 'Function <f> from plugin <p>' for an undescribed tool; none is sent."""
    listing = {"name": "ping", "inputSchema": {"type": "object", "properties": {}}}
    tool = Tool(
        full_name="srv-ping",
        plugin="srv",
        name="ping",
        description="Function ping from plugin srv",
        parameters=(),
        kind="mcp",
        definition=listing,
    )
    assert tool_function(tool).description == ""
    table = token_table(Catalog(tools=[tool], servers=[]), "openai", "gpt-4o")
    assert table.per_tool[0] == expected_count("srv-ping", "", {})


def test_counts_tools_as_the_catalog_builder_makes_them() -> None:
    from workbench.catalog.build import mcp_tools

    tools, _ = mcp_tools("brave", [NEWS, SEARCH, {"name": "bare"}])
    table = token_table(Catalog(tools=tools, servers=[]), "openai", "gpt-4o")
    by_name = dict(zip([t.full_name for t in tools], table.per_tool.tolist(), strict=True))
    assert by_name["brave-web_search"] == expected_count(
        "brave-web_search", "Search the web.", SEARCH["inputSchema"]
    )
    assert by_name["brave-bare"] == expected_count("brave-bare", "", {})


def test_selection_as_a_boolean_mask() -> None:
    table = token_table(small_catalog(), "openai", "gpt-4o")
    mask = np.array([True, False, False, True])
    assert table.total(mask) == table.total([0, 3])
    assert table.total(np.zeros(4, dtype=bool)) == 0


def test_the_callers_array_is_not_frozen_or_shared() -> None:
    counts = np.array([5, 6], dtype=np.int64)
    table = TokenTable("o200k_base", True, "gpt-4o", counts, 12)
    counts[0] = 100
    assert table.per_tool.tolist() == [5, 6]
    assert table.all == 23
