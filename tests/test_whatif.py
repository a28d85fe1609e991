"""What-if rows: measured held-out with the tuner's own procedure, listed only outside the bars."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from provided import LOCAL_EXTRA

from workbench.cli import main
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.evaluate.metrics import evaluate
from workbench.evaluate.runs import score_methods, tune_cases
from workbench.evaluate.sweep import case_figures, fixed_tools, sweep, threshold_index
from workbench.evaluate.tuner import Budget
from workbench.evaluate.whatif import WhatIfReport, what_ifs
from workbench.search.usage import usage_array
from workbench.workspace import Workspace, open_workspace

DATA = Path(__file__).parent / "data"
SLICE = DATA / "livemcpbench_slice"

AGENT = (
    "name: whatif\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
    "tool_filtering:\n  enabled: true\n  top_k: 3\n  similarity_threshold: 0.3\n"
    "  always_include: []\n  always_include_top_n_used: {top_n}\n  search_method: bm25\n"
)
KIT: list[tuple[str, str]] = [
    ("alpha", "Read a file from the local disk"),
    ("beta", "Write text into a file on the local disk"),
    ("gamma", "Send an email message to a person"),
    ("delta", "Search the web for pages about a topic"),
    ("epsilon", "Translate text from one language into another"),
    ("eta", "Get the weather forecast for a city"),
    ("theta", "Convert an amount between currencies"),
    ("iota", "Create an event in the calendar"),
    ("kappa", "List the open issues of a repository"),
    ("lambda", "Play a song from the music library"),
    ("mu", "Book a table at a restaurant"),
    ("zeta", "Keeps the compliance ledger of every action"),
]


def _world(tmp_path: Path, *, top_n: int = 0) -> tuple[Path, Path, Path]:
    """A kit server whose ``zeta`` every case needs and no query can find by its words."""
    tools = [
        {"name": n, "description": d, "inputSchema": {"type": "object", "properties": {}}}
        for n, d in KIT
    ]
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT.format(top_n=top_n))
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"holo_tune_catalog": 1, "servers": {"kit": {"tools": tools}}}))
    lines = []
    for n in range(12):
        lines.append({"query": f"read the file notes{n}.txt", "expected": ["alpha", "zeta"]})
        lines.append({"query": f"send an email to person {n}", "expected": ["gamma", "zeta"]})
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return agent, catalog, cases


def _open(agent: Path, catalog: Path, cases: Path) -> tuple[Workspace, CaseSet]:
    ws = open_workspace(agent, catalog_file=catalog, embedder_spec="none")
    return ws, resolve_cases(load_cases(cases), ws.catalog)


#: About three of the kit's tools per request. The kit's every tool costs 225 tokens: there the
#: default budget's knee sends seven of twelve, and search ranks ``zeta`` within them by its ties
#: at score 0 (a catalog this small keeps every tool anyway: docs/runtimes.md).
KIT_BUDGET = Budget(max_tokens=60)


def _measure(
    ws: Workspace, cases: CaseSet, budget: Budget | None = None, **kw: Any
) -> WhatIfReport:
    return what_ifs(
        ws.engine,
        ws.catalog,
        ws.tokens,
        cases,
        ws.setting,
        budget or Budget(),
        agent=ws.agent.agent,
        **kw,
    )


# ---------------------------------------------------------------------- per-case figures


def test_case_figures_agree_with_the_runtime_selection_case_by_case() -> None:
    """The per-case arithmetic is the runtime's selection (evaluate), for fixed tools too."""
    d = DATA / "datasets" / "stackone"
    ws = open_workspace(d / "agent.yaml", catalog_file=d / "catalog.json", embedder_spec="none")
    cases = resolve_cases(load_cases(d / "cases.jsonl"), ws.catalog)
    scores = score_methods(ws.engine, cases, len(ws.catalog), methods=["bm25"], always_include=2)
    for setting in (
        ToolFiltering(enabled=True, search_method="bm25", top_k=7, similarity_threshold=0.27),
        ToolFiltering(
            enabled=True,
            search_method="bm25",
            top_k=4,
            similarity_threshold=0.1,
            always_include=[ws.catalog.tools[5].full_name],
            always_include_top_n_used=1,
        ),
    ):
        t = threshold_index(setting.similarity_threshold)
        assert t is not None
        rows = np.arange(len(cases))
        fixed = fixed_tools(setting, ws.catalog)
        got = case_figures(scores[0], cases, ws.tokens, fixed, setting.top_k, t, rows)
        ref = evaluate(ws.engine, ws.catalog, ws.tokens, cases, setting).per_case
        assert got.recall.tolist() == pytest.approx([r.recall for r in ref])
        assert got.hit.tolist() == [float(r.hit) for r in ref]
        assert got.tokens.tolist() == [float(r.tokens) for r in ref]
        swept = sweep(scores, cases, ws.tokens, setting, ws.catalog).metrics_of(setting)
        assert swept is not None and swept.recall == pytest.approx(got.recall.mean())


