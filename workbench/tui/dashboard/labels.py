"""Labelling while testing: ``space`` marks the highlighted tool as expected for the query in the
lab, or unmarks it; the case is saved at once to the agent's cases file.

- The labels live on :attr:`LabState.labels` (``{query_key: expected names}``), read from the
  cases file when the dashboard opens; the panels draw their marks from it (:mod:`.marks`):
  ✓ an expected tool the setting sends, ✗ one it misses.
- :class:`Labeller` changes the state at once (the mark is drawn in the keystroke's step) and
  writes the file in a thread worker through the core's
  :func:`~workbench.evaluate.casestore.set_expected` (round-trip, atomic, the file created with
  a header on the first label, the case removed with its last tool). A write that fails puts
  the query's labels back as the file holds them and says why in one line.
- Writes are serialised and each writes the query's latest labels: two quick presses never
  leave the older one on disk.

The file is the one ``--cases`` names, else ``<agent stem>.cases.yaml`` beside the agent: the
default the Evaluate and Compare-engines views open on, so the next run measures the new case.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from workbench.errors import HoloTuneError
from workbench.evaluate.casesource import default_cases_path
from workbench.evaluate.casestore import load_expected, query_key, set_expected
from workbench.tui.caseruns import CasesMemory
from workbench.tui.dashboard.marks import toggled

if TYPE_CHECKING:
    from workbench.tui.dashboard.state import LabState

#: The group of the workers that write labels.
GROUP = "label"
GROUPS = (GROUP,)
#: A write's worker is named after its query (its key follows this).
WORKER_PREFIX = "label "
Severity = Literal["information", "warning", "error"]


# -- the file ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Saved:
    """What one write did: the query's labels now on disk, or why they are not."""

    key: str
    query: str
    names: tuple[str, ...]
    error: str | None = None


class Labeller:
    """Loads the labels when the dashboard opens and saves each change, from ``host``."""

    def __init__(
        self, host: Screen[None], state: LabState, cases: Path | None, memory: CasesMemory
    ) -> None:
        self.host = host
        self.state = state
        #: The views' cases memory: once a label is saved they open on its file.
        self.memory = memory
        #: The cases file labels are saved to.
        self.path = Path(cases) if cases is not None else default_cases_path(state.agent.path)
        #: The agent a new file's header names (the worker reads nothing of the state).
        self._agent = Path(state.agent.path).name
        #: What the file holds per query, as last read or written (a failed write goes back).
        self._saved: dict[str, tuple[str, ...]] = {}
        #: The latest labels wanted per query, not yet written.
        self._pending: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read the cases file (missing: no labels yet; unreadable: said, and no labels)."""
        try:
            self._saved = load_expected(self.path)
        except HoloTuneError as err:
            self._say(f"labels not loaded: {err}", severity="warning")
            self._saved = {}
        self.state.load_labels(self._saved)

    def toggle(self, tool: str) -> None:
        """Mark ``tool`` as expected for the query in the lab, or unmark it; saved at once."""
        lab, query = self.state.lab, self.state.query_text.strip()
        if not query:
            self._say("Type a query first: a label is a query and the tools it needs.")
            return
        if lab is None:
            self._say("The catalog is still loading.")
            return
        if self.state.shown_query != query:  # the tool highlighted is another query's
            self._say("The query is still being ranked: label it once its ranking shows.")
            return
        names = toggled(self.state.expected(), lab.workspace.catalog, tool)
        key = query_key(query)
        self.state.set_label(query, names)
        with self._lock:
            self._pending[key] = (query, names)
        self.host.run_worker(
            lambda: self._write(key),
            name=WORKER_PREFIX + key,
            group=GROUP,
            thread=True,
            exit_on_error=False,
            description="save a label to the cases file",
        )

    def _write(self, key: str) -> Saved | None:
        """Thread worker: write the query's latest labels (None: a later worker wrote them)."""
        with self._lock:
            wanted = self._pending.pop(key, None)
            if wanted is None:
                return None
            query, names = wanted
            try:
                written = set_expected(self.path, query, names, agent_name=self._agent)
            except (HoloTuneError, OSError) as err:
                return Saved(key, query, names, " ".join(str(err).split()))
            return Saved(key, query, written)

    def state_changed(self, event: Worker.StateChanged) -> bool:
        """A write ended: remember what the file holds, or put the labels back and say why.
        True when a write reached the file."""
        worker = event.worker
        if event.state == WorkerState.ERROR:  # not an I/O error: a bug, said, never a crash
            key = (worker.name or "").removeprefix(WORKER_PREFIX)
            saved: object = Saved(key, key, (), " ".join(str(worker.error).split()) or "failed")
        elif event.state == WorkerState.SUCCESS:
            saved = worker.result
        else:
            return False
        if not isinstance(saved, Saved):
            return False
        if saved.error is None:
            self._saved[saved.key] = saved.names
            self.memory.labels = self.path
        else:
            self._say(f"label not saved: {saved.error}", severity="error")
        with self._lock:
            newer = saved.key in self._pending
        on_disk = self._saved.get(saved.key, ())
        if not newer and self.state.labels.get(saved.key, ()) != on_disk:
            self.state.set_label(saved.query, on_disk)  # the marks show what the file holds
        return saved.error is None

    def _say(self, text: str, *, severity: Severity = "information") -> None:
        self.host.notify(text, title="label", severity=severity)
