"""The user and project ``config.yaml`` merged into the agent, as HoloDeck's loader merges them."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import AgentConfig, load_agent
from workbench.config.globalcfg import config_files
from workbench.config.models import MCPTool, VectorstoreTool
from workbench.errors import ConfigError

AGENT = """\
name: a
model:
  provider: azure_openai
  name: gpt-4o
instructions: {inline: hi}
tools:
  - {name: papers, type: vectorstore, description: d, source: p.md, database: research}
  - {name: notes, type: vectorstore, description: d, source: n.md, database: unknown}
  - {name: memory, type: mcp, description: mine, command: npx}
"""

PROJECT = """\
providers:
  azure:
    provider: azure_openai
    name: ignored-because-the-agent-has-one
    endpoint: https://project.openai.azure.com
vectorstores:
  research:
    provider: postgresql
    connection_string: postgresql://db/research
    options: {collection: papers}
mcp_servers:
  - name: memory
    description: the agent's own wins
    command: uvx
  - name: github
    type: mcp
    description: GitHub
    command: npx
    args: [-y, "@modelcontextprotocol/server-github"]
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".holodeck").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def agent(tmp_path: Path, home: Path) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir()
    (directory / "agent.yaml").write_text(AGENT)
    return directory / "agent.yaml"


def load(path: Path) -> AgentConfig:
    return load_agent(path, environ={}, dotenv_files=[])


def test_project_config_is_merged(agent: Path) -> None:
    project = agent.parent / "config.yaml"
    project.write_text(PROJECT)
    config = load(agent)
    assert config.agent.model.endpoint == "https://project.openai.azure.com"
    assert config.agent.model.name == "gpt-4o"  # the agent's own keys win
    papers, notes = (t for t in config.tools if isinstance(t, VectorstoreTool))
    assert papers.database is not None and not isinstance(papers.database, str)
    assert papers.database.provider == "postgres"
    assert papers.database.model_extra == {"collection": "papers"}
    assert notes.database is None  # an unknown name: HoloDeck falls back to in-memory
    assert [t.name for t in config.mcp_tools()] == ["memory", "github"]
    assert config.mcp_tools()[0].command == "npx"
    assert config.mcp_tools()[1].args == ["-y", "@modelcontextprotocol/server-github"]
    assert config.global_configs == [project]
    assert config.warnings == [
        f"{project}:15: mcp_servers[1]: HoloDeck adds this global MCP server 'github' to the "
        "agent's tools"
    ]
    # The file's own data is untouched (write-back and cases read it).
    assert [t["name"] for t in config.data["tools"]] == ["papers", "notes", "memory"]
    assert config.line_of("tools", 3) is None


def test_user_and_project_merge_as_holodeck_merges_full_dumps(agent: Path, home: Path) -> None:
    """The project wins every key, even one it does not write (checked against HoloDeck)."""
    (home / ".holodeck" / "config.yaml").write_text(
        "providers:\n"
        "  azure_openai:\n    provider: azure_openai\n    name: x\n"
        "    endpoint: https://user\n    api_version: '2024-10-21'\n"
        "  spare: {provider: azure_openai, name: y, endpoint: 'https://spare'}\n"
        "mcp_servers:\n  - {name: fetch, description: f, command: uvx, args: [mcp-server-fetch]}\n"
    )
    (agent.parent / "config.yml").write_text(
        "providers:\n  azure_openai:\n    provider: azure_openai\n    name: x\n"
        "    endpoint: https://project\n"
    )
    config = load(agent)
    # The project's azure_openai entry wins whole: no api_version any more.
    assert (config.agent.model.endpoint, config.agent.model.api_version) == (
        "https://project",
        None,
    )
    # The project writes no mcp_servers: the user's are dropped.
    assert [t.name for t in config.mcp_tools()] == ["memory"]
    assert config.global_configs == [
        home / ".holodeck" / "config.yaml",
        agent.parent / "config.yml",
    ]


def test_a_project_list_replaces_the_users(agent: Path, home: Path) -> None:
    (home / ".holodeck" / "config.yml").write_text(
        "mcp_servers:\n  - {name: fetch, description: f, command: uvx}\n"
    )
    (agent.parent / "config.yaml").write_text(
        "providers:\n  a: {provider: azure_openai, name: x, endpoint: 'https://e'}\n"
        "mcp_servers:\n  - {name: time, type: mcp, description: t, command: uvx}\n"
    )
    names = [t.name for t in load(agent).mcp_tools()]
    assert names == ["memory", "time"]


