"""Figures the runtime can deliver (search/delivery.py): with no embedding service at run time,
HoloDeck's semantic and hybrid are BM25 whatever ``--embedder`` scores them with, so ``eval``
measures BM25 and says so, the fronts offer only bm25, and ``apply`` says what will run.

The MCP-only agent is the livemcpbench slice (156 tools, 53 cases); the agent with a
vectorstore tool is the research sample. The embedder is the real all-MiniLM-L6-v2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from provided import LOCAL_EXTRA

from workbench.cli import main
from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.evaluate.fronts import defaults_tokens
from workbench.evaluate.metrics import evaluate
from workbench.runtimes import all_runtimes
from workbench.runtimes.compare import runtime_row
from workbench.workspace import open_workspace

REPO = Path(__file__).resolve().parents[1]
SLICE = REPO / "tests" / "data" / "livemcpbench_slice"
SAMPLES = REPO / "sample_configs"
MINILM = "local:all-MiniLM-L6-v2"


def _eval(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    assert main(["eval", *argv]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def _slice(*more: str) -> list[str]:
    return [
        str(SLICE / "agent.yaml"),
        "--catalog",
        str(SLICE / "catalog.json"),
        "--cases",
        str(SLICE / "cases.jsonl"),
        *more,
    ]


@LOCAL_EXTRA
@pytest.mark.parametrize("method", ["semantic", "hybrid"])
def test_eval_on_an_mcp_only_agent_measures_what_runs_and_says_why(
    capsys: pytest.CaptureFixture[str], method: str
) -> None:
    """The local model's scores are not what HoloDeck runs here: the figures are BM25's (the
    same as with no embedder at all), and the text and --json say so."""
    runs, _ = _eval(capsys, *_slice("--method", method, "--embedder", "none", "--json"))
    asked, _ = _eval(capsys, *_slice("--method", method, "--embedder", MINILM, "--json"))
    data = json.loads(asked)
    assert data["metrics"] == json.loads(runs)["metrics"]
    assert data["setting"]["search_method"] == method
    seen = data["measured_as"]
    assert (seen["asked"], seen["measured"], seen["runs"]) == (method, "bm25", "bm25")
    assert "no vectorstore or hierarchical_document tool" in seen["why"]
    assert MINILM in seen["why"]
    text, _ = _eval(capsys, *_slice("--method", method, "--embedder", MINILM))
    notes = [line for line in text.splitlines() if line.startswith("note ")]
    assert len(notes) == 1
    assert f"{method} measured as bm25, as the runtime runs it: no embedding service" in notes[0]
    recall = data["metrics"]["recall"]
    assert f"recall {recall:.3f}" in text


@LOCAL_EXTRA
def test_eval_with_a_vectorstore_tool_still_measures_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No regression: the research agent has a vectorstore tool, so HoloDeck embeds and the
    local model's semantic figures are measured (they differ from BM25's)."""
    argv = [str(SAMPLES / "research-agent.yaml"), "--catalog"]
    argv += [str(SAMPLES / "research-agent.catalog.json"), "--method", "semantic", "--json"]
    bm25 = json.loads(_eval(capsys, *argv, "--embedder", "none")[0])
    model = json.loads(_eval(capsys, *argv, "--embedder", MINILM)[0])
    assert model["measured_as"] == {
        "asked": "semantic",
        "measured": "semantic",
        "runs": "semantic",
        "why": None,
    }
    assert model["metrics"] != bm25["metrics"]
    # without an embedder here, what was measured is not what runs, and it says why
    assert bm25["measured_as"]["measured"] == "bm25" and bm25["measured_as"]["runs"] == "semantic"


@LOCAL_EXTRA
def test_the_block_runtimes_front_offers_only_what_runs() -> None:
    """``compare --runtimes``' holodeck-0.6 row (every point of its front) and the table's
    "HoloDeck's defaults" budget, with the local model on the MCP-only agent: bm25 and BM25's
    figures. The research agent (a vectorstore tool) keeps all three methods."""
    ws = open_workspace(SLICE / "agent.yaml", catalog_file=SLICE / "catalog.json",
                        embedder_spec=MINILM)  # fmt: skip
    assert ws.embedder.embedder is not None and ws.embedder.runtime == "none"
    cases = resolve_cases(load_cases(SLICE / "cases.jsonl"), ws.catalog)
    block = next(r for r in all_runtimes() if r.reads_tool_filtering)
    for budget in (None, 200, 800):
        row = runtime_row(block, ws, cases, budget)
        assert row.params["search_method"] == "bm25", (budget, row.setting)
    from workbench.search.delivery import runtime_engine, runtime_methods

    as_run = runtime_engine(ws.engine, ws.agent.agent)
    assert as_run is not ws.engine and as_run.embedder is None
    default = evaluate(as_run, ws.catalog, ws.tokens, cases, ToolFiltering(enabled=True))
    found = defaults_tokens(ws.engine, ws.agent, ws.catalog, ws.tokens, cases)
    assert found == default.metrics.tokens_selected_mean
    assert runtime_methods(ws.agent.agent) == ("bm25",)
    research = open_workspace(SAMPLES / "research-agent.yaml", embedder_spec=MINILM,
                              catalog_file=SAMPLES / "research-agent.catalog.json")  # fmt: skip
    assert runtime_methods(research.agent.agent) == ("semantic", "bm25", "hybrid")
    assert runtime_engine(research.engine, research.agent.agent) is research.engine


