"""The serve tuner tunes the search method too: semantic and hybrid beside BM25 when the
workspace's embedder runs (here the local extra's model, offline), the chosen method and that
embedder written into serve's flags; with no embedder it says why and stays BM25. The tuner's
engine selects what ``holo-tune search`` (so serve) selects for each method."""

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
def test_with_an_embedder_the_method_is_tuned_and_written_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report, err = _tune(capsys, "--embedder", LOCAL)
    assert "bm25, semantic and hybrid tried" in err
    method = report["setting"]["variant"]
    assert method in ("bm25", "semantic", "hybrid")
    serve = report["serve"].split()
    assert serve[serve.index("--method") + 1] == method
    embedder = serve[serve.index("--embedder") + 1]
    assert embedder == (LOCAL if method != "bm25" else "none")
    assert {f["variant"] for f in report["folds"]} <= {"bm25", "semantic", "hybrid"}


def test_without_an_embedder_it_says_why_and_stays_bm25(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    report, err = _tune(capsys)
    assert "tuned as BM25 only" in err and "OPENAI_API_KEY" in err
    assert report["setting"]["variant"] == "bm25"
    assert "--embedder none" in report["serve"]


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
