"""HoloDeck 0.7 static allowlists: the writer's text edits, the traps, the tuner, and the written
file against HoloDeck 0.7.1's own ``Agent`` model.

``make test`` downloads the 0.7.1 wheel into .cache/holodeck07. The oracle test unpacks it and, in
a subprocess, imports ``holodeck.models.agent`` with stand-ins for the third-party modules it
imports but never calls while validating (as tests/test_config_oracle.py does for 0.6.40); it
validates the written file and reports what HoloDeck 0.7.1 reads from it: each MCP entry's
``config.allowed_tools`` and the names its own ``_disallowed_tool_names`` drops.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle.standins import STANDINS

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.config.writeback.allowlist import plan_allowlists
from workbench.errors import WriteBackError
from workbench.tokens import token_table

REPO = Path(__file__).resolve().parents[1]
WHEEL = REPO / ".cache" / "holodeck07" / "holodeck_ai-0.7.1-py3-none-any.whl"
STACKONE = REPO / "tests" / "data" / "datasets" / "stackone"

AGENT = """\
# An agent on HoloDeck 0.7.
name: seven
model:
  provider: openai
  name: gpt-4.1
instructions:
  inline: Help.
tools:
  - name: mail   # the mail server
    type: mcp
    description: Mail
    command: npx
    args: ["-y", "mail-server"]
    config:
      region: eu
  - name: notes
    type: mcp
    description: Notes
    command: npx
    args: ["-y", "notes-server"]
    config: {}
  - name: search
    type: mcp
    description: Search
    command: uvx
    args: ["search-server"]
openai:
  max_turns: 4   # keep short
