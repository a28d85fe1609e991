"""Tried as a new user would: the configurations ``tune --runtime serve --apply`` writes, started
as their runtime starts them, reached with the ``mcp`` client over stdio.

* Claude Code's ``.mcp.json``: its ``holo-tune`` server's command (the installation's script by
  its absolute path), args and env exactly as written.
* A HoloDeck 0.7 agent pointed at serve: validated by HoloDeck 0.7.1's own ``Agent``; its serve
  entry as 0.7.1's own ``build_claude_mcp_configs`` and ``build_options`` hand it to the Claude
  Agent SDK (command, args resolved against the agent's folder, env, cwd), started so (a ``uvx``
  on PATH runs this checkout's CLI for ``uvx holo-tune``, as uvx runs a holo-tune installed with
  ``uv tool install``).

Each lists serve's tools, searches (what ``holo-tune search`` selects on the agent as it was) and
calls the memory server through ``call_tool``; once the client leaves no server is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import ClientSession, StdioServerParameters, stdio_client
from oracle.standins import STANDINS
from serve_client import REPO, Expected, search_names, text_of
from test_serve_e2e import research_agent

from workbench.cli import main

WHEEL = REPO / ".cache" / "holodeck07" / "holodeck_ai-0.7.1-py3-none-any.whl"
CASES = REPO / "sample_configs" / "research-agent.cases.yaml"
QUERY = "remember that Ada Lovelace wrote the first program"

pytestmark = [
    pytest.mark.npm,
    pytest.mark.slow,
    pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"]),
]


def stand_in(bin_dir: Path, name: str, skip: str | None = None) -> None:
    """``name`` on PATH running this checkout's CLI (``skip``: a first argument it drops, as
    ``uvx holo-tune ARGS`` runs ``holo-tune ARGS``). It sets PYTHONPATH itself: an MCP client
    gives a stdio server only a few basic variables besides the entry's env."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    drop = f'[ "$1" = "{skip}" ] || exit 97\nshift\n' if skip else ""
    script.write_text(
        f'#!/bin/sh\n{drop}PYTHONPATH={REPO} exec {sys.executable} -m workbench "$@"\n'
    )
    script.chmod(0o755)


def to_07(agent: Path, provider: str = "openai") -> None:
    """The research agent as a HoloDeck 0.7 agent: no tool_filtering block, an openai block."""
    text = agent.read_text()
    text = text[: text.index("tool_filtering:")] + "openai:\n  max_turns: 4\n"
    if provider == "anthropic":
        text = text.replace(
            "provider: openai\n  name: gpt-4o", "provider: anthropic\n  name: claude-sonnet-4-5"
        )
    agent.write_text(text)


def tune_apply(agent: Path) -> None:
    argv = ["tune", str(agent), "--runtime", "serve", "--cases", str(CASES), "--embedder", "none"]
    assert main([*argv, "--apply", "--force", "--json"]) == 0


async def exercise(session: ClientSession, expected: Expected) -> None:
    listing = [tool.name for tool in (await session.list_tools()).tools]
    assert listing[-2:] == ["search_tools", "call_tool"]
    assert await search_names(session, QUERY) == expected(QUERY)
    entities = [{"name": "Ada", "entityType": "person", "observations": ["wrote a program"]}]
    made = await session.call_tool(
        "call_tool", {"name": "memory-create_entities", "arguments": {"entities": entities}}
    )
    assert not made.is_error, text_of(made)
    graph = await session.call_tool("call_tool", {"name": "memory-read_graph", "arguments": {}})
    assert json.loads(text_of(graph))["entities"][0]["observations"] == ["wrote a program"]


