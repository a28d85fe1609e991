"""The Evaluate view's what-if rows: changes outside the ``tool_filtering`` knobs, measured.

After an evaluation the view runs the core's :func:`workbench.evaluate.whatif.what_ifs` (what
``holo-tune tune`` and ``check`` print as their what-if rows: the same cases, the same folds, the
same default budget, the knobs' setting as the baseline, the workspace's embedder, the
dashboard's ``--usage``) in a thread worker of its own, so the metrics show while it measures.
It lists, as the CLI does, only the rows whose gain lies outside the error bars, with the gain,
its interval and how to get it; then the rows inside the bars, and what could not be measured
(e.g. no ``--embedder``). The worker never touches a widget; :meth:`WhatIfs.state_changed`
draws its end on the app's thread.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState, get_current_worker

from workbench.config.filtering import ToolFiltering
from workbench.errors import HoloTuneError
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.tuner import DEFAULT_FOLDS
from workbench.evaluate.whatif import WhatIfReport, what_ifs
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.types import IntArray
from workbench.tui.caseruns import Stopped
from workbench.workspace import Workspace

#: The worker's name and group.
WORKER = "what-if"
#: The section's title in the view.
TITLE = "what-if: changes outside the block, held-out"


@dataclass(frozen=True)
class Request:
    """What one measurement runs on: the evaluation's cases and setting."""

    cases: CaseSet
    setting: ToolFiltering


def measure(
    ws: Workspace,
    request: Request,
    usage: IntArray | None,
    on_progress: Callable[[int, int], None] | None = None,
) -> WhatIfReport:
    """The core's what-if rows, called as ``tune``/``check`` call them (``measure_what_ifs``):
    the default budget, :data:`DEFAULT_FOLDS` folds, the workspace's embedder if it embeds."""
    embedder = ws.embedder.spec if ws.embedder.embedder is not None else None
    return what_ifs(
        ws.engine,
        ws.catalog,
        ws.tokens,
        request.cases,
        request.setting,
        Budget(),
        agent=ws.agent.agent,
        embedder_spec=embedder,
        usage=usage,
        folds=DEFAULT_FOLDS,
        on_progress=on_progress,
    )


def why_not(request: Request, runtime: RuntimeInfo | None) -> str | None:
    """Why no what-if is measured for ``request`` (None: it is)."""
    if runtime is not None and not runtime.reads_tool_filtering:
        return (
            f"not measured: the what-if rows are changes around the tool_filtering block, which "
            f"{runtime.name} does not read"
        )
    if len(request.cases) < DEFAULT_FOLDS:
        return (
            f"not measured: each row is a held-out tuning run, which needs at least "
            f"{DEFAULT_FOLDS} cases (one per fold); these are {len(request.cases)}"
        )
    return None


def setting_text(s: ToolFiltering) -> str:
    """A what-if's setting on one line (the knobs it differs in: always_include, top_n_used)."""
    text = f"{s.search_method}, top_k {s.top_k}, threshold {s.similarity_threshold:.2f}"
    if s.always_include:
        text += f", always_include [{', '.join(s.always_include)}]"
    if s.always_include_top_n_used:
        text += f", top_n_used {s.always_include_top_n_used}"
    return text


def report_text(report: WhatIfReport) -> Text:
    """The rows as the CLI's what-if text says them: the listed ones with their setting and how,
    then those inside the error bars, then what was not measured (pure)."""
    base = report.baseline.heldout
    text = Text(
        f"against the tuner's proposal from this setting (held-out recall {base.recall:.3f}); "
        "listed when the gain is outside the error bars\n",
        "dim",
    )
    for row in report.listed:
        low, high = row.interval
        text.append("▲ ", "bold green")
        text.append(f"{row.change}: ", "bold")
        text.append(
            f"recall {row.baseline.recall:.3f} → {row.heldout.recall:.3f} "
            f"({row.gain:+.3f}, 95% CI {low:+.3f}..{high:+.3f}) at "
            f"{row.heldout.tokens_selected_mean:,.0f} tokens per request\n"
        )
        text.append(f"  setting {setting_text(row.setting)}\n", "dim")
        text.append(f"  how {row.how}\n")
    for row in report.rows:
        if not row.significant:
            low, high = row.interval
            text.append(
                f"(not listed) {row.change}: {row.gain:+.3f} recall, inside the error bars "
                f"(95% CI {low:+.3f}..{high:+.3f})\n",
                "dim",
            )
    for why in report.unmeasured:
        text.append(f"(not measured) {why}\n", "yellow")
    if not report.rows and not report.unmeasured:
        text.append("none applies to this agent\n", "dim")
    text.rstrip()
    return text


class WhatIfs:
    """The what-if section of a view: starts the measurement, draws its end."""

    def __init__(self, screen: Screen[Any], target: str) -> None:
        self.screen = screen
        self.target = target
        #: The last measurement (None: none finished).
        self.report: WhatIfReport | None = None

    def show(self, text: str | Text) -> None:
        self.screen.query_one(self.target, Static).update(text)

    def start(
        self,
        ws: Workspace,
        request: Request,
        usage: IntArray | None,
        runtime: RuntimeInfo | None,
    ) -> None:
        """Measure ``request`` in a thread worker (a measurement under way is cancelled)."""
        self.report = None
        reason = why_not(request, runtime)
        if reason is not None:
            self.cancel()
            self.show(Text(reason, "dim"))
            return
        self.show(Text("measuring… (each row is a held-out tuning run on these cases)", "dim"))
        self.screen.run_worker(
            partial(self._run, ws, request, usage),
            name=WORKER,
            group=WORKER,
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description="what-if rows on the cases",
        )

    @staticmethod
    def _run(ws: Workspace, request: Request, usage: IntArray | None) -> WhatIfReport:
        worker = get_current_worker()

        def stop_when_cancelled(done: int, total: int) -> None:
            if worker.is_cancelled:
                raise Stopped

        return measure(ws, request, usage, stop_when_cancelled)

    def waiting(self) -> None:
        """A new evaluation started: the rows of the last one no longer apply."""
        self.cancel()
        self.report = None
        self.show(Text("after the evaluation", "dim"))

    def cancel(self) -> None:
        self.screen.workers.cancel_group(self.screen, WORKER)

    def state_changed(self, event: Worker.StateChanged) -> bool:
        """Draw the end of a what-if worker; False when the event is another worker's."""
        worker: Worker[Any] = event.worker
        if worker.name != WORKER:
            return False
        if event.state == WorkerState.ERROR:
            err = worker.error
            text = str(err) if isinstance(err, HoloTuneError) else f"what-if failed: {err}"
            self.show(Text(f"✗ {text}", "bold red"))
        elif event.state == WorkerState.SUCCESS:
            report = worker.result
            assert isinstance(report, WhatIfReport)
            self.report = report
            self.show(report_text(report))
        return True