"""


def _write(tmp_path: Path, text: str = AGENT, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _plan(path: Path, lists: dict[str, list[str]], backend: str = "openai-agents") -> bytes:
    plan = plan_allowlists(path, backend, lists)  # type: ignore[arg-type]
    return plan.new


def test_openai_lists_go_into_each_mcp_entry_and_empty_servers_are_disallowed(
    tmp_path: Path,
) -> None:
    path = _write(tmp_path)
    new = _plan(path, {"mail": ["send", "read"], "notes": ["add"], "search": []}).decode()
    data = yaml.safe_load(new)
    assert data["tools"][0]["config"] == {"region": "eu", "allowed_tools": ["send", "read"]}
    assert data["tools"][1]["config"] == {"allowed_tools": ["add"]}
    assert "config" not in data["tools"][2]  # never an empty allowed_tools (= no filter)
    assert data["openai"] == {"max_turns": 4, "disallowed_tools": ["search"]}
    # every byte outside the written keys stays: comments, flow lists, order
    assert "  - name: mail   # the mail server\n" in new
    assert '    args: ["-y", "mail-server"]\n' in new
    assert "  max_turns: 4   # keep short\n" in new
    assert new.startswith("# An agent on HoloDeck 0.7.\n")


def test_a_kept_server_leaves_disallowed_and_a_rewrite_is_in_place(tmp_path: Path) -> None:
    path = _write(tmp_path)
    path.write_bytes(_plan(path, {"mail": ["send"], "notes": [], "search": []}))
    first = yaml.safe_load(path.read_text())
    assert first["openai"]["disallowed_tools"] == ["notes", "search"]
    path.write_bytes(_plan(path, {"mail": ["read"], "notes": ["add"], "search": []}))
    text = path.read_text()
    data = yaml.safe_load(text)
    assert data["tools"][0]["config"]["allowed_tools"] == ["read"]
    assert data["openai"]["disallowed_tools"] == ["search"]
    assert text.count("allowed_tools:") == 3  # mail, notes, openai.disallowed_tools


def test_the_same_lists_again_change_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path)
    lists = {"mail": ["send"], "notes": [], "search": ["find"]}
    path.write_bytes(_plan(path, lists))
    plan = plan_allowlists(path, "openai-agents", lists)
    assert not plan.changed and plan.diff == "" and plan.changes == ()


def test_other_disallowed_names_are_kept(tmp_path: Path) -> None:
    text = AGENT.replace("  max_turns: 4", "  disallowed_tools: [web_search]\n  max_turns: 4")
    path = _write(tmp_path, text)
    data = yaml.safe_load(_plan(path, {"mail": ["send"], "notes": [], "search": ["f"]}))
    assert data["openai"]["disallowed_tools"] == ["web_search", "notes"]


def test_claude_backend_writes_mcp_names_and_keeps_other_entries(tmp_path: Path) -> None:
    text = AGENT.replace("provider: openai", "provider: anthropic").replace(
        "openai:\n  max_turns: 4   # keep short\n", "claude:\n  allowed_tools: [WebSearch]\n"
    )
    path = _write(tmp_path, text)
    data = yaml.safe_load(_plan(path, {"mail": ["send"], "notes": [], "search": []}, "claude"))
    assert data["claude"]["allowed_tools"] == ["WebSearch", "mcp__mail__send"]


def test_claude_backend_with_nothing_kept_denies_instead_of_an_empty_list(
    tmp_path: Path,
) -> None:
    text = AGENT.replace("provider: openai", "provider: anthropic")
    path = _write(tmp_path, text)
    plan = plan_allowlists(
        path, "claude", {"mail": [], "notes": []}, every={"mail": ["send"], "notes": ["add"]}
    )
    data = yaml.safe_load(plan.new)
    assert "allowed_tools" not in (data.get("claude") or {})
    assert data["claude"]["disallowed_tools"] == ["mcp__mail__send", "mcp__notes__add"]


def test_claude_backend_denies_every_tool_not_kept(tmp_path: Path) -> None:
    """The Claude Agent SDK reads allowed_tools as approvals: the tools not kept are denied by
    name (a bare-name deny removes a tool from the model's context), other denials stay."""
    text = AGENT.replace("provider: openai", "provider: anthropic").replace(
        "openai:\n  max_turns: 4   # keep short\n", "claude:\n  disallowed_tools: [Bash]\n"
    )
    path = _write(tmp_path, text)
    every = {"mail": ["send", "read"], "notes": ["add"], "search": ["find"]}
    lists = {"mail": ["send"], "notes": [], "search": ["find"]}
    plan = plan_allowlists(path, "claude", lists, every=every)
    claude = yaml.safe_load(plan.new)["claude"]
    assert claude["allowed_tools"] == ["mcp__mail__send", "mcp__search__find"]
    assert claude["disallowed_tools"] == ["Bash", "mcp__mail__read", "mcp__notes__add"]
    path.write_bytes(plan.new)  # a second write replaces our names, keeps Bash
    again = plan_allowlists(path, "claude", {**lists, "notes": ["add"]}, every=every)
    claude = yaml.safe_load(again.new)["claude"]
    assert claude["disallowed_tools"] == ["Bash", "mcp__mail__read"]
    assert claude["allowed_tools"] == ["mcp__mail__send", "mcp__notes__add", "mcp__search__find"]


def test_refusals_leave_nothing_planned(tmp_path: Path) -> None:
    path = _write(tmp_path, AGENT.replace("    config: {}\n", "    config: {a: 1}\n"))
    with pytest.raises(WriteBackError, match=r"tools\[1\].config.*edit it by hand"):
        plan_allowlists(path, "openai-agents", {"notes": ["add"]})
    with pytest.raises(WriteBackError, match="no MCP entry named 'ghost'"):
        plan_allowlists(path, "openai-agents", {"ghost": ["x"]})
    changed = tmp_path / "agent.yaml"
    with pytest.raises(WriteBackError, match="changed on disk"):
        plan_allowlists(changed, "openai-agents", {"mail": ["x"]}, original=b"name: other\n")


def test_an_anchored_or_aliased_config_is_left_to_the_user(tmp_path: Path) -> None:
    anchored = AGENT.replace("    config:\n      region", "    config: &shared\n      region")
    path = _write(tmp_path, anchored)
    with pytest.raises(WriteBackError, match=r"tools\[0\].config.*alias or anchor"):
        plan_allowlists(path, "openai-agents", {"mail": ["send"]})
    aliased = anchored.replace("    config: {}\n", "    config: *shared\n")
    path = _write(tmp_path, aliased)
    with pytest.raises(WriteBackError, match=r"tools\[1\].config.*alias or anchor"):
        plan_allowlists(path, "openai-agents", {"notes": ["add"]})
    assert path.read_text() == aliased


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kept=st.fixed_dictionaries(
        {
            s: st.lists(st.sampled_from(["a", "b-c", "d.e", "yes", "1", "x y"]), unique=True)
            for s in ("mail", "notes", "search")
        }
    ),
    crlf=st.booleans(),
)
def test_any_lists_read_back_exactly_and_keep_every_other_key(
    tmp_path: Path, kept: dict[str, list[str]], crlf: bool
) -> None:
    text = AGENT.replace("\n", "\r\n") if crlf else AGENT
    path = tmp_path / "h.yaml"
    path.write_bytes(text.encode())
    new = plan_allowlists(path, "openai-agents", kept).new
    data = yaml.safe_load(new)
    old = yaml.safe_load(text)
    for i, server in enumerate(("mail", "notes", "search")):
        config = data["tools"][i].get("config") or {}
        assert config.get("allowed_tools", []) == kept[server]
        rest = {k: v for k, v in data["tools"][i].items() if k != "config"}
        assert rest == {k: v for k, v in old["tools"][i].items() if k != "config"}
    dropped = {s for s in ("mail", "notes", "search") if not kept[s]}
    assert set(data["openai"].get("disallowed_tools", [])) == dropped
    assert data["openai"]["max_turns"] == 4
    if crlf:  # the file's own line ending in every inserted line
        assert new.count(b"\n") == new.count(b"\r\n")


