"""The run loop the case-running views share (Evaluate, Compare engines, Which runtime?).

A view has a cases path :class:`~textual.widgets.Input` (``#<prefix>-cases``, on the CLI's
default cases until one is typed), a :class:`~textual.widgets.ProgressBar` and a status line
(``#<prefix>-status``), composed by :meth:`CaseRunScreen.run_header`. Enter in the path
(or the view's run binding) starts one exclusive thread worker that calls the core; the worker
posts progress and never touches a widget; its end is handled here in one
``Worker.StateChanged`` handler: an error is said on the status line, a cancel says "stopped", a
result goes to the view's :meth:`CaseRunScreen.show_outcome`.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Input, ProgressBar, Static
from textual.worker import Worker, WorkerState

from workbench.errors import HoloTuneError
from workbench.runtimes.detect import RuntimeInfo
from workbench.tui.caseruns import (
    CasesMemory,
    RunProgress,
    nothing_to_run,
    source_text,
    view_default,
)
from workbench.tui.lab import Lab

ResultT = TypeVar("ResultT")
OutcomeT = TypeVar("OutcomeT")


class CaseRunScreen(Screen[ResultT], Generic[ResultT, OutcomeT]):
    """A view that runs labelled cases in a worker and shows the outcome."""

    #: Widget id prefix: ``#<prefix>-cases``, ``#<prefix>-status``.
    PREFIX: ClassVar[str]
    #: The view's name, on the cases input's border with how to run it.
    VIEW: ClassVar[str]
    #: The screen's id.
    SCREEN_ID: ClassVar[str]
    #: The worker's name and group.
    WORKER: ClassVar[str]
    #: What the worker does (Textual's worker description).
    DESCRIPTION: ClassVar[str]
    #: How an unexpected failure starts on the status line.
    FAILED: ClassVar[str]

    def __init__(
        self,
        lab: Lab,
        agent_path: Path,
        memory: CasesMemory | None = None,
        runtime: RuntimeInfo | None = None,
    ) -> None:
        super().__init__(id=self.SCREEN_ID)
        self.lab = lab
        self.agent_path = agent_path
        #: What runs the agent (the views that say or measure by it read it).
        self.runtime = runtime
        #: The path typed, kept by the dashboard for the next time the view opens.
        self.memory = memory or CasesMemory()
        self._opened_on = ""
        self.outcome: OutcomeT | None = None
        #: The path of the last run (its source is said with the outcome).
        self.ran_path = ""

    # -- what a view provides ---------------------------------------------------------------
    def default_path(self) -> str:
        """The path the view opens on while none has been typed: the CLI's default cases."""
        return view_default(self.lab.workspace.agent, self.cases_flag())

    def run_cases(self, path: str) -> OutcomeT:
        """Thread worker body: core calls only (progress through ``progress_poster``)."""
        raise NotImplementedError

    def show_outcome(self, outcome: OutcomeT) -> None:
        """Draw a finished run (on the app's thread)."""
        raise NotImplementedError

    # -- the loop -------------------------------------------------------------------------
    def cases_flag(self) -> Path | None:
        """The dashboard's ``--cases FILE`` (the app's options), if any."""
        options = getattr(self.app, "options", None)
        flag = getattr(options, "cases", None)
        return Path(flag) if flag is not None else None

    def source_line(self, path: str | None = None) -> str:
        """Where the cases of ``path`` (default: the path the view opened on) come from."""
        value = self._opened_on if path is None else path
        return source_text(value, self.lab.workspace.agent, self.cases_flag())

    def cases_input(self) -> Input:
        """The cases path input, on the path last typed (in this view or the other), else on
        the file a label was saved to in this session, else on the view's
        :meth:`default_path`."""
        typed = self.memory.path
        if typed is not None:
            self._opened_on = typed
        elif self.memory.labels is not None:
            self._opened_on = str(self.memory.labels)
        else:
            self._opened_on = self.default_path()
        field = Input(self._opened_on, id=f"{self.PREFIX}-cases")
        field.border_title = f"{self.VIEW} · cases file (Enter or ctrl+g runs)"
        return field

    def run_header(self) -> ComposeResult:
        """The cases path and the progress bar side by side (``#<prefix>-top``), then the status
        line: the first rows of the view's :meth:`compose`."""
        with Horizontal(id=f"{self.PREFIX}-top"):
            yield self.cases_input()
            yield from self.more_inputs()
            yield ProgressBar(id=f"{self.PREFIX}-progress", show_eta=False)
        yield Static("", id=f"{self.PREFIX}-status")

    def more_inputs(self) -> ComposeResult:
        """The view's own inputs, between the cases path and the progress bar (none here)."""
        yield from ()

    def status(self, text: str | Text) -> None:
        self.query_one(f"#{self.PREFIX}-status", Static).update(text)

    def on_input_changed(self, event: Input.Changed) -> None:
        # The input announces the value it opens on too: that is no path typed, and another
        # view's default must not become this one's.
        if event.input.id == f"{self.PREFIX}-cases" and (
            self.memory.path is not None or event.value != self._opened_on
        ):
            self.memory.path = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == f"{self.PREFIX}-cases":
            self.action_run()

    def action_run(self) -> None:
        path = self.query_one(f"#{self.PREFIX}-cases", Input).value.strip()
        problem = nothing_to_run(path, self.lab.workspace.agent)
        if problem is not None:  # nothing is run, and the last results stay
            self.status(Text(f"✗ {problem}", style="bold red"))
            return
        self.ran_path = path
        self.status("running…")
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.run_worker(
            partial(self.run_cases, path),
            name=self.WORKER,
            group=self.WORKER,
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description=self.DESCRIPTION,
        )

    def on_run_progress(self, message: RunProgress) -> None:
        self.query_one(ProgressBar).update(total=message.total, progress=message.done)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker: Worker[Any] = event.worker
        if worker.name != self.WORKER:
            return
        if event.state == WorkerState.ERROR:
            err = worker.error
            text = str(err) if isinstance(err, HoloTuneError) else f"{self.FAILED}: {err}"
            self.status(Text(f"✗ {text}", style="bold red"))
        elif event.state == WorkerState.CANCELLED:
            self.status("stopped")
        elif event.state == WorkerState.SUCCESS:
            outcome = cast(OutcomeT, worker.result)
            self.outcome = outcome
            self.show_outcome(outcome)