def test_the_baseline_is_the_tuners_own_heldout() -> None:
    d = DATA / "datasets" / "livemcpbench"
    ws = open_workspace(d / "agent.yaml", catalog_file=d / "catalog.json", embedder_spec="none")
    cases = resolve_cases(load_cases(d / "cases.jsonl"), ws.catalog)
    report = _measure(ws, cases)
    tuned = tune_cases(
        ws.engine, ws.catalog, ws.tokens, cases, ws.setting, Budget(), runtime_methods=("bm25",)
    )
    base, heldout = report.baseline.heldout, tuned.outcome.heldout
    assert base.recall == pytest.approx(heldout.recall, abs=1e-12)
    assert base.tokens_selected_mean == pytest.approx(heldout.tokens_selected_mean)
    assert (base.hit, base.top1) == pytest.approx((heldout.hit, heldout.top1))
    assert report.baseline.outcome.setting == tuned.outcome.setting
    # no embedder: the embedding what-if says how to measure it instead of guessing
    assert any("--embedder" in why for why in report.unmeasured)
    assert all(row.kind != "embedding" for row in report.rows)


# ------------------------------------------------------------------------------ the rows


def test_always_include_for_a_tool_search_never_reaches(tmp_path: Path) -> None:
    ws, cases = _open(*_world(tmp_path))
    report = _measure(ws, cases, KIT_BUDGET)
    (row,) = [r for r in report.rows if r.kind == "always-include"]
    assert row.evidence["tools"] == ["kit-zeta"]
    assert list(row.setting.always_include) == ["kit-zeta"]
    assert row.significant and row in report.listed
    assert row.gain == pytest.approx(row.heldout.recall - row.baseline.recall)
    assert row.heldout.recall == pytest.approx(1.0) and row.baseline.recall == pytest.approx(0.5)
    assert "kit-zeta" in row.how and "training folds" in row.how
    finding = row.finding()
    assert finding.code == "what-if-always-include" and finding.fix == row.how
    # measured by eval, the row's setting does what the row says
    assert evaluate(ws.engine, ws.catalog, ws.tokens, cases, row.setting).metrics.recall == 1.0


def test_a_warm_runtime_where_top_n_used_is_on(tmp_path: Path) -> None:
    ws, cases = _open(*_world(tmp_path, top_n=1))
    usage = usage_array({"kit-zeta": 40, "kit-alpha": 3}, ws.catalog, source="usage.json")
    report = _measure(ws, cases, usage=usage)
    warm = next(r for r in report.rows if r.kind == "warm-runtime")
    assert warm.significant and warm.heldout.recall == pytest.approx(1.0)
    assert warm.setting.always_include_top_n_used == 1
    assert "restart" in warm.how
    gains = [r.gain for r in report.rows]
    assert gains == sorted(gains, reverse=True)
    # cold (no usage file) or top_n_used off: no such row
    assert all(r.kind != "warm-runtime" for r in _measure(ws, cases).rows)
    off = tmp_path / "off"
    off.mkdir()
    ws0, cases0 = _open(*_world(off))
    assert all(r.kind != "warm-runtime" for r in _measure(ws0, cases0, usage=usage).rows)


