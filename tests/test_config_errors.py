"""Every config error is one line ``FILE:LINE: FIELD: cause`` naming the right line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import load_agent
from workbench.errors import ConfigError, InputError

CONFIGS = Path(__file__).parent / "configs"


def error_of(path: Path, environ: dict[str, str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_agent(
            path, environ={} if environ is None else environ, dotenv_files=[], global_configs=[]
        )
    err = caught.value
    assert isinstance(err, InputError) and "\n" not in str(err)
    return err


def fixture_error(name: str) -> str:
    return str(error_of(CONFIGS / name))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "bad_yaml.yaml",
            "8: invalid YAML: while parsing a block collection, did not find expected '-' "
            "indicator (column 4)",
        ),
        ("bad_top_k.yaml", "9: tool_filtering.top_k: must be <= 50, got 99"),
        ("bad_threshold.yaml", "9: tool_filtering.similarity_threshold: must be <= 1.0, got 1.5"),
        (
            "bad_top_n_used.yaml",
            "8: tool_filtering.always_include_top_n_used: must be <= 20, got 21",
        ),
        (
            "unknown_filtering_key.yaml",
            "9: tool_filtering.topk: unknown key (did you mean 'top_k'?); allowed: enabled, "
            "top_k, similarity_threshold, always_include, always_include_top_n_used, "
            "search_method",
        ),
        (
            "unknown_top_level_key.yaml",
            "8: tool_filtring: unknown key (did you mean 'tool_filtering'?); HoloDeck refuses a "
            "file with a key its agent schema lacks",
        ),
        ("wrong_type.yaml", "12: tools[0].request_timeout: expected an integer, got 'soon'"),
        (
            "missing_var.yaml",
            "13: tools[0].env.BRAVE_API_KEY: environment variable 'HOLO_TUNE_TEST_MISSING_VAR' "
            "is not set (set it, or add HOLO_TUNE_TEST_MISSING_VAR=... to a .env file beside the "
            "agent file)",
        ),
        (
            "bad_tool_type.yaml",
            "9: tools[0].type: unknown type 'grpc' (expected one of 'vectorstore', 'function', "
            "'mcp', 'prompt', 'hierarchical_document')",
        ),
        ("not_a_mapping.yaml", "1: an agent file is a mapping of keys, not a list"),
    ],
)
def test_fixture_errors(name: str, expected: str) -> None:
    assert fixture_error(name) == f"{CONFIGS / name}:{expected}"


def test_unknown_key_inside_a_tool_lists_the_allowed_keys() -> None:
    message = fixture_error("unknown_tool_key.yaml")
    assert message.startswith(f"{CONFIGS / 'unknown_tool_key.yaml'}:13: tools[0].timeout_seconds:")
    assert "unknown key; allowed: name, description, defer_loading, type, transport, command" in (
        message
    )
    assert "request_timeout" in message


def test_error_attributes_are_set() -> None:
    err = error_of(CONFIGS / "bad_top_k.yaml")
    assert (err.file, err.line, err.field) == (
        str(CONFIGS / "bad_top_k.yaml"),
        9,
        "tool_filtering.top_k",
    )
    assert err.exit_code == 2


BASE = "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("tool_filtering:\n  top_k: 0\n", "5: tool_filtering.top_k: must be >= 1, got 0"),
        (
            "tool_filtering:\n  top_k: five\n",
            "5: tool_filtering.top_k: expected an integer, got 'five'",
        ),
        (
            "tool_filtering:\n  similarity_threshold: -0.1\n",
            "5: tool_filtering.similarity_threshold: must be >= 0.0, got -0.1",
        ),
        (
            "tool_filtering:\n  search_method: fuzzy\n",
            "5: tool_filtering.search_method: must be 'semantic', 'bm25' or 'hybrid', got 'fuzzy'",
        ),
        (
            "tool_filtering:\n  enabled: maybe\n",
            "5: tool_filtering.enabled: expected true or false, got 'maybe'",
        ),
        ("tool_filtering: [1]\n", "4: tool_filtering: expected a mapping, got a list"),
        ("tools:\n  a: 1\n", "4: tools: expected a list, got a mapping"),
        ("tools:\n  - memory\n", "5: tools[0]: expected a mapping, got 'memory'"),
        (
            "tools:\n  - name: x\n    description: d\n",
            "5: tools[0].type: type is missing (one of 'mcp', 'vectorstore', 'function', "
            "'hierarchical_document', 'prompt')",
        ),
        (
            "tools:\n  - name: brave-search\n    type: mcp\n    description: d\n    command: npx\n",
            "5: tools[0].name: must match ^[0-9A-Za-z_]+$ (letters, digits, underscores), "
            "got 'brave-search'",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    description: d\n",
            "5: tools[0].command: command is required for the stdio transport",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    transport: sse\n    description: d\n",
            "5: tools[0].url: url is required for the sse transport",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    transport: grpc\n    url: https://x\n"
            "    description: d\n",
            "7: tools[0].transport: must be 'stdio', 'sse', 'websocket' or 'http', got 'grpc'",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    transport: sse\n    url: http://example.com\n"
            "    description: d\n",
            "8: tools[0].url: url must use https:// (http:// only for localhost)",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    description: d\n    command: npx\n"
            "    request_timeout: 0\n",
            "9: tools[0].request_timeout: must be > 0, got 0",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    description: d\n    command: npx\n"
            "    env:\n      PORT: 8080\n",
            "10: tools[0].env.PORT: expected a string, got 8080 (quote it to make it a string)",
        ),
        (
            "tools:\n  - name: x\n    type: mcp\n    command: npx\n",
            "5: tools[0].description: required key is missing",
        ),
        (
            "tools:\n  - {name: x, type: mcp, description: d, command: npx}\n"
            "  - {name: x, type: function, description: d, file: f.py, function: f}\n",
            "6: tools[1].name: tool name 'x' is used twice (names must be unique)",
        ),
        (
            "tools:\n  - name: v\n    type: vectorstore\n    description: d\n    source: x.csv\n"
            "    vector_field: text\n",
            "5: tools[0].id_field: id_field is required when vector_field is set",
        ),
        (
            "tools:\n  - name: v\n    type: vectorstore\n    description: d\n    source: ftp://x\n",
            "8: tools[0].source: unsupported URI scheme 'ftp' "
            "(supported: az, file, http, https, s3)",
        ),
        (
            "tools:\n  - name: h\n    type: hierarchical_document\n    description: d\n"
            "    source: docs/\n    semantic_weight: 0.9\n",
            "9: tools[0].semantic_weight: hybrid weights (semantic + keyword + exact) must sum "
            "to 1.0, got 1.4",
        ),
        (
            "tools:\n  - name: p\n    type: prompt\n    description: d\n    parameters: {a: {}}\n",
            "5: tools[0].template: give exactly one of template or file",
        ),
        (
            "embedding_provider:\n  provider: azure_openai\n  name: e\n",
            "4: embedding_provider.endpoint: endpoint is required for the azure_openai provider",
        ),
        (
            "test_cases:\n  - input: hi\n    expected_tools: [a, {name: b, count: 0}]\n",
            "6: test_cases[0].expected_tools[1].count: must be >= 1, got 0",
        ),
        (
            "test_cases:\n  - input: hi\n    expected_tools: [3]\n",
            "6: test_cases[0].expected_tools: each expected tool must be a name or a "
            "{name, args, count}",
        ),
        (
            "test_cases:\n  - input: hi\n    turns: [{input: x}]\n",
            "5: test_cases[0].input: a multi-turn case (turns) cannot also set input",
        ),
        (
            "test_cases:\n  - name: t\n",
            "5: test_cases[0].input: a test case needs input (or turns)",
        ),
    ],
)
def test_validation_errors(tmp_path: Path, body: str, expected: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(BASE + body)
    assert str(error_of(path)) == f"{path}:{expected}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: a\n", ":1: model: required key is missing"),
        ("", ": the file is empty (an agent needs at least model and instructions)"),
        (
            "name: a\nmodel:\n  provider: gemini\n  name: g\n",
            ":3: model.provider: must be "
            "'openai', 'azure_openai', 'ollama' or 'anthropic', got 'gemini'",
        ),
        (
            "name: a\nmodel: {provider: openai, name: gpt-4o, temperature: 3}\n",
            ":2: model.temperature: must be <= 2.0, got 3",
        ),
        (
            "name: a\nmodel: {provider: openai, name: gpt-4o, deployment: x}\n",
            ":2: model.deployment: unknown key; allowed: provider, name, temperature, max_tokens, "
            "top_p, endpoint, api_key, api_version, auth_provider",
        ),
        (
            "name: a\nmodel:\n\t provider: openai\n",
            ":3: invalid YAML: while scanning for the next "
            "token, found character that cannot start any token (column 1) (a tab? YAML indents "
            "with spaces)",
        ),
        ("name: a\n1: x\n", ":2: 1: a top-level key must be a string"),
        (
            "a: 1\n---\nb: 2\n",
            ":2: invalid YAML: expected a single document in the stream, but "
            "found another document (column 1)",
        ),
    ],
)
def test_file_level_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    assert str(error_of(path)) == f"{path}{expected}"


def test_first_error_in_file_order_and_how_many_more(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        BASE
        + "tools:\n  - {name: x, type: mcp, description: d, command: npx, request_timeout: -1}\n"
        "tool_filtering:\n  top_k: 0\n  similarity_threshold: 2\n"
    )
    assert str(error_of(path)) == (
        f"{path}:5: tools[0].request_timeout: must be > 0, got -1 (and 2 more problems)"
    )


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert str(error_of(tmp_path / "absent.yaml")) == f"{tmp_path / 'absent.yaml'}: no such file"
    assert str(error_of(tmp_path)) == f"{tmp_path}: is a directory, not a YAML file"


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(b"name: a\ndescription: caf\xe9\n")
    assert str(error_of(path)) == (
        f"{path}:2: not UTF-8 text (byte 0xe9); HoloDeck reads YAML files as UTF-8"
    )


def test_lines_stay_right_when_a_value_holds_newlines(tmp_path: Path) -> None:
    """A substituted value with a newline adds lines to the parsed text, not to the file."""
    path = tmp_path / "agent.yaml"
    path.write_text(
        'name: a\ndescription: "${TWO_LINES}"\nmodel: {provider: openai, name: gpt-4o}\n'
        "instructions: {inline: hi}\ntool_filtering:\n  top_k: 51\n"
    )
    err = error_of(path, environ={"TWO_LINES": "one\n\n\ntwo"})
    assert (err.line, err.field) == (6, "tool_filtering.top_k")


def test_a_misspelled_top_level_key_is_an_error_with_the_known_one(tmp_path: Path) -> None:
    """HoloDeck's Agent forbids unknown keys: the file does not load there, and here the tuning
    would have taken HoloDeck's defaults for the block the user meant to write."""
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
        "tool_filterring:\n  top_k: 3\nmisc: 1\n"
    )
    message = str(error_of(path))
    assert message == (
        f"{path}:4: tool_filterring: unknown key (did you mean 'tool_filtering'?); HoloDeck "
        "refuses a file with a key its agent schema lacks (and 1 more problem)"
    )
    path.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\nmisc: 1\n"
    )
    assert str(error_of(path)) == (
        f"{path}:4: misc: unknown key; HoloDeck refuses a file with a key its agent schema lacks"
    )


