"""``test_cases_file``: the agent's test cases read from another file, as HoloDeck's loader does."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import AgentConfig, load_agent
from workbench.errors import ConfigError

AGENT = "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"


def write(tmp_path: Path, cases: str, ref: str = "cases.yaml", extra: str = "") -> Path:
    (tmp_path / "cases.yaml").write_text(cases)
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT + f"test_cases_file: {ref}\n" + extra)
    return agent


def load(path: Path, environ: dict[str, str] | None = None) -> AgentConfig:
    return load_agent(path, environ=environ or {}, dotenv_files=[], global_configs=[])


def error(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load(path)
    return str(caught.value)


def test_a_list_of_cases_relative_to_the_agent(tmp_path: Path) -> None:
    agent = write(tmp_path, "- input: q1\n  expected_tools: [a]\n- input: ${Q2}\n")
    config = load(agent, {"Q2": "second"})
    assert [c.input for c in config.test_cases] == ["q1", "second"]
    assert config.cases_file is not None and config.cases_file.path == tmp_path / "cases.yaml"
    assert config.cases_file.lines[("test_cases", 1, "input")] == 3
    # The agent's own data is what its file holds.
    assert "test_cases" not in config.data and config.data["test_cases_file"] == "cases.yaml"


def test_a_mapping_with_test_cases_and_an_empty_file(tmp_path: Path) -> None:
    agent = write(tmp_path, "test_cases:\n  - input: q\n")
    assert [c.input for c in load(agent).test_cases] == ["q"]
    agent = write(tmp_path, "# nothing yet\n")
    config = load(agent)
    assert config.test_cases == [] and config.cases_file is not None


def test_errors_in_the_cases_name_the_cases_file(tmp_path: Path) -> None:
    agent = write(tmp_path, "- input: q\n- input: r\n  expected_tools: [{name: a, count: 0}]\n")
    assert error(agent) == (
        f"{tmp_path / 'cases.yaml'}:3: test_cases[1].expected_tools[0].count: must be >= 1, got 0"
    )
    agent = write(tmp_path, "test_cases:\n  - inputs: q\n")
    assert error(agent).startswith(
        f"{tmp_path / 'cases.yaml'}:2: test_cases[0].inputs: unknown key"
    )
    agent = write(tmp_path, "- [\n")
    assert error(agent).startswith(f"{tmp_path / 'cases.yaml'}:1: invalid YAML: ")
    agent = write(tmp_path, "just text\n")
    assert error(agent) == (
        f"{tmp_path / 'cases.yaml'}:1: test_cases: a cases file holds a list of test cases "
        "(or test_cases:)"
    )


def test_reference_errors_name_the_agent_line(tmp_path: Path) -> None:
    agent = write(tmp_path, "- input: q\n", extra="test_cases: []\n")
    assert (
        error(agent) == f"{agent}:4: test_cases_file: give test_cases or test_cases_file, not both"
    )
    agent = write(tmp_path, "- input: q\n", ref="absent.yaml")
    assert error(agent) == f"{agent}:4: test_cases_file: no such file: {tmp_path / 'absent.yaml'}"
    agent = write(tmp_path, "- input: q\n", ref="''")
    assert error(agent) == f"{agent}:4: test_cases_file: must be a non-empty path"
