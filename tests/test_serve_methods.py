"""The serve tuner tries the dense signals when the workspace's embedder runs (here the local
extra's model, offline) and names that embedder in the settings; with no embedder it says why
and fits the lexical signals only. The tuner's engine selects what ``holo-tune search`` (so
serve) selects for each of HoloDeck's methods, kept as flags for older ``.mcp.json`` files."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from provided import LOCAL_EXTRA
from serve_client import REPO, Expected

from workbench.cli import main
from workbench.runtimes.serve import ServeSearch

AGENT = REPO / "sample_configs" / "research-agent.yaml"
CATALOG = REPO / "sample_configs" / "research-agent.catalog.json"
CASES = REPO / "sample_configs" / "research-agent.cases.yaml"
LOCAL = "local:all-MiniLM-L6-v2"


def _tune(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[dict[str, Any], str]:
    argv = ["tune", str(AGENT), "--runtime", "serve", "--catalog", str(CATALOG)]
    assert main([*argv, "--cases", str(CASES), "--json", *extra]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@LOCAL_EXTRA
def test_with_an_embedder_the_dense_signals_are_tried_and_the_settings_name_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report, err = _tune(capsys, "--embedder", LOCAL)
    assert "the dense signals tried, with the embedder local:all-MiniLM-L6-v2" in err
    assert report["settings"]["embedder"] == LOCAL  # serve scores with what was measured
    tried = {s["signal"] for s in report["fit"]["signals"] if s["lift"] is not None}
    chosen = {k for f in report["fit"]["fold_settings"] for k, v in f["weights"].items() if v}
    assert {"dense", "server_text"} & (tried | chosen)  # measured, kept or left out


def test_without_an_embedder_it_says_why_and_fits_no_dense_signal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    report, err = _tune(capsys)
    assert "fitted without the dense signals" in err and "OPENAI_API_KEY" in err
    assert report["settings"]["embedder"] is None
    assert report["settings"]["weights"]["dense"] == 0.0
    assert report["settings"]["weights"]["server_text"] == 0.0


@LOCAL_EXTRA
@pytest.mark.parametrize("method", ["semantic", "hybrid", "bm25"])
def test_the_tuners_engine_selects_what_search_selects(method: str) -> None:
    flags = ["--method", method, "--top-k", "3", "--threshold", "0", "--no-always-include"]
    flags += ["--top-n-used", "0", "--embedder", LOCAL, "--catalog", str(CATALOG)]
    expected = Expected(AGENT, *flags)
    ws = expected.workspace
    engine = ServeSearch(ws.catalog, ws.tokens, 3, (), method, ws.engine)
    for case in yaml.safe_load(CASES.read_text())["cases"]:
        names = [ws.catalog.tools[i].full_name for i in engine.run(case["query"]).sent]
        assert names == expected(case["query"])
