"""The catalog's order, names, texts and notes as the runtime registers them (pure logic)."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from workbench.catalog.build import ServerListing, build_catalog, local_name, mcp_tools
from workbench.catalog.models import ServerStatus
from workbench.catalog.pyfunc import function_params
from workbench.catalog.specs import AgentTools, LocalToolSpec, McpServerSpec, specs_from_entries


def _tool(name: str, description: str | None = "d", props: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {p: {"type": "string", "description": "x"} for p in props},
    }
    tool: dict[str, Any] = {"name": name, "inputSchema": schema}
    if description is not None:
        tool["description"] = description
    return tool


def _ok(name: str, tools: list[dict[str, Any]]) -> ServerListing:
    return ServerListing(ServerStatus(name=name, transport="stdio", state="ok"), tools)


def test_local_name_keeps_letters_digits_underscore_dot_dash() -> None:
    assert local_name("read_file-v2.1") == "read_file-v2.1"
    assert local_name("read/file") == "read-file"
    assert local_name("a b?c") == "a-b-c"
    assert local_name("café") == "caf-"


def test_mcp_functions_sorted_by_local_name_not_listing_order() -> None:
    tools, _ = mcp_tools("p", [_tool("b"), _tool("a_z"), _tool("C"), _tool("a")])
    assert [t.name for t in tools] == ["C", "a", "a_z", "b"]
    assert [t.full_name for t in tools] == ["p-C", "p-a", "p-a_z", "p-b"]


def test_collision_keeps_the_first_listed_and_notes_the_skip() -> None:
    tools, notes = mcp_tools("fs", [_tool("read?file", "second"), _tool("read/file", "third")])
    assert [(t.name, t.description) for t in tools] == [("read-file", "second")]
    assert len(notes) == 1 and "'read/file' is skipped" in notes[0] and "'read?file'" in notes[0]


def test_empty_or_missing_description_gets_the_kernel_stand_in() -> None:
    # Semantic Kernel wraps an MCP tool in functools.partial and its kernel_function decorator
    # falls back to the wrapper's __doc__: the filter indexes partial's docstring (checked against
    # the runtime's own code on livemcpbench in test_oracle_holodeck)
    tools, notes = mcp_tools("mem", [_tool("x.y", ""), _tool("z", None)])
    assert tools[0].description == tools[1].description == functools.partial.__doc__
    assert "new function with partial application" in tools[0].search_text
    assert any("2 tool(s) have no description" in n and "functools.partial" in n for n in notes)


def test_parameters_are_top_level_property_names_in_order() -> None:
    tools, _ = mcp_tools("p", [_tool("f", "does f", ("zeta", "alpha"))])
    assert tools[0].parameters == ("zeta", "alpha")
    assert tools[0].search_text == "f p does f zeta alpha"
    assert tools[0].definition["name"] == "f"


def test_plugin_order_vectorstore_mcp_documents_functions(tmp_path: Path) -> None:
    src = tmp_path / "fns.py"
    src.write_text("def add(a: int, b: int = 1) -> int:\n    return a + b\n")
    agent = AgentTools(
        entries=(
            LocalToolSpec("function", "adder", "Add numbers", file=src, function="add"),
            McpServerSpec(name="second"),
            LocalToolSpec("hierarchical_document", "manual", "Search the manual"),
            LocalToolSpec("vectorstore", "kb", "Search the KB"),
            McpServerSpec(name="first"),
            LocalToolSpec("prompt", "summarise", "Summarise"),
            LocalToolSpec("vectorstore", "faq", ""),
        )
    )
    catalog = build_catalog(agent, [_ok("second", [_tool("s")]), _ok("first", [_tool("f")])])
    assert catalog.names() == [
        "vectorstore-kb",
        "vectorstore-faq",
        "second-s",
        "first-f",
        "hierarchical_document-manual",
        "function_tools-adder",
    ]
    assert [s.name for s in catalog.servers] == [
        "vectorstore",
        "second",
        "first",
        "hierarchical_document",
        "function_tools",
    ]
    kb = catalog.tools[0]
    assert (kb.name, kb.plugin, kb.parameters, kb.kind) == (
        "kb",
        "vectorstore",
        ("query",),
        "vectorstore",
    )
    assert catalog.tools[1].description == "Function faq from plugin vectorstore"
    adder = catalog.get("function_tools-adder")
    assert adder is not None and adder.parameters == ("a", "b")
    assert adder.input_schema["required"] == ["a"]
    assert any("prompt tool 'summarise' is not registered" in n for n in catalog.notes)


def test_failed_server_keeps_its_error_and_adds_no_tool() -> None:
    agent = AgentTools(entries=(McpServerSpec(name="bad"), McpServerSpec(name="good")))
    failed = ServerStatus(
        name="bad", transport="stdio", state="error", error="command not found: x"
    )
    catalog = build_catalog(agent, [ServerListing(failed), _ok("good", [_tool("t")])])
    assert catalog.names() == ["good-t"]
    assert catalog.server("bad") is failed and failed.error == "command not found: x"
    assert list(catalog.listings) == ["good"]


def test_function_tool_signature_read_without_running_the_file(tmp_path: Path) -> None:
    src = tmp_path / "tools.py"
    src.write_text(
        "from typing import Annotated\n"
        "raise SystemExit('this file must never be executed')\n"
        "async def lookup(self, city: Annotated[str, 'the city'], *args, days: int = 3, **kw):\n"
        "    pass\n"
    )
    params = function_params(src.read_text(), "lookup")
    assert [p.search_text for p in params] == ["city: the city", "days"]
    assert params[0].schema == {"type": "string", "description": "the city"}
    assert [p.required for p in params] == [True, False]


def test_function_tool_with_missing_file_uses_yaml_parameters_and_says_so(tmp_path: Path) -> None:
    spec = LocalToolSpec(
        "function", "calc", "Calculate", tmp_path / "absent.py", "calc", ("expression", "precision")
    )
    catalog = build_catalog(AgentTools(entries=(spec,)), [])
    assert catalog.tools[0].parameters == ("expression", "precision")
    assert any("cannot read" in n for n in catalog.notes)
    assert any("parameters taken from the YAML" in n for n in catalog.notes)


def test_specs_read_holodeck_field_names_and_env_layers(tmp_path: Path) -> None:
    (tmp_path / "server.env").write_text("# comment\nA=from-file\nB = file-b \n")
    entry = SimpleNamespace(
        type="mcp",
        name="srv",
        transport="stdio",
        command="npx",
        args=["-y", "pkg"],
        env={"B": "from-env"},
        env_file="server.env",
        config={"k": 1},
        request_timeout=7,
        description="a server",
    )
    tools = specs_from_entries([entry, SimpleNamespace(type="prompt", name="p")], tmp_path)
    spec = tools.mcp()[0]
    assert spec.env == {"A": "from-file", "B": "from-env", "MCP_CONFIG": '{"k": 1}'}
    assert (spec.command, spec.args, spec.request_timeout, spec.cwd) == (
        "npx",
        ("-y", "pkg"),
        7.0,
        tmp_path,
    )
    assert [s.kind for s in tools.local()] == ["prompt"]


def test_unreadable_env_file_becomes_that_servers_error(tmp_path: Path) -> None:
    entry = SimpleNamespace(type="mcp", name="srv", command="npx", env_file="nope.env")
    spec = specs_from_entries([entry], tmp_path).mcp()[0]
    assert spec.env_error is not None and "nope.env" in spec.env_error


def test_missing_local_source_is_noted(tmp_path: Path) -> None:
    (tmp_path / "here.md").write_text("# docs\n")
    entries = [
        SimpleNamespace(type="vectorstore", name="kb", description="d", source="here.md"),
        SimpleNamespace(type="vectorstore", name="gone", description="d", source="gone.md"),
        SimpleNamespace(
            type="hierarchical_document", name="web", description="d", source="https://x/y"
        ),
    ]
    catalog = build_catalog(specs_from_entries(entries, tmp_path), [])
    assert catalog.names() == ["vectorstore-kb", "vectorstore-gone", "hierarchical_document-web"]
    assert [n for n in catalog.notes if "not found" in n] == [
        f"vectorstore: gone: source {tmp_path / 'gone.md'} not found "
        "(the runtime fails to start the agent)"
    ]


def test_non_stdio_transport_is_noted_as_failing_in_holodeck_0_6() -> None:
    agent = AgentTools(entries=(McpServerSpec(name="remote", transport="http", url="http://x"),))
    catalog = build_catalog(agent, [_ok("remote", [_tool("t")])])
    assert any("only stdio" in n for n in catalog.notes)


def test_names_semantic_kernel_refuses_are_noted() -> None:
    listing = [
        _tool("math.pow", "d", ("base", "año")),
        _tool("a.b"),
        _tool("ok-name_1", "d", ("x-y",)),
    ]
    tools, notes = mcp_tools("m", listing)
    assert [t.name for t in tools] == ["a.b", "math.pow", "ok-name_1"]  # still ranked
    assert notes == [
        "m: Semantic Kernel refuses 2 function name(s) with a '.' ('a.b', 'math.pow') and "
        "1 parameter name(s) outside A-Za-z0-9_-: 'año' (in 'math.pow'): HoloDeck fails to "
        "start an agent with this server"
    ]
    assert mcp_tools("m", [_tool("fine", "d", ("p_1", "q-2"))])[1] == []
