"""``compare --runtimes`` and its error bars: every runtime tuned and measured held-out on the
same cases (the stackone data set's copy, the real tokenizer), with 95 % intervals (tested in
test_eval_intervals)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main

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


def test_compare_runtimes_json_has_every_runtime_with_error_bars(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_compare("--json")) == 0
    data = json.loads(capsys.readouterr().out)
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


def test_the_06_row_is_tunes_own_held_out_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """The per-case figures re-measured fold by fold pool to what tune reports held-out."""
    assert main(_compare("--json")) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert main(["tune", *_compare()[1:-1], "--runtime", "holodeck-0.6", "--json"]) == 0
    tuned = json.loads(capsys.readouterr().out)
    assert row["heldout"]["recall"] == pytest.approx(tuned["heldout"]["recall"], abs=1e-9)
    assert row["heldout"]["hit"] == pytest.approx(tuned["heldout"]["hit"], abs=1e-9)


def test_compare_runtimes_text_has_the_table_and_one_plot(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_compare()) == 0
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