# ------------------------------------------------------------------------------- the whole path


def _stackone_agent(tmp_path: Path, provider: str) -> Path:
    """The stackone data set as a HoloDeck 0.7 agent: one stdio MCP entry per catalog server."""
    servers = json.loads((STACKONE / "catalog.json").read_text())["servers"]
    lines = [
        "name: stack",
        "model:",
        f"  provider: {provider}",
        "  name: gpt-4o" if provider == "openai" else "  name: claude-sonnet-4-5",
        "instructions:",
        "  inline: Help.",
        "tools:",
    ]
    for server in servers:
        lines += [
            f"  - name: {server}",
            "    type: mcp",
            f"    description: the {server} server",
            "    command: npx",
            f'    args: ["-y", "{server}-server"]',
        ]
    lines += ["openai:" if provider == "openai" else "claude:", "  max_turns: 5", ""]
    path = tmp_path / "agent.yaml"
    path.write_text("\n".join(lines))
    return path


def _tune(path: Path, *extra: str) -> list[str]:
    return [
        "tune",
        str(path),
        "--catalog",
        str(STACKONE / "catalog.json"),
        "--cases",
        str(STACKONE / "cases.jsonl"),
        *extra,
    ]


def test_tune_json_names_the_runtime_lists_and_traps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _stackone_agent(tmp_path, "openai")
    before = path.read_bytes()
    assert main([*_tune(path, "--max-tokens", "1000", "--json")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runtime"]["name"] == "holodeck-0.7" and data["runtime"]["source"] == "yaml"
    assert data["backend"] == "openai-agents"
    assert data["insample"]["tokens_selected_mean"] <= 1000
    assert 0 < data["heldout"]["hit"] <= 1 and data["heldout"]["hit"] <= data["insample"]["hit"]
    assert data["current"]["token_reduction"] == 0.0
    assert any("empty" in t and "disallowed_tools" in t for t in data["traps"])
    assert set(data["dropped_servers"]) | set(data["allowlists"]) == set(
        json.loads((STACKONE / "catalog.json").read_text())["servers"]
    )
    assert path.read_bytes() == before  # no --apply: nothing written


def test_tune_min_hit_is_the_cheapest_set_reaching_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _stackone_agent(tmp_path, "openai")
    assert main([*_tune(path, "--min-hit", "0.5", "--json")]) == 0
    half = json.loads(capsys.readouterr().out)
    assert main([*_tune(path, "--min-hit", "0.9", "--json")]) == 0
    most = json.loads(capsys.readouterr().out)
    assert half["insample"]["hit"] >= 0.5 and most["insample"]["hit"] >= 0.9
    assert half["insample"]["tokens_selected_mean"] < most["insample"]["tokens_selected_mean"]


def _holodeck07_reads(path: Path, root: Path) -> dict[str, Any]:
    """What HoloDeck 0.7.1 reads from the file: validated by its Agent, its own disallow set."""
    with zipfile.ZipFile(WHEEL) as wheel:
        wheel.extractall(root)
    code = STANDINS + (
        "import yaml\n"
        "from holodeck.models.agent import Agent\n"
        # HoloDeck's own function, taken from its module's source: importing the module would
        # start the whole backend package (SDKs the stand-ins cannot imitate).
        "import ast, pathlib\n"
        "src = pathlib.Path(sys.argv[1], 'holodeck/lib/backends/openai_agents_backend.py')\n"
        "tree = ast.parse(src.read_text())\n"
        "fn = [n for n in tree.body if getattr(n, 'name', '') == '_disallowed_tool_names']\n"
        "scope = {'Agent': Agent}\n"
        "exec(compile(ast.Module(fn, []), str(src), 'exec'), scope)\n"
        "_disallowed_tool_names = scope['_disallowed_tool_names']\n"
        "agent = Agent.model_validate(yaml.safe_load(open(sys.argv[2])))\n"
        "out = {'allowed': {t.name: (t.config or {}).get('allowed_tools') for t in agent.tools\n"
        "                   if t.type == 'mcp'},\n"
        "       'disallowed': sorted(_disallowed_tool_names(agent)),\n"
        "       'claude_allowed': agent.claude.allowed_tools if agent.claude else None}\n"
        "print(json.dumps(out))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(root), str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    reads: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return reads


def _holodeck07_claude_options(path: Path, root: Path) -> dict[str, Any]:
    """The ``allowed_tools`` / ``disallowed_tools`` HoloDeck 0.7.1's own ``build_options`` hands
    the Claude Agent SDK for the file: the function and its helpers are taken from the wheel's
    source and run with a recorder standing in for ``ClaudeAgentOptions`` (the backend package
    itself imports SDKs the stand-ins cannot imitate)."""
    with zipfile.ZipFile(WHEEL) as wheel:
        wheel.extractall(root)
    code = STANDINS + (
        "import ast, logging, pathlib, yaml\n"
        "from typing import Any\n"
        "from holodeck.models.agent import Agent\n"
        "from holodeck.models.claude_config import AuthProvider, PermissionMode\n"
        "for name, attrs in {'holodeck.config.context': {'agent_base_dir': mock.MagicMock()},\n"
        "                    'holodeck.lib.backends.claude_hooks':\n"
        "                        {'build_default_hooks': lambda: {}}}.items():\n"
        "    module = types.ModuleType(name)\n"
        "    module.__dict__.update(attrs)\n"
        "    sys.modules[name] = module\n"
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
        "assert len(body) == len(wanted), [named(n) for n in body]\n"
        "agent = Agent.model_validate(yaml.safe_load(open(sys.argv[2])))\n"
        "scope['build_options'](agent=agent, tool_server=None, tool_names=[], mcp_configs={},\n"
        "                       auth_env={}, otel_env={}, mode='chat')\n"
        "print(json.dumps({k: recorded.get(k) for k in ('allowed_tools', 'disallowed_tools')}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(root), str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    options: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return options


@pytest.mark.provided("the HoloDeck 0.7.1 wheel", files=[WHEEL])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_written_allowlists_load_in_holodeck_071_and_expose_at_most_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], provider: str
) -> None:
    path = _stackone_agent(tmp_path, provider)
    budget = 2000
    runtime = [] if provider == "openai" else ["--runtime", "holodeck-0.7"]
    assert main([*_tune(path, "--max-tokens", str(budget), "--apply", *runtime)]) == 0
    err = capsys.readouterr().err
    assert "written (previous file kept in" in err
    reads = _holodeck07_reads(path, tmp_path / "wheel")
    sdk = _holodeck07_claude_options(path, tmp_path / "wheel") if provider != "openai" else {}
    agent = load_agent(path)
    catalog = load_catalog(agent, catalog_file=STACKONE / "catalog.json")
    tokens = token_table(catalog, provider, agent.agent.model.name)
    exposed = []
    for i, tool in enumerate(catalog.tools):
        if provider == "openai":
            allowed = reads["allowed"][tool.plugin]
            on = tool.plugin not in reads["disallowed"] and (not allowed or tool.name in allowed)
        else:  # what reaches the SDK: only a deny hides a tool, an allow approves it
            name = f"mcp__{tool.plugin}__{tool.name}"
            on = name not in sdk["disallowed_tools"]
            assert on == (name in sdk["allowed_tools"]), name
        if on:
            exposed.append(i)
    assert 0 < len(exposed) < len(catalog)
    assert tokens.total(exposed) <= budget


@pytest.mark.provided("the HoloDeck 0.7.1 wheel", files=[WHEEL])
def test_the_oracle_can_fail_on_a_tool_filtering_block(tmp_path: Path) -> None:
    """HoloDeck 0.7.1's Agent rejects the 0.6 block: the oracle above sees a bad file."""
    path = _stackone_agent(tmp_path, "openai")
    with path.open("a") as f:
        f.write("tool_filtering:\n  enabled: true\n")
    with pytest.raises(AssertionError, match="tool_filtering"):
        _holodeck07_reads(path, tmp_path / "wheel")
