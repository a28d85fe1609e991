"""The sample agents carry evidence: a hand-labelled cases file beside each, read by default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.evaluate import load_cases

SAMPLES = Path(__file__).resolve().parent.parent / "sample_configs"


@pytest.mark.parametrize("agent", ["research-agent", "python-servers"])
def test_eval_without_cases_reads_the_samples_own_file(
    agent: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")
    argv = [
        "eval",
        str(SAMPLES / f"{agent}.yaml"),
        "--catalog",
        str(SAMPLES / f"{agent}.catalog.json"),
    ]
    assert main([*argv, "--embedder", "none", "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["cases"] >= 30
    assert data["cases_source"] == {"kind": "beside", "path": str(SAMPLES / f"{agent}.cases.yaml")}
    for name in ("hit", "recall", "top1", "mrr"):
        low, high = data["ci95"][name]
        assert 0.0 <= low <= data["metrics"][name] <= high <= 1.0
    # every expected name is a tool of the catalog: nothing unknown, nothing skipped
    assert "unknown expected tool" not in captured.err and "skipped" not in captured.err


@pytest.mark.parametrize("agent", ["research-agent", "python-servers"])
def test_the_samples_cases_are_varied(agent: str) -> None:
    cases = load_cases(SAMPLES / f"{agent}.cases.yaml")
    assert len({c.query for c in cases}) == len(cases) >= 30
    assert sum(len(c.expected) > 1 for c in cases) >= 3  # some need two tools
    assert sum(not c.query.isascii() for c in cases) >= 3  # some in other languages
    assert {c.origin for c in cases} == {"labelled"}