def test_yml_is_preferred_and_files_are_optional(agent: Path, home: Path) -> None:
    assert config_files(agent.parent) == []
    (agent.parent / "config.yaml").write_text("{}\n")
    (agent.parent / "config.yml").write_text("{}\n")
    assert config_files(agent.parent) == [agent.parent / "config.yml"]
    with pytest.raises(ConfigError, match="endpoint is required"):
        load(agent)  # nothing merged: the azure model still lacks its endpoint


def test_a_broken_global_config_names_its_file_and_line(agent: Path, home: Path) -> None:
    user = home / ".holodeck" / "config.yaml"
    user.write_text("mcp_servers:\n  - name: bad-name\n    description: d\n    command: npx\n")
    with pytest.raises(ConfigError) as caught:
        load(agent)
    assert str(caught.value) == (
        f"{user}:2: mcp_servers[0].name: must match ^[0-9A-Za-z_]+$ (letters, digits, "
        "underscores), got 'bad-name'"
    )
    user.write_text("providers: {}\nprompts: []\n")
    with pytest.raises(ConfigError, match=r"config.yaml:2: prompts: unknown key"):
        load(agent)


def test_global_configs_can_be_given(agent: Path, tmp_path: Path) -> None:
    other = tmp_path / "shared.yaml"
    other.write_text(PROJECT)
    config = load_agent(agent, environ={}, dotenv_files=[], global_configs=[other])
    assert isinstance(config.mcp_tools()[-1], MCPTool) and config.mcp_tools()[-1].name == "github"
    (agent.parent / "config.yaml").write_text(PROJECT)
    with pytest.raises(ConfigError):
        load_agent(agent, environ={}, dotenv_files=[], global_configs=[])


def test_an_untyped_global_server_is_added_with_a_warning(agent: Path, home: Path) -> None:
    """HoloDeck 0.6.40 merges it without ``type`` and then refuses every agent (checked against
    its loader); holo-tune keeps the server and says what to fix."""
    user = home / ".holodeck" / "config.yaml"
    user.write_text(
        "providers:\n  a: {provider: azure_openai, name: x, endpoint: 'https://e'}\n"
        "mcp_servers:\n  - {name: fetch, description: f, command: uvx}\n"
    )
    config = load(agent)
    assert [t.name for t in config.mcp_tools()] == ["memory", "fetch"]
    assert config.warnings == [
        f"{user}:4: mcp_servers[0]: HoloDeck adds this global MCP server 'fetch' without its "
        "default type, and then refuses the agent (write type: mcp); holo-tune adds it as an "
        "mcp entry"
    ]


def test_variables_in_a_global_config(agent: Path, home: Path) -> None:
    user = home / ".holodeck" / "config.yaml"
    user.write_text("providers:\n  a: {provider: azure_openai, name: x, endpoint: '${AZ}'}\n")
    with pytest.raises(ConfigError, match=rf"^{user}:2: providers.a.endpoint: .*'AZ' is not set"):
        load(agent)
    config = load_agent(agent, environ={}, dotenv_files=[], missing_env="warn")
    assert config.agent.model.endpoint == "holo-tune-unset-AZ"
    assert config.warnings == [
        f"{user}:2: environment variable 'AZ' is not set; 'holo-tune-unset-AZ' stands in "
        "(HoloDeck would refuse the file)"
    ]
    config = load_agent(agent, environ={"AZ": "https://az"}, dotenv_files=[])
    assert config.agent.model.endpoint == "https://az" and config.warnings == []


def test_rules_of_a_global_server_name_its_config_file(agent: Path) -> None:
    project = agent.parent / "config.yaml"
    project.write_text(
        "providers:\n  a: {provider: azure_openai, name: x, endpoint: 'https://e'}\n"
        "mcp_servers:\n"
        "  - name: local\n"
        "    type: mcp\n"
        "    description: l\n"
        "    command: python\n"
    )
    assert load(agent).warnings == [
        f"{project}:4: mcp_servers[0]: HoloDeck adds this global MCP server 'local' to the "
        "agent's tools",
        f"{project}:7: mcp_servers[0].command: HoloDeck only starts npx, node, uvx, docker; it "
        "rejects 'python' (holo-tune starts it anyway)",
    ]
