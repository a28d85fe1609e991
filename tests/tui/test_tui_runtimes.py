"""The "Which runtime?" view, driven through Pilot, against ``compare --runtimes --json``."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, ProgressBar, Static
from textual.worker import WorkerState
from tui_helpers import SAMPLES, cli_json, open_view, research_app, run_view, shown

from workbench.evaluate import load_cases, resolve_cases
from workbench.evaluate.fronts import at_table
from workbench.evaluate.intervals import Interval
from workbench.evaluate.runtimes import RuntimesReport
from workbench.runtimes import all_runtimes
from workbench.runtimes.compare import compare_runtimes
from workbench.runtimes.detect import RUNTIMES
from workbench.tui.commands import ACTIONS
from workbench.tui.screens import runtimes as runtimes_screen
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.help import HELP
from workbench.tui.screens.runtimes import HERE, WhichRuntimeScreen, row_cells
from workbench.tui.screenshots import settle
from workbench.tui.widgets.runtimes_plot import (
    FRONTS_TITLE,
    RuntimePoint,
    RuntimesPlot,
    RuntimesPlotData,
    runtimes_plot_text,
)

SIZE = (120, 36)
CASES = "research-agent.cases.yaml"


def _with_cases(tmp_path: Path) -> Path:
    """The sample's 35 labelled cases beside the agent copy (the CLI's default source)."""
    shutil.copyfile(SAMPLES / CASES, tmp_path / CASES)
    return tmp_path / CASES


async def test_the_view_shows_the_clis_numbers_for_every_runtime(tmp_path: Path) -> None:
    cases_file = _with_cases(tmp_path)
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, WhichRuntimeScreen, "w")
        assert screen.query_one("#rt-cases", Input).value == str(cases_file)
        header = str(screen.query_one("#rt-status", Static).render())
        assert "(beside the agent)" in header and f"{HERE}holodeck-0.6" in header
        await pilot.press("enter")
        await settle(pilot)
        report = screen.outcome
        assert report is not None
        # The CLI on the same agent, catalog and cases.
        cli = await cli_json(
            "compare", tmp_path / "research-agent.yaml", "--runtimes", "--embedder", "none"
        )
        assert [r["runtime"] for r in cli["rows"]] == list(RUNTIMES)
        assert report.to_json() == {k: cli[k] for k in report.to_json()}
        # All at once in the core is the same as one runtime at a time in the view.
        ws = screen.lab.workspace
        cases = resolve_cases(load_cases(cases_file), ws.catalog)
        whole = compare_runtimes(ws, cases, registry=all_runtimes())
        assert whole == report
        rows = screen.table_rows()
        assert report.table is not None
        assert rows == [
            row_cells(r, "holodeck-0.6", at_table(report.fronts[r.runtime], report.table))
            for r in report.rows
        ]
        first = cli["rows"][0]
        hit, (low, high) = first["heldout"]["hit"], first["ci95"]["hit"]
        assert rows[0][0] == f"{HERE}holodeck-0.6"
        assert rows[0][1] == f"{hit:.3f} {low:.2f}-{high:.2f}"
        assert all(not r[0].startswith(HERE) for r in rows[1:])
        tokens = cli["rows"][2]["heldout"]["tokens_mean"]
        assert rows[2][3].startswith(f"{tokens:,.0f} ")
        notes = shown(screen.query_one("#rt-notes"))
        assert "anthropic, claude-code, openai: hit and recall are an approximation" in notes
        progress = screen.query_one(ProgressBar)
        assert progress.total == len(RUNTIMES) and progress.progress == len(RUNTIMES)
        plot = screen.query_one(RuntimesPlot)
        assert plot.front_labels() == list(RUNTIMES)  # no budget: the fronts
        drawn = shown(plot)
        assert "holodeck-0.6 ▶" in drawn and "claude-code" in drawn and "(log scale)" in drawn
        assert plot.border_title == FRONTS_TITLE
        assert any(label.startswith("knee ") for label in screen.column_labels())
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)


async def test_the_budget_knob_reruns_every_runtime_within_it(tmp_path: Path) -> None:
    """A budget typed and Enter: the CLI's ``--max-tokens`` rows, the points' plot; a bad one
    is said and nothing runs."""
    _with_cases(tmp_path)
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, WhichRuntimeScreen, "w")
        budget = screen.query_one("#rt-budget", Input)
        budget.focus()
        await pilot.press("x")
        assert budget.value == ""  # an integer input takes no letter
        budget.value = "-5"
        await pilot.press("enter")
        await settle(pilot)
        status = shown(screen.query_one("#rt-status"))
        assert "✗" in status and "budget" in status and "at least 0" in status
        assert screen.outcome is None
        budget.value = "2500"
        await pilot.press("enter")
        await settle(pilot)
        report = screen.outcome
        assert report is not None and report.budget == 2500 and report.table is None
        cli = await cli_json(
            "compare",
            tmp_path / "research-agent.yaml",
            "--runtimes",
            "--embedder",
            "none",
            "--max-tokens",
            "2500",
        )
        assert report.to_json() == {k: cli[k] for k in report.to_json()}
        assert all(r["budget"] == 2500 for r in cli["rows"])
        assert screen.table_rows() == [row_cells(r, "holodeck-0.6") for r in report.rows]
        assert "each runtime tuned within 2,500 tool tokens per task" in shown(
            screen.query_one("#rt-notes")
        )
        plot = screen.query_one(RuntimesPlot)
        assert plot.labels() == list(RUNTIMES) and plot.front_labels() == []


async def test_leaving_stops_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Escape during a run: the worker is cancelled and stops before the next runtime (the
    core call is held until the view is left, so the run cannot finish first)."""
    _with_cases(tmp_path)
    left = threading.Event()
    calls: list[tuple[str, ...]] = []

    def held(*args: Any, **kwargs: Any) -> RuntimesReport:
        calls.append(tuple(kwargs["runtimes"]))
        left.wait(10)
        return compare_runtimes(*args, **kwargs)

    monkeypatch.setattr(runtimes_screen, "compare_runtimes", held)
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, WhichRuntimeScreen, "w")
        await pilot.press("enter")
        workers = [w for w in app.workers if w.name == "which-runtime"]
        assert [w.state for w in workers] in ([WorkerState.PENDING], [WorkerState.RUNNING])
        await pilot.press("escape")
        left.set()
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)
        assert workers[0].state == WorkerState.CANCELLED
        assert calls == [("holodeck-0.6",)] and screen.outcome is None


