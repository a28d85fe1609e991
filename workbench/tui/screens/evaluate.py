"""The Evaluate view: measure the current setting on labelled queries.

Load a cases file (or the agent's own ``test_cases``), run it with a progress bar (a thread
worker calls the core: ``resolve_cases``, ``evaluate``, ``sweep_settings``, ``pareto_front``),
then read metric cards (each figure with its 95 % interval), the recall-versus-tokens front
with the current setting marked, the misses, and the what-if rows (changes outside the knobs,
measured after the evaluation in a worker of their own: :mod:`.evaluate_whatif`). Enter on a
miss opens its query in the query lab; Enter on a front point adopts it. The screen dismisses
with what the user chose; the dashboard applies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from workbench.config.filtering import SEARCH_METHODS, ToolFiltering
from workbench.evaluate import EvalReport, FrontPoint, evaluate, pareto_front, sweep_settings
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.intervals import Interval, interval_text
from workbench.evaluate.runs import setting_verdict
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.delivery import method_run, runtime_engine, runtime_methods
from workbench.tui.caseruns import (
    CasesMemory,
    progress_poster,
    read_cases,
)
from workbench.tui.lab import Lab
from workbench.tui.screens.caserun import CaseRunScreen
from workbench.tui.screens.evaluate_whatif import TITLE as WHAT_IF_TITLE
from workbench.tui.screens.evaluate_whatif import Request, WhatIfs
from workbench.tui.widgets.front_plot import FrontPlot, PlotData
from workbench.tui.widgets.row_list import Line, RowList


@dataclass(frozen=True)
class Choice:
    """What the user picked: a query to open, or a setting to adopt."""

    query: str | None = None
    setting: ToolFiltering | None = None


@dataclass(frozen=True)
class Outcome:
    """One run: the current setting's report, the front, and the case set's warnings."""

    report: EvalReport
    front: list[FrontPoint]
    warnings: list[str]
    cases: int
    #: 95 % intervals of hit, recall, top1 and mrr (shown on the cards).
    ci95: dict[str, Interval] | None = None
    #: The cases run (the what-if rows are measured on them).
    case_set: CaseSet | None = None
    #: What the runtime runs instead of the setting's method, and why (None: what was asked).
    note: str | None = None
    #: The methods on the front: those the runtime runs as measured (search/delivery.py).
    methods: tuple[str, ...] = tuple(SEARCH_METHODS)


def metric_cards(
    report: EvalReport, ci: dict[str, Interval] | None = None
) -> list[tuple[str, str]]:
    """(label, value) of each card, with its 95 % interval when ``ci`` is given (pure:
    unit-tested)."""
    m = report.metrics

    def value(name: str, figure: float) -> str:
        text = f"{figure:.3f}"
        if ci is not None and name in ci:
            text += f" ({interval_text(ci[name])})"
        return text

    return [
        ("recall", value("recall", m.recall)),
        ("hit", value("hit", m.hit)),
        ("top1", value("top1", m.top1)),
        ("mrr", value("mrr", m.mrr)),
        ("tokens sent", f"{m.tokens_selected_mean:,.0f}"),
        ("saved", m.saved_text()),  # as the eval and compare tables
    ]


#: The front's title: every point on it can be adopted.
FRONT_TITLE = "front (Enter adopts)"


def front_title(methods: Sequence[str]) -> str:
    """The front's title, saying when methods are left off because the runtime would run them
    as BM25 (no embedding service; the status line says why) (pure)."""
    if all(m in methods for m in SEARCH_METHODS):
        return FRONT_TITLE
    return f"{FRONT_TITLE}: {', '.join(methods)} only, no embedding service"


def point_line(point: FrontPoint, width: int) -> Text:
    s = point.setting
    text = Text(f"{s.search_method:<8} k={s.top_k:<3} t={s.similarity_threshold:.2f} ")
    text.append(f"recall {point.recall:.3f} ", style="bold")
    text.append(f"{point.tokens:>7,.0f} tok", style="dim")
    return text


class EvaluateScreen(CaseRunScreen[Choice | None, Outcome]):
    """Cases, metrics, the front and the misses for the setting the knobs hold."""

    PREFIX = "eval"
    VIEW = "Evaluate"
    SCREEN_ID = "evaluate"
    WORKER = "evaluate"
    DESCRIPTION = "evaluate the cases"
    FAILED = "evaluation failed"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back", tooltip="Back to the dashboard", id="evaluate-back"),
        Binding("ctrl+g", "run", "run", tooltip="Run the cases", id="evaluate-run", priority=True),
    ]

    def __init__(
        self,
        lab: Lab,
        agent_path: Path,
        memory: CasesMemory | None = None,
        runtime: RuntimeInfo | None = None,
    ) -> None:
        super().__init__(lab, agent_path, memory, runtime)
        self.setting = lab.setting
        self.whatifs = WhatIfs(self, "#eval-whatif")
        #: The front point measured worse that Enter was pressed on once (a second Enter adopts).
        self._confirm: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="eval-box"):
            yield from self.run_header()
            with Horizontal(id="eval-cards"):
                for label in ("recall", "hit", "top1", "mrr", "tokens sent", "saved"):
                    yield Static(Text(f"{label}\n–"), classes="eval-card")
            with Horizontal(id="eval-body"):
                yield FrontPlot(id="eval-plot")
                with Vertical(id="eval-lists"):
                    yield Static(FRONT_TITLE, classes="eval-list-title", id="eval-front-title")
                    yield RowList(id="eval-front")
                    yield Static("misses (Enter opens in the query lab)", classes="eval-list-title")
                    yield RowList(id="eval-misses")
                    yield Static(WHAT_IF_TITLE, classes="eval-list-title")
                    with VerticalScroll(id="eval-whatif-box"):
                        yield Static(Text("after the evaluation", "dim"), id="eval-whatif")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#eval-status", Static).update(
            f"{self.source_line()} · setting: {self._describe(self.setting)}. "
            "Enter in the path (or ctrl+g) runs."
        )
        self.query_one("#eval-cases", Input).focus()

    @staticmethod
    def _describe(s: ToolFiltering) -> str:
        return f"{s.search_method}, top_k {s.top_k}, threshold {s.similarity_threshold:.2f}"

    # -- running ---------------------------------------------------------------------------
    def run_cases(self, path: str) -> Outcome:
        """Thread worker: every step is a core call; progress is posted, never drawn here."""
        worker = get_current_worker()
        ws = self.lab.workspace
        progress = progress_poster(self, lambda: worker.is_cancelled)
        cases = read_cases(path, ws)
        # what the runtime runs (search/delivery.py): the front offers only methods that run
        agent = ws.agent.agent
        given = self.runtime is not None and self.runtime.plugin.runs_given_embedder
        engine = runtime_engine(ws.engine, agent, given=given)
        report = evaluate(engine, ws.catalog, ws.tokens, cases, self.setting, usage=self.lab.usage)
        methods = runtime_methods(agent, given=given)
        result = sweep_settings(
            engine,
            ws.catalog,
            ws.tokens,
            cases,
            self.setting,
            methods=methods,
            usage=self.lab.usage,
            on_progress=progress,
        )
        return Outcome(
            report,
            pareto_front(result),
            cases.warnings(),
            len(cases),
            ci95=report.ci95(),
            case_set=cases,
            note=method_run(agent, self.setting.search_method, ws.embedder, given=given).line(),
            methods=methods,
        )

    # -- drawing ---------------------------------------------------------------------------
    def show_outcome(self, outcome: Outcome) -> None:
        report = outcome.report
        source = self.source_line(self.ran_path).removeprefix("cases: ")
        cases = f"{outcome.cases} case{'' if outcome.cases == 1 else 's'}"
        line = f"{cases} from {source} · {self._describe(self.setting)}"
        if outcome.note:
            line += f" · {outcome.note}"
        elif report.scored_by:
            line += f" · scored by {report.scored_by}"
        if outcome.warnings:
            line += f" · ⚠ {outcome.warnings[0]}"
        self.query_one("#eval-status", Static).update(line)
        for card, (label, value) in zip(
            self.query(".eval-card"), metric_cards(report, outcome.ci95), strict=True
        ):
            cast(Static, card).update(Text.assemble((label + "\n", "dim"), (value, "bold")))
        self.query_one("#eval-front-title", Static).update(front_title(outcome.methods))
        front = self.query_one("#eval-front", RowList)
        width = front.size.width or 40
        front.set_lines(
            Text(" method   top_k threshold  recall   tokens"),
            [Line(str(n), point_line(p, width)) for n, p in enumerate(outcome.front)],
            cursor_key=None,
        )
        misses = self.query_one("#eval-misses", RowList)
        misses.set_lines(  # the missed tools first: a narrow view cuts the query, not them
            Text(" missed ← query"),
            [
                Line(str(n), Text.assemble(", ".join(r.missed), (" ← " + r.case.query, "dim")))
                for n, r in enumerate(report.misses)
            ],
            cursor_key=None,
        )
        self._plot()
        if outcome.case_set is not None:
            request = Request(outcome.case_set, self.setting)
            self.whatifs.start(self.lab.workspace, request, self.lab.usage, self.runtime)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The what-if worker's end is drawn by its part; the evaluation's by the run loop (a
        new evaluation first puts the what-if rows of the last one away)."""
        if self.whatifs.state_changed(event):
            return
        if event.worker.name == self.WORKER and event.state == WorkerState.RUNNING:
            self.whatifs.waiting()
        super().on_worker_state_changed(event)

    def _plot(self, highlighted: int | None = None) -> None:
        outcome = self.outcome
        if outcome is None:
            return
        m = outcome.report.metrics
        self.query_one(FrontPlot).data = PlotData(
            points=tuple((p.tokens, p.recall) for p in outcome.front),
            current=(m.tokens_selected_mean, m.recall),
            highlighted=highlighted,
        )

    def on_row_list_chosen(self, event: RowList.Chosen) -> None:
        outcome = self.outcome
        if outcome is None:
            return
        if event.row_list.id == "eval-front":
            point = int(event.key)
            worse = self._worse(outcome, point)
            if worse is not None and self._confirm != point:
                self._confirm = point  # measured worse: Enter again on it adopts it
                self.notify(
                    f"This point is measured worse than the setting evaluated: {worse}. "
                    "Enter again adopts it anyway.",
                    title="adopt",
                    severity="warning",
                )
                return
            self.dismiss(Choice(setting=outcome.front[point].setting))
        elif event.row_list.id == "eval-misses":
            self.dismiss(Choice(query=outcome.report.misses[int(event.key)].case.query))

    def _worse(self, outcome: Outcome, point: int) -> str | None:
        """Why front point ``point`` is measured worse than the setting evaluated (the rule
        every tuner shares, the core's ``setting_verdict``), or None."""
        if outcome.case_set is None:
            return None
        ws = self.lab.workspace
        new = outcome.front[point].setting
        verdict = setting_verdict(
            ws.engine, ws.catalog, ws.tokens, outcome.case_set, new, self.setting
        )
        return verdict.worse_text() if verdict.worse else None

    def on_row_list_highlighted(self, event: RowList.Highlighted) -> None:
        """The plot marks the front point under the list's cursor."""
        if event.row_list.id == "eval-front" and event.key is not None:
            self._plot(int(event.key))

    def action_close(self) -> None:
        self.whatifs.cancel()
        self.dismiss(None)