def test_a_gain_inside_the_error_bars_is_not_listed(tmp_path: Path) -> None:
    """One case of 24 gains: the interval reaches zero, so JSON leaves the row out."""
    agent, catalog, cases_file = _world(tmp_path)
    lines = [json.loads(line) for line in cases_file.read_text().splitlines()]
    for n, line in enumerate(lines):
        line["expected"] = [e for e in line["expected"] if e != "zeta" or n < 2]
    cases_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    ws, cases = _open(agent, catalog, cases_file)
    report = _measure(ws, cases, KIT_BUDGET)
    assert report.rows and not report.listed and report.to_json() == []
    assert all(r.interval[0] <= 0 for r in report.rows)


def test_tune_and_check_cli_print_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent, catalog, cases = _world(tmp_path, top_n=1)
    usage = tmp_path / "usage.json"
    usage.write_text(json.dumps({"kit-zeta": 40}))
    argv = [str(agent), "--catalog", str(catalog), "--cases", str(cases), "--usage", str(usage)]
    assert main(["tune", *argv, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["what_if"]
    assert {r["kind"] for r in rows} == {"warm-runtime", "always-include"}
    for row in rows:
        assert {"change", "how", "setting", "heldout"} <= set(row)
        assert row["gain"]["ci95"][0] > 0 and row["heldout"]["recall"] == pytest.approx(1.0)
    gains = [r["gain"]["recall"] for r in rows]
    assert gains == sorted(gains, reverse=True)
    assert main(["tune", *argv]) == 0
    out = capsys.readouterr().out
    assert "what-if" in out and "kit-zeta" in out and "95% CI" in out
    assert main(["tune", *argv, "--json", "--no-what-if"]) == 0
    assert "what_if" not in json.loads(capsys.readouterr().out)
    assert main(["check", *argv, "--json"]) == 0
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["what-if-always-include"]["fix"].startswith("add to always_include: kit-zeta")
    assert found["what-if-warm-runtime"]["severity"] == "info"
    assert "unreachable-tools" not in found  # warm, top_n_used sends zeta to every case
    assert main(["check", *argv[:-2], "--json", "--no-what-if"]) == 0
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["unreachable-tools"]["evidence"]["tools"][0] == {
        "tool": "kit-zeta",
        "cases": 24,
        "queries": [
            "read the file notes0.txt",
            "send an email to person 0",
            "read the file notes1.txt",
        ],
        "tokens": int(
            open_workspace(agent, catalog_file=catalog, embedder_spec="none").tokens.per_tool[-1]
        ),
    }
    assert not any(code.startswith("what-if") for code in found)


@LOCAL_EXTRA
def test_an_mcp_only_agent_gains_from_an_embedding_service(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The livemcpbench slice with the real all-MiniLM-L6-v2: a held-out gain outside the bars,
    and the row says what to add to the agent and that the threshold must be re-tuned."""
    argv = [
        "tune",
        str(SLICE / "agent.yaml"),
        "--catalog",
        str(SLICE / "catalog.json"),
        "--cases",
        str(SLICE / "cases.jsonl"),
        "--embedder",
        "local:all-MiniLM-L6-v2",
        "--json",
    ]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    row = next(r for r in data["what_if"] if r["kind"] == "embedding")
    assert row["change"] == "with an embedding service"
    assert row["gain"]["ci95"][0] > 0
    assert row["heldout"]["recall"] > data["heldout"]["recall"] + 0.05
    assert row["setting"]["search_method"] in ("semantic", "hybrid")
    assert data["setting"]["search_method"] == "bm25"  # the proposal stays what runs today
    # only the embedding row names a method that needs the change: every other point runs today
    assert {p["setting"]["search_method"] for p in data["front"]} == {"bm25"}
    assert all(r["setting"]["search_method"] == "bm25" for r in data["what_if"] if r is not row)
    how = row["how"]
    assert "vectorstore" in how and "re-tune the threshold" in how
    assert "local:all-MiniLM-L6-v2" in how and "openai:text-embedding-3-small" in how
