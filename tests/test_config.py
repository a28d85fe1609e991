"""Loading a valid agent file: fields, order, lines, bytes, generation, warnings."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.models import (
    FunctionTool,
    HierarchicalDocumentTool,
    MCPTool,
    PromptTool,
    VectorstoreTool,
)
from workbench.errors import ConfigError

CONFIGS = Path(__file__).parent / "configs"
ENV = {"HOLO_TUNE_TEST_KEY": "sk-test"}


@pytest.fixture(autouse=True)
def _no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME elsewhere: no ~/.holodeck/config.yaml or .env of this machine leaks in."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))


def load(name: str, environ: dict[str, str] | None = None) -> AgentConfig:
    env = ENV if environ is None else environ
    return load_agent(CONFIGS / name, environ=env, dotenv_files=[], global_configs=[])


@pytest.fixture(scope="module")
def full() -> AgentConfig:
    return load("valid_full.yaml")


def test_model_and_embedding_provider(full: AgentConfig) -> None:
    model = full.agent.model
    assert (model.provider, model.name, model.temperature, model.max_tokens) == (
        "openai",
        "gpt-4o",
        0.2,
        2000,
    )
    assert model.api_key is not None and model.api_key.get_secret_value() == "sk-test"
    assert full.agent.embedding_provider is not None
    assert full.agent.embedding_provider.name == "text-embedding-3-small"
    assert full.name == "full-agent"


def test_tools_in_config_order_with_their_types(full: AgentConfig) -> None:
    assert [(t.name, type(t)) for t in full.tools] == [
        ("search_papers", VectorstoreTool),
        ("brave_search", MCPTool),
        ("remote", MCPTool),
        ("get_weather", FunctionTool),
        ("manual", HierarchicalDocumentTool),
        ("summarize", PromptTool),
    ]
    assert [t.name for t in full.mcp_tools()] == ["brave_search", "remote"]


def test_mcp_fields_and_holodeck_defaults(full: AgentConfig) -> None:
    brave, remote = full.mcp_tools()
    assert brave.transport == "stdio" and brave.command == "npx"
    assert brave.args == ["-y", "@brave/brave-search-mcp-server"]
    assert brave.env == {"BRAVE_API_KEY": "sk-test"}
    assert brave.request_timeout == 30
    assert remote.transport == "http" and remote.url == "http://127.0.0.1:8765/mcp"
    assert remote.headers == {"Authorization": "Bearer sk-test"}
    assert remote.request_timeout == 60  # HoloDeck's default
    assert remote.load_tools is True and remote.defer_loading is True


def test_filtering_block_as_in_the_file(full: AgentConfig) -> None:
    assert full.filtering == ToolFiltering(
        enabled=True,
        top_k=5,
        similarity_threshold=0.5,
        always_include=("search_papers",),
        always_include_top_n_used=0,
        search_method="hybrid",
    )
    assert full.agent.tool_filtering == full.filtering


def test_no_block_means_none_not_defaults(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("name: a\nmodel: {provider: anthropic, name: claude-sonnet-4}\n")
    assert load_agent(path, environ={}, dotenv_files=[]).filtering is None
    # A block with only some keys takes HoloDeck's defaults for the others.
    assert load("openai_07.yaml").filtering == ToolFiltering(enabled=True)


def test_test_cases_single_and_multi_turn(full: AgentConfig) -> None:
    cases = full.test_cases
    assert [c.name for c in cases] == ["web", None, "two turns"]
    assert cases[0].input and cases[0].expected_names() == ["brave_search"]
    assert cases[1].expected_names() == ["get_weather", "search_papers"]
    assert cases[2].turns is not None and [t.input for t in cases[2].turns] == [
        "Find papers on attention",
        "And the weather?",
    ]
    assert cases[2].expected_names() == ["search_papers", "get_weather"]


def test_bytes_text_digest_and_untouched_data(full: AgentConfig) -> None:
    raw = (CONFIGS / "valid_full.yaml").read_bytes()
    assert full.raw == raw
    assert full.digest == hashlib.sha256(raw).hexdigest()
    assert full.text == raw.decode()
    assert "${HOLO_TUNE_TEST_KEY}" in full.text  # before substitution
    assert full.data["model"]["api_key"] == "sk-test"  # after
    # Sections the schema does not model are carried along as parsed.
    assert full.data["evaluations"] == {
        "metrics": [{"type": "standard", "metric": "groundedness", "threshold": 0.7}]
    }


def test_crlf_bytes_are_kept_exactly(tmp_path: Path) -> None:
    source = (CONFIGS / "valid_full.yaml").read_bytes().replace(b"\n", b"\r\n")
    path = tmp_path / "agent.yaml"
    path.write_bytes(source)
    config = load_agent(path, environ=ENV, dotenv_files=[])
    assert config.raw == source and config.text == source.decode()
    lf = load("valid_full.yaml")
    assert config.lines == lf.lines and config.line_of("tool_filtering", "top_k") == 57


def test_line_of_keys_and_items(full: AgentConfig) -> None:
    lines = (CONFIGS / "valid_full.yaml").read_text().splitlines()

    def line(*keys: str | int) -> str:
        number = full.line_of(*keys)
        assert number is not None, keys
        return lines[number - 1]

    assert line("tool_filtering").startswith("tool_filtering:")
    assert "top_k: 5" in line("tool_filtering", "top_k")
    assert "- name: brave_search" in line("tools", 1)
    assert "request_timeout: 30" in line("tools", 1, "request_timeout")
    assert "BRAVE_API_KEY" in line("tools", 1, "env", "BRAVE_API_KEY")
    assert "search_papers" in line("tool_filtering", "always_include", 0)
    assert "input: And the weather?" in line("test_cases", 2, "turns", 1, "input")
    assert full.line_of("tools", 99) is None
    assert full.line_of("nope") is None
    assert full.tool_index("manual") == 4 and full.tool_index("absent") is None


def test_generation_from_the_openai_block(full: AgentConfig) -> None:
    assert full.generation == "0.4-0.6"
    seven = load("openai_07.yaml")
    assert seven.generation == "0.7+"
    assert seven.data["openai"] == {"tool_search": {"enabled": True}}
    # Not a warning here: diagnostics report it.
    assert not any("openai" in w for w in seven.warnings)


def test_valid_file_warns_only_of_the_http_transport(full: AgentConfig) -> None:
    assert len(full.warnings) == 1
    assert full.warnings[0].startswith(f"{CONFIGS / 'valid_full.yaml'}:36: tools[2].transport:")


def test_warnings_name_file_line_and_field() -> None:
    config = load("warnings.yaml")
    where = str(CONFIGS / "warnings.yaml")
    assert config.warnings == [
        f"{where}:2: name: required key is missing (HoloDeck rejects the file)",
        f"{where}:2: instructions: required key is missing (HoloDeck rejects the file)",
        f"{where}:9: tools[0].command: HoloDeck only starts npx, node, uvx, docker; "
        "it rejects 'python' (holo-tune starts it anyway)",
        f"{where}:14: tools[1].transport: HoloDeck 0.6 cannot start http MCP servers (its "
        "Semantic Kernel backend raises 'not yet implemented', its Claude backend skips them); "
        "holo-tune lists the tools anyway",
        f"{where}:20: tool_filtering.top_k: appears twice (first on line 19); "
        "HoloDeck's loader takes the last value",
    ]
    # It still loads: the name falls back to the file name, the last top_k wins.
    assert config.name == "warnings"
    assert config.filtering is not None and config.filtering.top_k == 4


def test_warnings_have_a_kind_and_say_if_holodeck_refuses_the_file() -> None:
    """A caller (``check``) classifies warnings by kind, not by their text."""
    config = load("warnings.yaml")
    kinds = [(w.kind, w.refused, w.field) for w in config.warnings]
    assert kinds[:5] == [
        ("holodeck-rejects", True, "name"),
        ("holodeck-rejects", True, "instructions"),
        ("command-rejected", True, "tools[0].command"),
        ("transport-unsupported", False, "tools[1].transport"),
        ("duplicate-key", False, "tool_filtering.top_k"),
    ]
    command = config.warnings[2]
    assert (command.line, command.evidence) == (9, {"command": "python", "server": "local_server"})
    duplicate = config.warnings[4]
    assert (duplicate.kind, duplicate.refused, duplicate.evidence) == (
        "duplicate-key",
        False,
        {"first_line": 19},
    )
    unset = load_agent(
        CONFIGS / "missing_var.yaml", environ={}, dotenv_files=[], missing_env="warn"
    )
    variables = [w for w in unset.warnings if w.kind == "unset-variable"]
    assert variables and all(w.refused and w.line and "variable" in w.evidence for w in variables)


def test_more_than_fifty_tools_is_a_warning(tmp_path: Path) -> None:
    entries = "".join(
        f"  - {{name: t{i}, type: function, description: d, file: f.py, function: f{i}}}\n"
        for i in range(51)
    )
    path = tmp_path / "many.yaml"
    path.write_text(
        "name: many\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: x}\n"
        f"tools:\n{entries}"
    )
    config = load_agent(path, environ={}, dotenv_files=[])
    assert len(config.tools) == 51
    assert config.warnings == [f"{path}:4: tools: 51 tools; HoloDeck allows at most 50"]


def test_empty_tool_filtering_value_is_no_block(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\nmodel: {provider: ollama, name: llama3}\ninstructions: {file: i.md}\n"
        "tool_filtering:\n"
    )
    config = load_agent(path, environ={}, dotenv_files=[])
    assert config.filtering is None and config.line_of("tool_filtering") == 4


def test_anchors_and_merge_keys(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
        "tools:\n"
        "  - &server {type: mcp, command: npx, description: shared, name: one}\n"
        "  - <<: *server\n"
        "    name: two\n"
        "    command: uvx\n"
    )
    config = load_agent(path, environ={}, dotenv_files=[], global_configs=[])
    assert [(t.name, getattr(t, "command", None)) for t in config.tools] == [
        ("one", "npx"),
        ("two", "uvx"),
    ]
    # A merged key has the line where it is written (the anchor); an own key its own line.
    assert config.line_of("tools", 1, "description") == 5
    assert config.line_of("tools", 1, "command") == 8
    assert config.line_of("tools", 1, "name") == 7
    assert config.warnings == []
    # An anchor held by a key of its own is an unknown key to HoloDeck, which refuses the file.
    path.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
        "x-server: &server {type: mcp, command: npx, description: shared}\n"
        "tools:\n  - <<: *server\n    name: one\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_agent(path, environ={}, dotenv_files=[], global_configs=[])
    assert caught.value.one_line() == (
        f"{path}:4: x-server: unknown key; HoloDeck refuses a file with a key its agent schema "
        "lacks"
    )


def test_repr_shows_no_secret(full: AgentConfig) -> None:
    text = repr(full)
    assert "sk-test" not in text and "valid_full.yaml" in text and full.digest in text