def run_entry(params: StdioServerParameters, expected: Expected, errlog: Path) -> None:
    async def run() -> None:
        with errlog.open("w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await exercise(session, expected)

    anyio.run(run)


def expected_of(agent: Path, args: list[str]) -> Expected:
    """``holo-tune search`` on the agent as it was, under the written serve flags (the settings
    file tune wrote)."""
    return Expected(agent, *args[args.index("--settings") :])


def test_the_mcp_json_holo_tune_writes_starts_serve_and_works(
    tmp_path: Path, tag: str, find_processes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder-not-a-real-key")
    agent = research_agent(tmp_path, tag)
    tune_apply(agent)
    server = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["holo-tune"]
    # The installation's own script, by its absolute path: Claude Code starts it from its own
    # folder with its own PATH, where a virtual environment's script is not found.
    command = Path(server["command"])
    assert command.is_absolute() and command.name == "holo-tune" and command.is_file()
    assert server["args"][:2] == ["serve", str(agent)]
    expected = expected_of(agent, server["args"])
    params = StdioServerParameters(
        command=server["command"], args=server["args"], env={**os.environ, **server.get("env", {})}
    )
    run_entry(params, expected, tmp_path / "serve.err")
    assert find_processes(tag) == []


def _holodeck07_entry(agent: Path, root: Path) -> dict[str, Any]:
    """What HoloDeck 0.7.1 makes of the agent: its ``Agent`` validates it; its own
    ``build_claude_mcp_configs`` (the agent's folder as base, as its loader sets it) and
    ``build_options`` give the MCP servers and cwd the Claude Agent SDK is handed."""
    with zipfile.ZipFile(WHEEL) as wheel:
        wheel.extractall(root)
    code = STANDINS + (
        "import ast, logging, pathlib, yaml\n"
        "from typing import Any\n"
        "from holodeck.models.agent import Agent\n"
        "from holodeck.models.claude_config import AuthProvider, PermissionMode\n"
        "from holodeck.config.context import agent_base_dir\n"
        "from holodeck.config.env_loader import load_env_file, substitute_env_vars\n"
        "from holodeck.models.tool import MCPTool, TransportType\n"
        "bridge = pathlib.Path(sys.argv[1], 'holodeck/lib/backends/mcp_bridge.py')\n"
        "funcs = [n for n in ast.parse(bridge.read_text()).body\n"
        "         if isinstance(n, ast.FunctionDef)]\n"
        "mcp_scope = {'json': json, 'Path': pathlib.Path, 'logger': logging.getLogger('h'),\n"
        "             'load_env_file': load_env_file, 'substitute_env_vars': substitute_env_vars,\n"
        "             'MCPTool': MCPTool, 'TransportType': TransportType,\n"
        "             'McpStdioServerConfig': dict}\n"
        "exec(compile(ast.Module(funcs, []), str(bridge), 'exec'), mcp_scope)\n"
        "build_claude_mcp_configs = mcp_scope['build_claude_mcp_configs']\n"
        "hooks = types.ModuleType('holodeck.lib.backends.claude_hooks')\n"
        "hooks.build_default_hooks = lambda: {}\n"
        "sys.modules[hooks.__name__] = hooks\n"
        "src = pathlib.Path(sys.argv[1], 'holodeck/lib/backends/claude_backend.py')\n"
        "tree = ast.parse(src.read_text())\n"
        "wanted = {'build_options', '_build_permission_mode', '_declared_builtin_tools',\n"
        "          '_build_output_format', '_RISKY_BUILTIN_TOOLS', '_DEFAULT_MAX_TURNS'}\n"
        "def named(node):\n"
        "    if isinstance(node, ast.FunctionDef):\n"
        "        return node.name\n"
        "    targets = getattr(node, 'targets', None) or [getattr(node, 'target', None)]\n"
        "    return getattr(targets[0], 'id', None)\n"
        "body = [n for n in tree.body if named(n) in wanted]\n"
        "recorded = {}\n"
        "def options(**kwargs):\n"
        "    recorded.update(kwargs)\n"
        "scope = {'Any': Any, 'Agent': Agent, 'AuthProvider': AuthProvider,\n"
        "         'PermissionMode': PermissionMode, 'ClaudeAgentOptions': options,\n"
        "         'AgentDefinition': dict, 'ConfigError': ValueError, 'json': json,\n"
        "         'logger': logging.getLogger('holodeck'), 'resolve_instructions': str,\n"
        "         'McpSdkServerConfig': Any}\n"
        "exec(compile(ast.Module(body, []), str(src), 'exec'), scope)\n"
        "path = pathlib.Path(sys.argv[2])\n"
        "agent = Agent.model_validate(yaml.safe_load(path.read_text()))\n"
        "agent_base_dir.set(str(path.parent))\n"
        "mcp = [t for t in agent.tools if t.type == 'mcp']\n"
        "configs = build_claude_mcp_configs(mcp)\n"
        "scope['build_options'](agent=agent, tool_server=None, tool_names=[],\n"
        "                       mcp_configs=configs, auth_env={}, otel_env={}, mode='chat')\n"
        "print(json.dumps({'servers': recorded['mcp_servers'], 'cwd': recorded['cwd']}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(root), str(agent)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.provided("the HoloDeck 0.7.1 wheel", files=[WHEEL])
def test_a_holodeck_07_agent_pointed_at_serve_loads_in_071_starts_serve_and_works(
    tmp_path: Path, tag: str, find_processes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder-not-a-real-key")
    agent = research_agent(tmp_path, tag)
    to_07(agent, "anthropic")
    before = agent.read_bytes()
    expected_agent = tmp_path / "before.yaml"
    expected_agent.write_bytes(before)
    tune_apply(agent)
    assert (tmp_path / "research-agent.yaml.bak").read_bytes() == before
    written = yaml.safe_load(agent.read_text())
    mcp = [t for t in written["tools"] if t["type"] == "mcp"]
    assert [t["name"] for t in mcp] == ["holo_tune"]  # the proxied servers no longer exposed
    side = yaml.safe_load((tmp_path / "research-agent.servers.yaml").read_text())
    assert [t["name"] for t in side["tools"]] == ["brave_search", "memory"]
    assert "tool_filtering" not in written
    seen = _holodeck07_entry(agent, tmp_path / "wheel")
    assert list(seen["servers"]) == ["holo_tune"] and seen["cwd"] == str(tmp_path)
    entry = seen["servers"]["holo_tune"]
    assert entry["command"] == "uvx" and entry["args"][:2] == ["holo-tune", "serve"]
    assert entry["args"][2:5] == [
        str(agent),
        "--servers",
        str(tmp_path / "research-agent.servers.yaml"),
    ]
    assert entry["env"]["BRAVE_API_KEY"] == "placeholder-not-a-real-key"
    stand_in(tmp_path / "bin", "uvx", skip="holo-tune")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=entry["env"], cwd=seen["cwd"]
    )
    run_entry(params, expected_of(expected_agent, entry["args"]), tmp_path / "serve.err")
    assert find_processes(tag) == []
