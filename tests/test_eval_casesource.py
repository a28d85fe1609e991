"""The one default cases path: --cases, the agent's test_cases, <agent stem>.cases.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import load_agent
from workbench.errors import CasesError, InputError
from workbench.evaluate.casesource import (
    default_cases_path,
    default_source,
    find_cases_source,
    resolve_cases_source,
)

AGENT = "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
OWN = "test_cases:\n  - input: mail Bob\n    expected_tools: [send_email]\n"
BESIDE = "cases:\n  - query: read notes\n    expected: [read_file]\n    source: labelled\n"


def _agent(tmp_path: Path, text: str = AGENT) -> Path:
    path = tmp_path / "my-agent.yaml"
    path.write_text(text)
    return path


def test_default_cases_path() -> None:
    assert default_cases_path("x/research-agent.yaml") == Path("x/research-agent.cases.yaml")


def test_the_order(tmp_path: Path) -> None:
    path = _agent(tmp_path)
    agent = load_agent(path, environ={})
    assert find_cases_source(agent) is None and default_source(agent) is None
    with pytest.raises(InputError, match=r"no cases: pass --cases FILE.*my-agent\.cases\.yaml"):
        resolve_cases_source(agent)
    (tmp_path / "cases.jsonl").write_text('{"query": "q", "expected": ["t"]}\n')
    source, cases = resolve_cases_source(agent)  # the data-set layout, last
    assert source.kind == "dataset" and [c.query for c in cases] == ["q"]
    (tmp_path / "my-agent.cases.yaml").write_text(BESIDE)
    source, cases = resolve_cases_source(agent)
    assert (source.kind, source.path) == ("beside", tmp_path / "my-agent.cases.yaml")
    assert cases[0].origin == "labelled" and "(beside the agent)" in source.describe()
    agent = load_agent(_agent(tmp_path, AGENT + OWN), environ={})
    source, cases = resolve_cases_source(agent)
    assert source.kind == "agent" and cases[0].expected == ("send_email",)
    assert default_source(agent) == source
    given = tmp_path / "given.yaml"
    with pytest.raises(CasesError, match="no such file"):
        resolve_cases_source(agent, given)  # --cases is read as given, even when missing
    given.write_text(BESIDE)
    source, _ = resolve_cases_source(agent, given)
    assert source.kind == "flag" and source.to_json() == {"kind": "flag", "path": str(given)}