async def test_too_few_cases_is_said_on_the_status_line(tmp_path: Path) -> None:
    (tmp_path / CASES).write_text(
        "cases:\n  - query: find recent papers on transformers\n    expected: [search_papers]\n"
    )
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_view(pilot, WhichRuntimeScreen, "w")
        await run_view(pilot, screen)
        status = shown(screen.query_one("#rt-status"))
        assert status.strip().startswith("✗") and screen.outcome is None
        assert "needs at least 5 cases (one per fold); these are 1" in status
        assert screen.table_rows() == []


def test_the_view_is_bound_in_the_help_and_in_the_palette() -> None:
    ids = {getattr(b, "id", None): b for b in DashboardScreen.BINDINGS}
    binding = ids["which_runtime"]
    assert getattr(binding, "key", None) == "w" and getattr(binding, "show", False)
    keys = [getattr(b, "key", "") for b in DashboardScreen.BINDINGS]
    assert keys.count("w") == 1
    assert any(action == "which_runtime" for _, _, action in ACTIONS)
    assert "| `w` | which runtime?" in HELP


def _point(name: str, tokens: float, recall: float, t: Interval, r: Interval) -> RuntimePoint:
    return RuntimePoint(name, tokens, recall, t, r)


def test_the_plot_draws_each_runtime_with_both_bars() -> None:
    data = RuntimesPlotData(
        (
            _point("holodeck-0.6", 1000.0, 0.6, (800.0, 1200.0), (0.45, 0.75)),
            _point("anthropic", 2000.0, 0.8, (1900.0, 2100.0), (0.7, 0.9)),
        ),
        detected="holodeck-0.6",
    )
    text = runtimes_plot_text(data, 60, 14)
    lines = text.plain.splitlines()
    assert len(lines) == 14
    assert lines[0] == "6 holodeck-0.6 ▶  A anthropic"
    assert lines[1].startswith("0.90 ┤") and lines[-2].startswith("0.40 │")
    assert "800 … 2,100 tokens per task" in lines[-1]
    body = "\n".join(lines[1:-1])
    assert body.count("6") == 1 and body.count("A") == 1
    six = next(line for line in lines[1:-1] if "6" in line)
    assert "─6─" in six  # the tokens bar through the mark
    column = six.index("6")
    assert sum(line[column] in "│┼" for line in lines[1:-1]) >= 4  # the recall bar
    # The agent's runtime stands out.
    styles = {str(span.style) for span in text.spans}
    assert any("reverse" in s and "cyan" in s for s in styles)
    assert not any("reverse" in s and "yellow" in s for s in styles)