def test_a_missing_required_key_is_said_at_the_key_that_looks_like_it(tmp_path: Path) -> None:
    """``modle:`` used to be only "model: required key is missing" at line 1."""
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\nmodle:\n  provider: openai\n  name: gpt-4o\ninstructions: {inline: hi}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_agent(path, environ={}, dotenv_files=[], global_configs=[])
    assert (
        caught.value.one_line() == f"{path}:2: modle: is this model, misspelled? model is required"
    )
    path.write_text("name: a\ninstructions: {inline: hi}\n")  # nothing like it: as before
    with pytest.raises(ConfigError, match=r"model: required key is missing$"):
        load_agent(path, environ={}, dotenv_files=[], global_configs=[])


SAMPLE = Path(__file__).resolve().parents[1] / "sample_configs" / "research-agent.yaml"


@pytest.mark.parametrize(
    "argv",
    [
        ["tools"],
        ["snapshot", "-o", "OUT"],
        ["search", "find papers on retrieval"],
        ["export"],
        ["apply", "--dry-run"],
        ["eval"],
        ["tune"],
        ["check"],
        ["compare"],
        ["cases", "generate"],
    ],
)
def test_every_command_refuses_a_misspelled_tool_filtering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """The research agent with ``tool_filtring:``: search used to warn and tune the defaults,
    check to report it next to findings about a block it did not have."""
    from workbench.cli import main

    agent = tmp_path / "research-agent.yaml"
    text = SAMPLE.read_text()
    agent.write_text(text.replace("\ntool_filtering:", "\ntool_filtring:"))
    line = text[: text.index("\ntool_filtering:")].count("\n") + 2
    args = [str(tmp_path / "out.json") if a == "OUT" else a for a in argv]
    command = args[:2] if args[0] == "cases" else args[:1]
    assert main([*command, str(agent), *args[len(command) :]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"holo-tune: error: {agent}:{line}: tool_filtring: unknown key (did you mean "
        "'tool_filtering'?); HoloDeck refuses a file with a key its agent schema lacks\n"
    )
