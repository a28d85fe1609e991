"""The Compare-engines view: every tool-search engine on the same labelled queries.

The numbers of ``holo-tune compare`` (a thread worker calls the core's
:func:`workbench.evaluate.compare.compare`): one table row per engine at its defaults and at its
best setting (HoloDeck also at the agent's block) with hit, recall, top1, mrr, tokens sent,
reduction and the parameters; and one plot with the recall-versus-tokens points of every engine,
HoloDeck's current setting (the knobs) marked. Cases are the CLI's default (``--cases``, the
agent's own ``test_cases``, ``<agent stem>.cases.yaml`` beside it), or a file named in the path
input; the header says which.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, cast

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import get_current_worker

from workbench.evaluate import evaluate
from workbench.evaluate.compare import CompareReport, CompareRow, compare, params_text
from workbench.evaluate.tuner import DEFAULT_FOLDS
from workbench.search.delivery import runtime_engine
from workbench.tui.caseruns import (
    progress_poster,
    read_cases,
)
from workbench.tui.screens.caserun import CaseRunScreen
from workbench.tui.widgets.engines_plot import EnginesPlot, EnginesPlotData, engine_series

#: The table's columns: (label, right-aligned). ``tokens`` is the mean sent per request, ``saved``
#: the reduction against sending every tool: the CLI's labels (and the table fits 120 columns).
COLUMNS: tuple[tuple[str, bool], ...] = (
    ("engine", False),
    ("setting", False),
    ("hit", True),
    ("recall", True),
    ("top1", True),
    ("mrr", True),
    ("tokens", True),
    ("saved", True),
    ("params", False),
)


@dataclass(frozen=True)
class Outcome:
    """One run: the report, HoloDeck's current setting as ``(tokens, recall)``, the warnings."""

    report: CompareReport
    current: tuple[float, float]
    #: True when the knobs hold the file's block (the current point is the ``agent`` row).
    current_is_file: bool
    warnings: list[str]


@dataclass
class _Stage(Message):
    """The engine the worker is measuring now."""

    engine: str


def row_cells(row: CompareRow) -> tuple[str, ...]:
    """One table row as the cells of :data:`COLUMNS` (pure; the CLI's formats)."""
    m = row.metrics
    return (
        row.engine,
        row.setting + ("*" if row.heldout else ""),
        f"{m.hit:.3f}",
        f"{m.recall:.3f}",
        f"{m.top1:.3f}",
        f"{m.mrr:.3f}",
        f"{m.tokens_selected_mean:,.0f}",
        m.saved_text(),
        params_text(row.engine, row.params),
    )


def row_key(row: CompareRow) -> str:
    return f"{row.engine}/{row.setting}"


def summary(report: CompareReport, tools: int) -> str:
    """The status line after a run."""
    line = (
        f"{report.cases} cases · {tools} tools, {report.tokens_all:,} tokens in all "
        f"({report.encoding}, {'exact' if report.exact else 'estimate'})"
    )
    if any(row.heldout for row in report.rows):
        return line + f" · * held-out ({DEFAULT_FOLDS} folds)"
    return line + f" · no best settings: they need at least {DEFAULT_FOLDS} cases"


class CompareEnginesScreen(CaseRunScreen[None, Outcome]):
    """Every engine's figures on the same cases, and their recall/tokens points."""

    PREFIX = "cmp"
    VIEW = "Compare engines"
    SCREEN_ID = "compare-engines"
    WORKER = "compare-engines"
    DESCRIPTION = "compare every engine on the cases"
    FAILED = "comparison failed"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back", tooltip="Back to the dashboard", id="compare-back"),
        Binding(
            "ctrl+g",
            "run",
            "run",
            tooltip="Run every engine on the cases",
            id="compare-run",
            priority=True,
        ),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="cmp-box"):
            yield from self.run_header()
            table: DataTable[Text] = DataTable(
                id="cmp-table", cursor_type="row", zebra_stripes=True
            )
            yield table
            yield Static("", id="cmp-notes")
            yield EnginesPlot(id="cmp-plot")
        yield Footer()

    def on_mount(self) -> None:
        table = cast("DataTable[Text]", self.query_one("#cmp-table", DataTable))
        for label, right in COLUMNS:
            table.add_column(Text(label, justify="right" if right else "left"), key=label)
        self.query_one("#cmp-status", Static).update(
            f"{self.source_line()} · every engine at its defaults and at its best setting on "
            "the same cases. Enter in the path (or ctrl+g) runs."
        )
        self.query_one("#cmp-cases", Input).focus()

    # -- running ---------------------------------------------------------------------------
    def run_cases(self, path: str) -> Outcome:
        """Thread worker: core calls only; progress and stages are posted, never drawn here."""
        worker = get_current_worker()
        lab = self.lab
        ws = lab.workspace
        progress = progress_poster(self, lambda: worker.is_cancelled)
        cases = read_cases(path, ws)

        def started(engine: str) -> None:
            self.post_message(_Stage(engine))

        report = compare(ws, cases, on_engine=started, on_progress=progress)
        setting = lab.setting
        if setting == ws.setting:
            agent = next(r for r in report.rows if (r.engine, r.setting) == ("holodeck", "agent"))
            current = (agent.metrics.tokens_selected_mean, agent.metrics.recall)
        else:
            engine = runtime_engine(ws.engine, ws.agent.agent)  # what the runtime runs
            now = evaluate(engine, ws.catalog, ws.tokens, cases, setting, usage=lab.usage)
            current = (now.metrics.tokens_selected_mean, now.metrics.recall)
        return Outcome(report, current, setting == ws.setting, cases.warnings())

    @on(_Stage)
    def _stage(self, message: _Stage) -> None:
        self.query_one("#cmp-status", Static).update(f"running… {message.engine}")

    # -- drawing ---------------------------------------------------------------------------
    def show_outcome(self, outcome: Outcome) -> None:
        report = outcome.report
        source = self.source_line(self.ran_path).removeprefix("cases: ")
        line = f"{source} · " + summary(report, len(self.lab.workspace.catalog))
        if outcome.warnings:
            line += f" · ⚠ {outcome.warnings[0]}"
        self.query_one("#cmp-status", Static).update(line)
        table = cast("DataTable[Text]", self.query_one("#cmp-table", DataTable))
        table.clear()
        for row in report.rows:
            cells = row_cells(row)
            table.add_row(
                *(
                    Text(cell, justify="right" if right else "left")
                    for cell, (_, right) in zip(cells, COLUMNS, strict=True)
                ),
                key=row_key(row),
            )
        table.focus()  # the rows to read (shift+tab goes back to the cases path)
        where = "the agent's block" if outcome.current_is_file else "the knobs, not written yet"
        # the legend first: row notes can outgrow the box, and a cut must not take the legend
        notes = [
            f"◆ HoloDeck now ({where}) · tokens: mean sent per request, by each engine's "
            "accounting · saved: vs all tools"
        ]
        notes += [f"{row.engine} {row.setting}: {row.note}" for row in report.rows if row.note]
        self.query_one("#cmp-notes", Static).update(Text("\n".join(notes), style="dim"))
        self.query_one(EnginesPlot).data = EnginesPlotData(
            series=tuple(engine_series(report)), current=outcome.current
        )

    def table_rows(self) -> list[tuple[str, ...]]:
        """The table's cells as text, row by row (what the user reads)."""
        table = cast("DataTable[Text]", self.query_one("#cmp-table", DataTable))
        return [tuple(cell.plain for cell in table.get_row_at(i)) for i in range(table.row_count)]

    def action_close(self) -> None:
        self.dismiss(None)
