"""``compare --runtimes`` and its error bars: every runtime tuned and measured held-out on the
same cases (the stackone data set's copy, the real tokenizer), with 95 % intervals (tested in
test_eval_intervals)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, cast

import pytest
from once import runtimes_once

from workbench.cli import main
from workbench.commands import compare_runtimes as command

STACKONE = Path(__file__).resolve().parent / "data" / "datasets" / "stackone"


def _compare(*extra: str) -> list[str]:
    return [
        "compare",
        str(STACKONE / "agent.yaml"),
        "--catalog",
        str(STACKONE / "catalog.json"),
        "--cases",
        str(STACKONE / "cases.jsonl"),
        "--embedder",
        "none",
        "--runtimes",
        *extra,
    ]


@pytest.fixture(scope="module", autouse=True)
def _each_comparison_once() -> Iterator[None]:
    """The JSON and the text of ``compare --runtimes`` with no budget are two renderings of one
    comparison (the same cases, folds and runtimes): it is computed once for this file (each
    budget's is its own, computed in full)."""
    with runtimes_once(command):
        yield


@pytest.fixture(scope="module")
def no_budget() -> dict[str, Any]:
    """``compare --runtimes --json`` with no budget (the knees, the fronts, the table)."""
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(_compare("--json")) == 0
    return cast("dict[str, Any]", json.loads(out.getvalue()))


def test_compare_runtimes_json_has_every_runtime_with_error_bars(
    no_budget: dict[str, Any],
) -> None:
    data = no_budget
    rows = {r["runtime"]: r for r in data["rows"]}
    assert list(rows) == [
        "holodeck-0.6",
        "holodeck-0.7",
        "anthropic",
        "claude-code",
        "openai",
        "argus",
        "pizzapi",
        "fastmcp",
        "serve",
    ]
    for row in rows.values():
        figures, ci = row["heldout"], row["ci95"]
        for key, value in (("hit", "hit"), ("recall", "recall"), ("tokens", "tokens_mean")):
            assert ci[key][0] <= figures[value] + 1e-9 and figures[value] <= ci[key][1] + 1e-9
        assert 0 < figures["tokens_mean"] < data["tokens_all"]
    for name in ("anthropic", "claude-code", "openai"):
        assert "approximation" in rows[name]["note"]
    assert "argus-mcp 0.8.6's own (exact)" in rows["argus"]["note"]
    assert "no test runs PizzaPi itself" in rows["pizzapi"]["note"]
    assert "FastMCP 4.1.6's own (exact)" in rows["fastmcp"]["note"]


def test_the_06_row_is_tunes_own_held_out_figure(
    capsys: pytest.CaptureFixture[str], no_budget: dict[str, Any]
) -> None:
    """The per-case figures re-measured fold by fold pool to what tune reports held-out."""
    row = no_budget["rows"][0]
    assert main(["tune", *_compare()[1:-1], "--runtime", "holodeck-0.6", "--json"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert row["heldout"]["recall"] == pytest.approx(tuned["heldout"]["recall"], abs=1e-9)
    assert row["heldout"]["hit"] == pytest.approx(tuned["heldout"]["hit"], abs=1e-9)


def test_each_set_keeping_row_carries_the_bar_tune_proposes_at(
    capsys: pytest.CaptureFixture[str], no_budget: dict[str, Any]
) -> None:
    """A row's ``recurrence`` is its tuner's (the bar ``tune --json`` reports on the same
    cases); a runtime that keeps no set has none."""
    rows = {r["runtime"]: r for r in no_budget["rows"]}
    assert rows["holodeck-0.6"]["recurrence"] is None
    for name in ("holodeck-0.7", "anthropic", "pizzapi"):
        assert main(["tune", *_compare()[1:-1], "--runtime", name, "--json"]) == 0
        tuned = json.loads(capsys.readouterr().out)
        assert rows[name]["recurrence"] == tuned["recurrence"], name
        assert rows[name]["recurrence"]["bar"] in (2, 3, 5)


def test_compare_runtimes_text_has_the_table_and_one_plot(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a budget, one point per runtime with its error bar (without: the fronts, below)."""
    assert main(_compare("--max-tokens", "2000")) == 0
    out = capsys.readouterr().out
    assert "hit (95% CI)" in out and "Wilson" in out and "bootstrap" in out
    for mark in (
        "6 holodeck-0.6",
        "7 holodeck-0.7",
        "A anthropic",
        "C claude-code",
        "O openai",
        "R argus",
        "P pizzapi",
        "F fastmcp",
        "S serve",
    ):
        assert mark in out
    assert out.count("tokens per task (mean)") == 1
    assert "takes two requests (the search, then the call)" in out
    header = next(line for line in out.splitlines() if line.startswith("runtime  "))
    assert header.endswith("gap hit recall  bar")
    row = next(line for line in out.splitlines() if line.startswith("anthropic "))
    assert row.split()[-1] in ("2", "3", "5")  # the bar its tuner proposed at
    assert "bar: cases of each training set that must expect a tool or server it keeps" in out


def test_runtimes_with_the_same_figures_are_both_drawn() -> None:
    """Before, the second marker hid the first (the legend listed a runtime the plot lacked):
    each plot sets them side by side."""
    from workbench.commands.compare_runtimes import plot
    from workbench.evaluate.runtimes import CaseFigures, RuntimeRow
    from workbench.tui.widgets.runtimes_plot import (
        RuntimesPlotData,
        runtime_points,
        runtimes_plot_text,
    )

    cases = tuple(CaseFigures(i % 2 == 0, 0.5 + 0.1 * (i % 3), 900.0 + i) for i in range(12))
    rows = [
        RuntimeRow("holodeck-0.6", "s", {}, cases),
        RuntimeRow("holodeck-0.7", "s", {}, cases),
        RuntimeRow("anthropic", "s", {}, cases),
    ]
    drawn = plot(rows).split("recall;")[0]
    assert all(drawn.count(mark) == 1 for mark in ("6", "7", "A"))
    text = runtimes_plot_text(RuntimesPlotData(runtime_points(rows)), 60, 16).plain
    grid = "".join(line[6:] for line in text.splitlines() if line[5:6] in ("│", "┤"))
    assert all(grid.count(mark) == 1 for mark in ("6", "7", "A")), text


def test_with_a_budget_every_runtime_is_tuned_within_it(
    capsys: pytest.CaptureFixture[str], no_budget: dict[str, Any]
) -> None:
    """Below every runtime's knee: each row moves under the budget, or says it cannot."""
    budget = 1500
    assert main(_compare("--json", "--max-tokens", str(budget))) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["budget"] == budget and "fronts" not in data
    knees = {r["runtime"]: r for r in no_budget["rows"]}
    assert [r["runtime"] for r in data["rows"]] == list(knees)
    for row in data["rows"]:
        assert row["budget"] == budget
        tokens = row["heldout"]["tokens_mean"]
        if row["within_budget"]:
            assert tokens <= budget * 1.05, row
        assert knees[row["runtime"]]["budget"] is None
    within = [r for r in data["rows"] if r["within_budget"]]
    assert len(within) >= 6  # the stackone catalog is small: nearly all get there


def test_a_budget_no_runtime_can_meet_is_said_row_by_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_compare("--max-tokens", "50")) == 0
    out = capsys.readouterr().out
    assert "each runtime tuned within 50 tool tokens per task" in out
    for name in ("holodeck-0.6", "anthropic", "pizzapi", "fastmcp"):
        assert f"✗ {name} cannot get within 50 tokens per task: the row is its cheapest" in out
    assert out.count("tokens per task (mean)") == 1  # the points' plot


def test_a_negative_budget_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_compare("--max-tokens", "-1")) == 2
    err = capsys.readouterr().err
    assert "--max-tokens" in err and "at least 0" in err and "Traceback" not in err
    assert main([*_compare()[:-1], "--max-tokens", "900"]) == 2
    assert "goes with --runtimes" in capsys.readouterr().err


def test_without_a_budget_the_json_has_every_runtimes_front_and_the_table(
    capsys: pytest.CaptureFixture[str], no_budget: dict[str, Any]
) -> None:
    data = no_budget
    names = [r["runtime"] for r in data["rows"]]
    assert data["budget"] is None and list(data["fronts"]) == names
    budgets = {b["name"]: b["budget"] for b in data["table"]["budgets"]}
    knee = data["rows"][0]  # holodeck-0.6 at its knee
    assert budgets["knee"] == round(knee["heldout"]["tokens_mean"])
    assert budgets["twice_knee"] == 2 * budgets["knee"]
    # What HoloDeck's defaults send: compare's holodeck "default" row, mean tokens.
    assert main([*_compare()[:-1], "--json"]) == 0
    engines = json.loads(capsys.readouterr().out)
    default = next(
        r for r in engines["rows"] if (r["engine"], r["setting"]) == ("holodeck", "default")
    )
    assert budgets["holodeck_defaults"] == round(default["metrics"]["tokens_selected_mean"])
    for name, front in data["fronts"].items():
        spent = [p["budget"] for p in front]
        assert spent == sorted(set(spent)) and len(spent) >= 6
        assert spent[-1] >= data["tokens_all"] and set(budgets.values()) <= set(spent)
        for p in front:
            assert set(p) >= {"budget", "hit", "recall", "tokens", "ci95", "within_budget"}
            assert p["ci95"]["recall"][0] <= p["recall"] + 1e-9 <= p["ci95"]["recall"][1] + 2e-9
        table = data["table"]["rows"][name]
        assert [p["budget"] for p in table] == list(budgets.values())
    # A front's point is the very row a budget gives.
    point = next(p for p in data["fronts"]["anthropic"] if p["budget"] == budgets["knee"])
    assert main(_compare("--json", "--max-tokens", str(budgets["knee"]))) == 0
    row = next(
        r for r in json.loads(capsys.readouterr().out)["rows"] if r["runtime"] == "anthropic"
    )
    assert row["heldout"]["recall"] == pytest.approx(point["recall"], abs=1e-12)
    assert row["heldout"]["tokens_mean"] == pytest.approx(point["tokens"], abs=1e-9)


def test_without_a_budget_the_text_has_the_three_budgets_and_the_fronts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_compare()) == 0
    out = capsys.readouterr().out
    assert "at three budgets (max tool tokens per task)" in out
    assert "HoloDeck's defaults (" in out and "holodeck-0.6's knee (" in out
    assert "twice the knee (" in out
    assert out.count("tokens per task (log scale)") == 1
    plot = out.split("at three budgets")[1]
    assert "held-out recall at each budget; 6 holodeck-0.6  7 holodeck-0.7" in plot
