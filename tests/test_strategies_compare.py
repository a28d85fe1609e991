"""``holo-tune compare``: the choice rule, the per-case figures and the command on a data set."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from workbench.cli import main
from workbench.evaluate.cases import Case, CaseSet, ResolvedCase, load_cases, resolve_cases
from workbench.evaluate.compare import case_result, choose, compare, stages
from workbench.evaluate.metrics import score_case
from workbench.evaluate.tuner import Budget
from workbench.search.strategies import ENGINES, build_strategy
from workbench.search.strategies.base import StrategyResult
from workbench.search.types import Ranking
from workbench.workspace import open_workspace

DATASETS = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets"


def test_choose_is_the_tuners_knee_rule() -> None:
    budget = Budget()  # at most 30 % of all tokens, then within 0.02 of the best recall
    recall = np.array([0.90, 0.89, 0.95, 0.99])
    tokens = np.array([100.0, 50.0, 200.0, 9000.0])
    assert choose(recall, tokens, 10_000, budget) == 2  # 0.99 costs too much; 0.90 is too far
    recall = np.array([0.90, 0.94, 0.95])
    assert choose(recall, tokens[:3], 10_000, budget) == 1  # within 0.02 of 0.95 and cheaper
    assert choose(recall, np.array([5000.0, 4000.0, 4000.0]), 10_000, budget) == 1  # none fits
    tight = Budget(max_tokens=150)  # an explicit budget: ties only (0.001)
    assert choose(np.array([0.90, 0.90, 0.95]), tokens[:3], 10_000, tight) == 1


def test_case_result_follows_the_metrics_rules() -> None:
    case = ResolvedCase(
        case=Case(query="q", expected=("a", "b")), names=("a", "b"), groups=((3,), (1, 4))
    )
    order = np.array([2, 4, 0, 3], dtype=np.int64)
    result = StrategyResult(
        query="q",
        engine="x",
        order=order,
        scores=np.zeros(5),
        sent=(2, 4),
        meta_tokens=7,
        tokens=42,
    )
    mine = case_result(case, result)
    ranking = Ranking("q", "bm25", "bm25", np.zeros(5), order)

    class Tokens:
        per_tool = np.ones(5, dtype=np.int64)
        overhead = 0
        all = 5

    theirs = score_case(case, ranking, (2, 4), Tokens())
    assert (mine.sent, mine.top1, mine.rank_of_first) == (
        theirs.sent,
        theirs.top1,
        theirs.rank_of_first,
    )
    assert mine.sent == (False, True) and mine.rank_of_first == 2 and not mine.top1
    assert mine.tokens == 42  # the engine's own bill, meta tools included


@pytest.mark.skipif(not (DATASETS / "stackone").is_dir(), reason="data sets not present")
def test_compare_command_on_a_data_set(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    folder = DATASETS / "stackone"
    lines = (folder / "cases.jsonl").read_text().splitlines()[::10]
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("\n".join(lines) + "\n")
    args = [
        "compare",
        str(folder / "agent.yaml"),
        "--catalog",
        str(folder / "catalog.json"),
        "--cases",
        str(cases_file),
        "--embedder",
        "none",
    ]
    assert main([*args, "--json"]) == 0
    report = json.loads(capfd.readouterr().out)
    assert report["cases"] == len(lines)
    rows = {(r["engine"], r["setting"]): r for r in report["rows"]}
    assert {"holodeck"} | set(ENGINES) == {engine for engine, _ in rows}
    for engine in ("holodeck", "stackone", "argus", "pizzapi", "anthropic"):
        assert rows[(engine, "best")]["heldout"] is True
        assert rows[(engine, "default")]["heldout"] is False
    assert rows[("toolkits", "default")]["note"].startswith("no embedder")
    assert rows[("holodeck", "default")]["note"] == "semantic is bm25 here (the runtime's fallback)"
    assert rows[("holodeck", "agent")]["note"] is None  # the data set's block says bm25
    # The stackone default row, recomputed here straight from the engine.
    ws = open_workspace(folder / "agent.yaml", catalog_file=folder / "catalog.json")
    resolved = resolve_cases(list(itertools.islice(load_cases(cases_file), None)), ws.catalog)
    strategy = build_strategy("stackone", ws.catalog, ws.tokens)
    results = [strategy.run(c.query) for c in resolved.cases]
    hit = np.mean(
        [
            any(i in r.sent for g in c.groups for i in g)
            for c, r in zip(resolved.cases, results, strict=True)
        ]
    )
    tokens = np.mean([r.tokens for r in results])
    metrics = rows[("stackone", "default")]["metrics"]
    assert metrics["hit"] == pytest.approx(hit)
    assert metrics["tokens_selected_mean"] == pytest.approx(tokens)
    assert metrics["tokens_all"] == report["tokens"]["all"] == ws.tokens.all
    # Points for the recall/tokens plot: every grid point, HoloDeck's front (cheapest first).
    points = report["points"]
    so = [p for p in points if p["engine"] == "stackone"]
    assert len(so) == 88
    at_default = next(p for p in so if p["params"] == rows[("stackone", "default")]["params"])
    assert at_default["recall"] == pytest.approx(metrics["recall"])
    assert at_default["tokens_selected_mean"] == pytest.approx(tokens)
    front = [p for p in points if p["engine"] == "holodeck"]
    assert front and [p["recall"] for p in front] == sorted(p["recall"] for p in front)
    assert main(args) == 0
    text = capfd.readouterr().out
    assert "stackone   default" in text and "held-out" in text


@pytest.mark.skipif(not (DATASETS / "stackone").is_dir(), reason="data sets not present")
def test_compare_with_fewer_cases_than_folds_has_no_best_rows(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    folder = DATASETS / "stackone"
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("\n".join((folder / "cases.jsonl").read_text().splitlines()[:3]) + "\n")
    args = ["compare", str(folder / "agent.yaml"), "--catalog", str(folder / "catalog.json")]
    assert main([*args, "--cases", str(cases_file), "--embedder", "none"]) == 0
    text = capfd.readouterr().out
    assert "no best settings: they need at least 5 cases" in text
    assert "best" not in text.replace("no best settings", "")


@pytest.mark.skipif(not (DATASETS / "stackone").is_dir(), reason="data sets not present")
def test_compare_reports_progress_over_every_pass() -> None:
    folder = DATASETS / "stackone"
    ws = open_workspace(folder / "agent.yaml", catalog_file=folder / "catalog.json")
    cases = resolve_cases(load_cases(folder / "cases.jsonl"), ws.catalog)
    small = CaseSet(cases=cases.cases[::25])
    seen: list[tuple[int, int]] = []
    started: list[str] = []
    report = compare(
        ws, small, on_progress=lambda d, t: seen.append((d, t)), on_engine=started.append
    )
    assert started == stages() == ["holodeck", *ENGINES[:4], "anthropic (regex)", *ENGINES[4:]]
    total = len(stages()) * len(small)
    assert {t for _, t in seen} == {total}
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (total, total)
    assert report == compare(ws, small)  # the callbacks change nothing

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        if done > len(small):
            raise Stop

    with pytest.raises(Stop):  # raising from the callback stops the run
        compare(ws, small, on_progress=stop)


RESEARCH_CASES = (
    "cases:\n"
    "  - {query: find papers on transformers, expected: [search_papers]}\n"
    "  - {query: search the web for news about AI, expected: [brave_news_search]}\n"
    "  - {query: remember that Alice wrote the paper, expected: [create_entities]}\n"
    "  - {query: look up images of cats, expected: [brave_image_search]}\n"
    "  - {query: what do you remember about Bob, expected: [search_nodes]}\n"
    "  - {query: local pizza places nearby, expected: [brave_local_search]}\n"
)


@pytest.mark.parametrize("command", ["tune", "compare"])
def test_no_local_embedder_is_not_the_runtimes_fallback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """The research agent has a vectorstore tool, so HoloDeck embeds at run time; only holo-tune
    cannot score semantic here without the key. The notes say that, and what to do."""
    for name in ("OPENAI_API_KEY", "HOLO_TUNE_EMBEDDER", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    samples = Path(__file__).resolve().parents[1] / "sample_configs"
    cases = tmp_path / "cases.yaml"
    cases.write_text(RESEARCH_CASES)
    argv = [
        command,
        str(samples / "research-agent.yaml"),
        "--catalog",
        str(samples / "research-agent.catalog.json"),
        "--cases",
        str(cases),
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    shown = captured.out + captured.err
    assert "come from none" not in shown
    assert "run as BM25 at run time" not in shown and "runtime's fallback" not in shown
    assert "holo-tune cannot embed here without OPENAI_API_KEY" in shown
    assert "HoloDeck embeds with openai:text-embedding-3-small at run time" in shown
    assert "--embedder local:all-MiniLM-L6-v2" in shown and "does not transfer" in shown
    if command == "tune":
        assert "could not be scored here as HoloDeck scores them" in shown
