"""The "Which runtime?" view: every runtime tuned on the same labelled cases.

The budget input (max tool tokens per task) is ``--max-tokens``: empty, each runtime at its knee
with its recall at the three budgets and every runtime's front in the plot; a number, every
runtime within it (a runtime that cannot get there marked ✗ at its cheapest point) and the
points with their error bars. Enter in it runs again.

The numbers of ``holo-tune compare --runtimes`` (a thread worker calls the core's
:func:`workbench.runtimes.compare.compare_runtimes`, one runtime at a time so the progress bar
moves and leaving the view stops the run between runtimes): a table row per runtime with its
tuned setting and held-out hit, recall and tokens per task, each with its 95 % interval; the
runtime that runs the agent marked ``▶``; the approximation note of the deferred-loading rows;
and one plot of recall against tokens with both error bars. Cases are the CLI's default
(``--cases``, the agent's own ``test_cases``, ``<agent stem>.cases.yaml`` beside it), or a file
named in the path input; the header says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.validation import Number
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from workbench.errors import InputError
from workbench.evaluate.fronts import BudgetPoint, at_table, budget_mark, front_lines, point_cell
from workbench.evaluate.intervals import interval_text
from workbench.evaluate.runtimes import RuntimeRow, RuntimesReport
from workbench.evaluate.search_queries import MESSAGE
from workbench.evaluate.tuner import DEFAULT_FOLDS
from workbench.runtimes import all_runtimes, runtime_names
from workbench.runtimes.compare import compare_runtimes
from workbench.tui.caseruns import (
    RunProgress,
    Stopped,
    read_cases,
)
from workbench.tui.dashboard.runtime import runtime_text
from workbench.tui.screens.caserun import CaseRunScreen
from workbench.tui.widgets.runtimes_plot import RuntimesPlot, RuntimesPlotData, runtime_points
from workbench.tui.widgets.text_box import TextBox

#: The table's columns: (label, right-aligned); each figure with its 95 % interval.
COLUMNS: tuple[tuple[str, bool], ...] = (
    ("runtime", False),
    ("hit (95%)", True),
    ("recall (95%)", True),
    ("tokens/task (95%)", True),
    ("tuned setting", False),  # last: a narrow terminal cuts it, not the figures
)
#: Marks the runtime that runs the agent.
HERE = "▶ "
#: The three budgets' columns, in the table's order (``TableBudgets.named``).
SHORT = ("defaults", "knee", "2×knee")


@dataclass
class _Stage(Message):
    """The runtime the worker is tuning now."""

    runtime: str


def row_cells(
    row: RuntimeRow, detected: str | None = None, at: Sequence[BudgetPoint] = ()
) -> tuple[str, ...]:
    """One table row as the cells of :data:`COLUMNS` (pure; the CLI's figures), with its
    points ``at`` the three budgets (no budget given) before the setting."""
    ci = row.ci()
    low, high = ci["tokens"]
    mark = f" {budget_mark(row)}" if budget_mark(row) else ""
    return (
        (HERE if row.runtime == detected else "  ") + row.runtime,
        f"{row.hit:.3f} {interval_text(ci['hit'])}",
        f"{row.recall:.3f} {interval_text(ci['recall'])}",
        f"{row.tokens:,.0f} {low:,.0f}-{high:,.0f}{mark}",
        *(point_cell(p, recall_ci=False) for p in at),
        row.setting,
    )


def columns(report: RuntimesReport | None) -> list[tuple[str, bool]]:
    """:data:`COLUMNS`, with one column per budget of the report's table (no budget given)."""
    if report is None or report.table is None:
        return list(COLUMNS)
    extra = [
        (f"{short} {b:,}", True) for short, b in zip(SHORT, report.table.budgets(), strict=True)
    ]
    return [*COLUMNS[:-1], *extra, COLUMNS[-1]]


def budget_value(text: str) -> int | None:
    """The budget input's value: None when empty (the fronts), else a whole number >= 0."""
    text = text.strip().replace(",", "").replace("_", "")
    if not text:
        return None
    if not text.isdigit():
        raise InputError(
            f"{text!r}: a budget is a whole number of tokens, at least 0 (empty: each "
            "runtime's front)",
            field="budget",
        )
    return int(text)


def notes(report: RuntimesReport) -> list[str]:
    """Under the table: how the rows were measured, then each row's note (a note shared by
    several rows, like the deferred runtimes' approximation, once, naming them all)."""
    lines = [
        f"{report.how()} · 95%: Wilson for hit, bootstrap for recall and tokens",
    ]
    if report.table is not None:
        _, knee, _ = report.table.named()
        lines.append(
            f"defaults, knee, 2×knee: within what HoloDeck's defaults send, {knee[1]}, twice "
            "that (recall, tokens) · ✗ cannot get within (its cheapest) · ! held-out above"
        )
    elif report.budget is not None:
        lines.append("✗ cannot get within the budget (its cheapest point) · ! held-out above it")
    shared: dict[str, list[str]] = {}
    for row in report.rows:
        if row.note:
            shared.setdefault(row.note, []).append(row.runtime)
    lines += [f"{', '.join(names)}: {note}" for note, names in shared.items()]
    return lines


class WhichRuntimeScreen(CaseRunScreen[None, RuntimesReport]):
    """Every runtime's figures on the same cases, and one plot of them."""

    PREFIX = "rt"
    VIEW = "Which runtime?"
    SCREEN_ID = "which-runtime"
    WORKER = "which-runtime"
    DESCRIPTION = "every runtime at its tuned setting on the cases"
    FAILED = "comparison failed"
    #: The budget of the run (None: each runtime's knee and front), read as the run starts.
    budget: int | None = None

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back", tooltip="Back to the dashboard", id="runtimes-back"),
        Binding(
            "ctrl+g",
            "run",
            "run",
            tooltip="Tune and measure every runtime on the cases",
            id="runtimes-run",
            priority=True,
        ),
    ]

    @property
    def detected(self) -> str | None:
        return self.runtime.name if self.runtime is not None else None

    def here(self) -> str:
        """``▶ NAME (why) runs this agent · ``: first on the status line."""
        if self.runtime is None:
            return ""
        return f"{HERE}{runtime_text(self.runtime)} runs this agent · "

    def more_inputs(self) -> ComposeResult:
        """The budget: max tool tokens per task every runtime is tuned within (empty: each
        runtime's front and the three budgets); Enter runs again."""
        field = TextBox(
            "",
            placeholder="empty: fronts",
            type="integer",
            validators=[Number(minimum=0)],
            validate_on=["changed", "submitted"],
            id="rt-budget",
        )
        field.border_title = "max tokens/task"
        yield field

    def compose(self) -> ComposeResult:
        with Vertical(id="rt-box"):
            yield from self.run_header()
            table: DataTable[Text] = DataTable(id="rt-table", cursor_type="row", zebra_stripes=True)
            yield table
            yield Static("", id="rt-notes")
            yield RuntimesPlot(id="rt-plot")
        yield Footer()

    def on_mount(self) -> None:
        self._add_columns(COLUMNS)
        self.status(
            f"{self.here()}{self.source_line()} · every runtime at its tuned setting on the same "
            "cases. Enter in the path (or ctrl+g) runs."
        )
        self.query_one("#rt-cases", Input).focus()

    # -- running ---------------------------------------------------------------------------
    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "rt-budget":
            self.action_run()
        else:
            super().on_input_submitted(event)

    def action_run(self) -> None:
        """Read the budget (a bad one is said, and nothing runs), then run."""
        try:
            self.budget = budget_value(self.query_one("#rt-budget", Input).value)
        except InputError as err:
            self.status(Text(f"✗ {err}", style="bold red"))
            return
        super().action_run()

    def run_cases(self, path: str) -> RuntimesReport:
        """Thread worker: the core's ``compare_runtimes``, one runtime at a time (the same rows
        as all at once: each is tuned on its own, on the same folds); stops between two."""
        worker = get_current_worker()
        ws = self.lab.workspace
        cases = read_cases(path, ws)
        if len(cases) < DEFAULT_FOLDS:  # the CLI's words name --folds, which the view has not
            raise InputError(
                f"every runtime is tuned and measured {DEFAULT_FOLDS}-fold held-out: that needs "
                f"at least {DEFAULT_FOLDS} cases (one per fold); these are {len(cases)}"
            )
        budget = self.budget
        rows: list[RuntimeRow] = []
        fronts: dict[str, tuple[BudgetPoint, ...]] = {}
        table = None
        cache: dict[Any, Any] = {}  # one run's rankings and knee, shared by the runtimes
        names = runtime_names()
        for done, name in enumerate(names):
            if worker.is_cancelled:
                raise Stopped
            self.post_message(RunProgress(done, len(names)))
            self.post_message(_Stage(name))
            one = compare_runtimes(
                ws,
                cases,
                registry=all_runtimes(),
                runtimes=(name,),
                budget=budget,
                cache=cache,
            )
            rows += one.rows
            fronts.update(one.fronts)
            table = one.table
        self.post_message(RunProgress(len(names), len(names)))
        return RuntimesReport(
            len(cases), int(ws.tokens.all), DEFAULT_FOLDS, rows, MESSAGE, budget, fronts, table
        )

    @on(_Stage)
    def _stage(self, message: _Stage) -> None:
        self.status(f"running… {message.runtime}")

    # -- drawing ---------------------------------------------------------------------------
    def show_outcome(self, outcome: RuntimesReport) -> None:
        source = self.source_line(self.ran_path).removeprefix("cases: ")
        ws = self.lab.workspace
        self.status(
            f"{self.here()}{outcome.cases} cases from {source} · {len(ws.catalog)} tools, "
            f"{outcome.tokens_all:,} tokens in all"
        )
        table = cast("DataTable[Text]", self.query_one("#rt-table", DataTable))
        table.clear(columns=True)
        shown = columns(outcome)
        self._add_columns(shown)
        for row in outcome.rows:
            here = row.runtime == self.detected
            at = (
                at_table(outcome.fronts.get(row.runtime, ()), outcome.table)
                if outcome.table
                else []
            )
            cells = row_cells(row, self.detected, at)
            table.add_row(
                *(
                    Text(cell, justify="right" if right else "left", style="bold" if here else "")
                    for cell, (_, right) in zip(cells, shown, strict=True)
                ),
                key=row.runtime,
            )
        table.focus()  # the rows to read (shift+tab goes back to the cases path)
        self.query_one("#rt-notes", Static).update(Text("\n".join(notes(outcome)), style="dim"))
        self.query_one(RuntimesPlot).data = RuntimesPlotData(
            runtime_points(outcome.rows), self.detected, front_lines(outcome, all_runtimes())
        )

    def _add_columns(self, shown: Sequence[tuple[str, bool]]) -> None:
        table = cast("DataTable[Text]", self.query_one("#rt-table", DataTable))
        for label, right in shown:
            table.add_column(Text(label, justify="right" if right else "left"), key=label)

    def table_rows(self) -> list[tuple[str, ...]]:
        """The table's cells as text, row by row (what the user reads)."""
        table = cast("DataTable[Text]", self.query_one("#rt-table", DataTable))
        return [tuple(cell.plain for cell in table.get_row_at(i)) for i in range(table.row_count)]

    def column_labels(self) -> list[str]:
        """The table's column labels, as shown."""
        table = cast("DataTable[Text]", self.query_one("#rt-table", DataTable))
        return [column.label.plain for column in table.columns.values()]

    def action_close(self) -> None:
        """Back to the dashboard; a run under way stops (between two runtimes)."""
        self.workers.cancel_group(self, self.WORKER)
        self.dismiss(None)
