"""The findings workers: the catalog's findings once per catalog, its unreachable tools once per
setting (when there are labelled cases). Both are thread workers; what they find goes to the
state (:meth:`LabState.advised`, :meth:`LabState.unreachable_found`) on the UI thread. The query's
findings need no worker: :meth:`LabState.type_query` reads the query with the catalog's reader.

- ``advice``: :func:`~workbench.tui.dashboard.advice.read_catalog` when a workspace opens on a
  catalog not read yet, one at a time: the newest catalog that arrived meanwhile is read next
  (a partial catalog that grew is read again, the ones in between are skipped).
- ``unreachable``: :func:`~workbench.tui.dashboard.advice.unreachable` on every setting
  announced and when the advice arrives; the next setting cancels it.
- ``cases``: :func:`~workbench.tui.dashboard.advice.read_cases` again once a label is saved (the
  cases the unreachable tools are measured on grew or shrank), then ``unreachable`` again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import cast

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from workbench.config.filtering import ToolFiltering
from workbench.evaluate import CaseSet, Finding
from workbench.tui.dashboard.advice import Advice, read_cases, read_catalog, unreachable
from workbench.tui.dashboard.state import LabState
from workbench.tui.dashboard.workers import report
from workbench.tui.lab import Lab
from workbench.tui.options import Options

#: The groups of the workers started here.
GROUPS = ("advice", "unreachable", "cases")
DONE = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)


class FindingsWorkers:
    """Reads each catalog once, and measures what the setting leaves unreachable."""

    def __init__(self, host: Screen[None], state: LabState, options: Options) -> None:
        self.host = host
        self.state = state
        self.options = options
        #: The catalog last handed to a worker (each is read once).
        self._read: object = None
        #: One catalog is read at a time (a thread cannot be stopped midway): a newer one waits
        #: here for its turn, replacing any that waited before it.
        self._reading = False
        self._next: Lab | None = None
        #: What each ``unreachable`` worker measured: (catalog, setting) by worker.
        self._measuring: dict[Worker[object], tuple[object, ToolFiltering]] = {}

    def subscribe(self) -> None:
        self.host.watch(self.state, "lab", self._opened, init=False)
        self.host.watch(self.state, "setting", self._measure, init=False)

    def _opened(self, lab: Lab | None) -> None:
        if lab is None or lab.workspace.catalog is self._read:
            return
        if self._reading:
            self._next = lab
            return
        self._read = lab.workspace.catalog
        self._reading = True
        self._thread(partial(read_catalog, lab, self.options.cases), "advice", "read the catalog")

    def _read_next(self) -> None:
        self._reading = False
        lab, self._next = self._next, None
        if lab is not None:
            self._opened(lab)

    def labels_saved(self) -> None:
        """A label reached the cases file: read the cases again (once the catalog's findings
        are in), then measure what the setting leaves unreachable with them."""
        advice, lab = self.state.advice, self.state.lab
        if advice is None or lab is None or advice.catalog is not lab.workspace.catalog:
            return
        work = partial(read_cases, lab, self.options.cases)
        worker = self._thread(work, "cases", "read the labelled cases again")
        self._measuring = {worker: (advice.catalog, self.state.setting)}

    def _measure(self, setting: ToolFiltering) -> None:
        advice, lab = self.state.advice, self.state.lab
        if advice is None or advice.cases is None or lab is None:
            return
        if advice.catalog is not lab.workspace.catalog:
            return
        work = partial(unreachable, lab, advice.cases, setting)
        worker = self._thread(work, "unreachable", "find unreachable tools")
        self._measuring = {worker: (advice.catalog, setting)}

    def _thread(self, work: Callable[[], object], name: str, description: str) -> Worker[object]:
        return self.host.run_worker(
            work,
            name=name,
            group=name,
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description=description,
        )

    def state_changed(self, event: Worker.StateChanged) -> None:
        worker, state = event.worker, event.state
        if worker.name == "advice" and state in DONE:
            self._read_next()
        if state == WorkerState.ERROR:
            report(self.host, self.state, worker)
        elif state != WorkerState.SUCCESS:
            return
        elif worker.name == "advice":
            self.state.advised(cast(Advice, worker.result))
            self._measure(self.state.setting)
        elif worker.name == "cases" and worker in self._measuring:
            catalog, _ = self._measuring.pop(worker)
            cases, error = cast(tuple[CaseSet | None, str | None], worker.result)
            advice = self.state.advice
            if advice is not None and advice.catalog is catalog:
                self.state.advised(replace(advice, cases=cases, cases_error=error))
                if cases is None:
                    self.state.unreachable_found(catalog, self.state.setting, [])
                self._measure(self.state.setting)
        elif worker.name == "unreachable" and worker in self._measuring:
            catalog, setting = self._measuring.pop(worker)
            self.state.unreachable_found(catalog, setting, cast(list[Finding], worker.result))