def _copy(source: Path, tmp_path: Path) -> Path:
    agent = tmp_path / source.name
    shutil.copyfile(source, agent)
    return agent


@pytest.mark.parametrize("method", ["semantic", "hybrid"])
def test_apply_says_what_will_really_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], method: str
) -> None:
    """The block is written as asked (a vectorstore tool added later makes it run), with one
    warning line on stderr saying that HoloDeck runs BM25 and why."""
    agent = _copy(SLICE / "agent.yaml", tmp_path)
    assert main(["apply", str(agent), "--method", method]) == 0
    out = capsys.readouterr()
    assert f"+  search_method: {method}" in out.out
    warned = [line for line in out.err.splitlines() if "will run as" in line]
    assert warned == [
        f"holo-tune: warning: search_method {method} will run as bm25: no embedding service at "
        "run time (no vectorstore or hierarchical_document tool): HoloDeck's semantic and "
        "hybrid are BM25; written as asked"
    ]
    assert f"search_method: {method}" in agent.read_text()


def test_apply_of_what_runs_says_nothing_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bm25 on the MCP-only agent, semantic on the agent with a vectorstore tool: no warning."""
    agent = _copy(SLICE / "agent.yaml", tmp_path)
    assert main(["apply", str(agent), "--top-k", "7", "--dry-run"]) == 0
    assert "will run as" not in capsys.readouterr().err
    research = _copy(SAMPLES / "research-agent.yaml", tmp_path)
    assert main(["apply", str(research), "--method", "semantic", "--dry-run"]) == 0
    assert "will run as" not in capsys.readouterr().err


def test_method_run_is_the_one_rule() -> None:
    """bm25 is always what runs; semantic and hybrid by whether the runtime embeds."""
    from workbench.search.delivery import method_run

    mcp_only = load_agent(SLICE / "agent.yaml").agent
    research = load_agent(SAMPLES / "research-agent.yaml", missing_env="warn").agent
    assert method_run(mcp_only, "bm25").deliverable and method_run(mcp_only, "bm25").why is None
    got: dict[str, Any] = method_run(mcp_only, "hybrid").to_json()
    assert got["runs"] == "bm25" and not method_run(mcp_only, "semantic").deliverable
    assert method_run(research, "semantic").deliverable
    assert method_run(research, "semantic").line() is None


@LOCAL_EXTRA
def test_serve_runs_the_embedder_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """serve ranks with holo-tune's engine and the embedder it is given (the same --embedder), so
    under --runtime serve an MCP-only agent's semantic (the dense signal) is measured with the
    model, as asked."""
    tools = [
        {"name": name, "description": text, "inputSchema": {"type": "object", "properties": {}}}
        for name, text in [
            ("read_file", "Read a file from the local disk"),
            ("send_email", "Send an email message to a person"),
            ("forecast", "Get the weather forecast for a city"),
            ("convert", "Convert an amount between currencies"),
        ]
    ]
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"holo_tune_catalog": 1, "servers": {"kit": {"tools": tools}}}))
    cases = tmp_path / "cases.jsonl"
    lines = [("is it going to rain in Paris", "forecast"), ("mail Bob the notes", "send_email")]
    cases.write_text("".join(json.dumps({"query": q, "expected": [e]}) + "\n" for q, e in lines))
    argv = [str(SLICE / "agent.yaml"), "--catalog", str(catalog), "--cases", str(cases)]
    argv += ["--method", "semantic", "--threshold", "0.2", "--embedder", MINILM, "--json"]
    served = json.loads(_eval(capsys, *argv, "--runtime", "serve")[0])
    assert served["engine"] == "serve" and served["dense"] == MINILM
    assert served["setting"]["weights"]["dense"] == 1.0
    block = json.loads(_eval(capsys, *argv)[0])  # holodeck-0.6: no embedding service
    assert block["measured_as"]["measured"] == "bm25"
    assert served["per_case"] != block["per_case"]
