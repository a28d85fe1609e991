"""``export --runtime anthropic|claude-code|openai``: the providers' documented rules hold."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.catalog.models import Catalog, Tool
from workbench.cli import main
from workbench.deferred import (
    anthropic_tools,
    check_anthropic,
    check_mcp_json,
    check_openai,
    mcp_json,
    tool_search_advice,
)

REPO = Path(__file__).resolve().parents[1]
AGENT = REPO / "sample_configs" / "research-agent.yaml"
CATALOG = REPO / "sample_configs" / "research-agent.catalog.json"
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")


def _export(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[Any, str]:
    code = main(["export", str(AGENT), "--catalog", str(CATALOG), *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out), captured.err


def test_anthropic_tools_follow_the_documented_rules(capsys: pytest.CaptureFixture[str]) -> None:
    tools, _ = _export(capsys, "--runtime", "anthropic", "--keep", "search_papers")
    searches = [t for t in tools if "type" in t]
    assert searches == [{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}]
    assert "defer_loading" not in searches[0]
    custom = [t for t in tools if "type" not in t]
    names = [t["name"] for t in tools]
    assert all(NAME.match(n) for n in names) and len(set(names)) == len(names)
    assert all(isinstance(t["input_schema"], dict) for t in custom)
    loaded = [t["name"] for t in custom if not t["defer_loading"]]
    assert loaded == ["vectorstore-search_papers"]
    assert len(custom) == 18 and sum(t["defer_loading"] for t in custom) == 17


def test_anthropic_regex_variant(capsys: pytest.CaptureFixture[str]) -> None:
    tools, _ = _export(capsys, "--runtime", "anthropic", "--variant", "regex")
    assert tools[0] == {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
    assert check_anthropic(tools) is None


def _tool(server: str, name: str) -> Tool:
    return Tool(
        full_name=f"{server}-{name}",
        plugin=server,
        name=name,
        description="d",
        parameters=(),
        kind="mcp",
        definition={"name": name, "inputSchema": {"type": "object", "properties": {}}},
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=60)),
        min_size=1,
        max_size=12,
        unique_by=lambda p: f"{p[0]}-{p[1]}",
    )
)
def test_any_tool_names_become_valid_unique_api_names(pairs: list[tuple[str, str]]) -> None:
    catalog = Catalog([_tool(s, n) for s, n in pairs], [])
    tools = anthropic_tools(catalog, set())
    assert check_anthropic(tools) is None


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda t: t.pop(0), "one tool search tool"),
        (lambda t: t[0].update(defer_loading=True), "must not be deferred"),
        (lambda t: t[1].update(name="bad name"), "does not match"),
        (lambda t: t[2].update(name=t[1]["name"]), "not unique"),
        (lambda t: [x.update(defer_loading=False) for x in t[1:]], "no tool is deferred"),
        (lambda t: t[1].pop("input_schema"), "no input_schema"),
    ],
)
def test_the_anthropic_rules_can_fail(change: Any, needle: str) -> None:
    tools = anthropic_tools(Catalog([_tool("s", "a"), _tool("s", "b")], []), set())
    change(tools)
    broken = check_anthropic(tools)
    assert broken is not None and needle in broken


def test_claude_code_mcp_json_has_every_server_of_the_agent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc, err = _export(capsys, "--runtime", "claude-code", "--keep", "memory-read_graph")
    assert check_mcp_json(doc) is None
    assert set(doc["mcpServers"]) == {"brave_search", "memory"}  # the agent's MCP entries
    brave = doc["mcpServers"]["brave_search"]
    assert brave["env"] == {"BRAVE_API_KEY": "${BRAVE_API_KEY}"}  # never expanded
    assert brave["command"] == "npx" and "alwaysLoad" not in brave
    assert doc["mcpServers"]["memory"]["alwaysLoad"] is True
    assert "ENABLE_TOOL_SEARCH=auto" in err and "tokens" in err


def test_mcp_json_for_remote_servers_and_what_it_cannot_carry() -> None:
    entries = [
        {"name": "a", "type": "mcp", "transport": "http", "url": "http://x/mcp"},
        {
            "name": "b",
            "type": "mcp",
            "transport": "sse",
            "url": "http://x/sse",
            "headers": {"k": "v"},
        },
        {"name": "c", "type": "mcp", "transport": "websocket", "url": "ws://x"},
    ]
    doc, notes = mcp_json(entries, {"a"})
    assert doc == {
        "mcpServers": {
            "a": {"type": "http", "url": "http://x/mcp", "alwaysLoad": True},
            "b": {"type": "sse", "url": "http://x/sse", "headers": {"k": "v"}},
        }
    }
    assert notes and "websocket" in notes[0]
    assert check_mcp_json({"mcpServers": {"x": {"command": "npx"}}}) is not None


def test_tool_search_advice_says_whether_auto_defers() -> None:
    assert "defers (this catalog crosses it)" in tool_search_advice(30_000)[2]
    assert "loads everything up front" in tool_search_advice(8_000)[2]


def test_openai_tools_namespace_per_server(capsys: pytest.CaptureFixture[str]) -> None:
    tools, _ = _export(capsys, "--runtime", "openai", "--keep", "brave_web_search")
    assert check_openai(tools) is None
    assert tools[0] == {"type": "tool_search"}
    spaces = {t["name"]: t for t in tools[1:]}
    assert set(spaces) == {"vectorstore", "brave_search", "memory"}
    assert all("defer_loading" not in s for s in spaces.values())
    web = [f for f in spaces["brave_search"]["tools"] if f["name"] == "brave_web_search"]
    assert web[0]["defer_loading"] is False and web[0]["type"] == "function"
    assert spaces["memory"]["description"].startswith("A persistent knowledge graph")


def test_export_refuses_an_unknown_keep_and_a_07_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["export", str(AGENT), "--catalog", str(CATALOG), "--runtime", "anthropic"]
    assert main([*argv, "--keep", "nope"]) == 2
    assert "--keep" in capsys.readouterr().err
    assert main(["export", str(AGENT), "--runtime", "holodeck-0.7"]) == 2
    assert "tune --runtime holodeck-0.7" in capsys.readouterr().err
