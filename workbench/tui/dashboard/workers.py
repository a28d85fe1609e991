"""The lab's workers: scoring, embedding the tools, diagnosing. One place starts them and
handles what becomes of them.

- ``rank``: a thread worker scores the methods the cache lacks for :attr:`LabState.asked` and
  posts each ranking as it is ready (:class:`RankingsReady`). One runs at a time: a newer ask
  waits for it (only the newest waits), and it stops before its next method once a newer ask
  came. A worker per keystroke, each cancelling the group, cost every key as many cancels as
  workers still alive: a paste typed key by key took minutes.
- ``prepare``: a thread worker embeds every tool once when a workspace opens; when the tools'
  vectors all come from the disk cache, it loads the embedding model instead (seconds the first
  query would otherwise wait, unsaid), and the status line says so until it is ready.
- ``diagnose``: a thread worker runs the core's diagnostics on every setting announced.
- ``holo-engine`` (under the serve runtime, in place of ``prepare``'s embedding): a thread worker
  builds serve's engine for the workspace (the tools embedded through the disk cache, the model
  loaded); ``rank`` then scores a query's signals with it (:data:`~workbench.tui.lab.HOLO`).

Thread workers never touch a widget nor the state: they post messages, and the screen hands
them (and every ``Worker.StateChanged``) to :class:`LabWorkers` on the UI thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import cast

from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from workbench.config.filtering import ToolFiltering
from workbench.evaluate import diagnose
from workbench.runtimes.base import Runtime
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.embedders.local import load_model, model_to_load
from workbench.tui.dashboard.state import Ask, Diagnosed, LabState
from workbench.tui.lab import HOLO, HoloBuilt, Lab, build_holo
from workbench.tui.messages import EmbedderLoading, RankingsReady, SignalsScored

#: The groups of the workers started here.
GROUPS = ("rank", "prepare", "diagnose")
#: A worker in these states has ended (its thread too, unless cancelled while it ran).
ENDED = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)


class LabWorkers:
    """Starts the lab's workers on ``host`` and turns their results into state changes."""

    def __init__(self, host: Screen[None], state: LabState) -> None:
        self.host = host
        self.state = state
        self._rank_started = 0.0
        #: How many asks so far: a scoring thread stops once a newer one came.
        self._asked = 0
        #: The scoring worker running (one at a time), and the newest ask waiting for it.
        self._ranking: Worker[None] | None = None
        self._waiting: Callable[[], None] | None = None

    def subscribe(self) -> None:
        """Score what the state asks for; diagnose every setting it announces."""
        self.host.watch(self.state, "asked", self._score_missing, init=False)
        self.host.watch(self.state, "setting", self._diagnose, init=False)
        self.host.watch(self.state, "runtime", self._runtime_changed, init=False)

    # -- starting ------------------------------------------------------------------------------
    def _score_missing(self, ask: Ask | None) -> None:
        lab = self.state.lab
        if ask is None or lab is None:
            return
        missing = [
            m
            for m in ask.methods
            if (not lab.holo_scored(ask.query) if m == HOLO else lab.cached(ask.query, m) is None)
        ]
        if lab.holo is None and HOLO in missing:
            missing.remove(HOLO)  # scored once the engine is built (holo_ready asks again)
        if not missing:
            return
        self._rank_started = time.perf_counter()
        engine = lab.workspace.engine
        if not engine.prepared and any(m not in ("bm25", HOLO) for m in missing):
            model = lab.workspace.embedder.model_id
            self.state.say(f"embedding {len(lab.workspace.catalog):,} tools with {model}…")
        self._asked += 1
        work = partial(self._score, lab, ask.query, missing, self._asked)
        if self._ranking is not None:
            self._waiting = work  # after the one running (which stops at its next method)
        else:
            self._rank(work)

    def _rank(self, work: Callable[[], None]) -> None:
        self._waiting = None
        self._ranking = self.host.run_worker(
            work,
            name="rank",
            group="rank",
            thread=True,
            exit_on_error=False,
            description="score the query",
        )

    def prepare(self, lab: Lab) -> None:
        """Embed every tool of a workspace just opened, unless its engine already has; then
        load the model, if it is not yet, for the queries."""
        ws = lab.workspace
        if self.state.serve_engine:
            self._build_holo(lab)
            return
        if ws.engine.prepared:
            self._preload(lab)
            return
        self.state.say(f"embedding {len(ws.catalog):,} tools with {ws.embedder.model_id}…")
        self._thread(partial(self._prepare, lab), "prepare", "embed the tools")

    def _preload(self, lab: Lab) -> None:
        """Load the embedding model now if it is not yet (the tools' vectors came from the disk
        cache), so the first query does not wait for it unsaid."""
        model = model_to_load(lab.workspace.engine.embedder)
        if model is None:
            return
        self.state.say(f"loading embedding model {model}…")
        self.host.run_worker(
            partial(self._load_model, lab),
            name="load-model",
            group="prepare",
            thread=True,
            exit_on_error=False,
            description="load the embedding model",
        )

    def _runtime_changed(self) -> None:
        """The file now says serve runs the agent: build serve's engine for the lab open."""
        lab = self.state.lab
        if self.state.serve_engine and lab is not None and lab.holo is None:
            self._build_holo(lab)

    def _build_holo(self, lab: Lab) -> None:
        """Build serve's engine for a workspace just opened (its tools embedded, the model
        loaded), in a thread."""
        ws = lab.workspace
        model = ws.embedder.model_id
        with_model = f": embedding {len(ws.catalog):,} tools with {model}…" if model else "…"
        self.state.say(f"building serve's engine{with_model}")
        self.host.run_worker(
            partial(self._holo_engine, lab, self.state.runtime.plugin),
            name="holo-engine",
            group="prepare",
            thread=True,
            exit_on_error=False,
            description="build serve's engine",
        )

    def _diagnose(self, setting: ToolFiltering) -> None:
        lab = self.state.lab
        if lab is not None:
            diagnosis = partial(self._diagnosis, lab, setting, self.state.runtime)
            self._thread(diagnosis, "diagnose", "diagnose")

    def _thread(self, work: Callable[[], object], name: str, description: str) -> None:
        self.host.run_worker(
            work,
            name=name,
            group=name,
            thread=True,
            exclusive=True,
            exit_on_error=False,
            description=description,
        )

    # -- the workers (threads) -------------------------------------------------------------------
    def _score(self, lab: Lab, query: str, methods: Sequence[str], asked: int) -> None:
        """Score ``query`` by each method; post each ranking as it is ready (stops once a newer
        ask came, or the worker was cancelled)."""
        worker = get_current_worker()

        def superseded() -> bool:
            return worker.is_cancelled or self._asked != asked

        for method in methods:
            if superseded():
                return
            holo = lab.holo
            if method == HOLO and holo is not None:
                loading = model_to_load(holo.embedder)
                if loading is not None:
                    self.host.post_message(EmbedderLoading(query, loading))
                lab.score_holo(query)
                if superseded():
                    return
                self.host.post_message(SignalsScored(query))
                continue
            if method == HOLO:
                continue
            loading = model_to_load(lab.workspace.engine.embedder) if method != "bm25" else None
            if loading is not None:  # the engine's first embedding: the model loads (seconds)
                self.host.post_message(EmbedderLoading(query, loading))
            ranking = lab.rank(query, method)
            if superseded():
                return
            self.host.post_message(RankingsReady(query, {method: ranking}))

    @staticmethod
    def _load_model(lab: Lab) -> float:
        """Load the embedding model ahead of the first query, timed."""
        started = time.perf_counter()
        load_model(lab.workspace.engine.embedder)
        return time.perf_counter() - started

    @staticmethod
    def _holo_engine(lab: Lab, runtime: Runtime) -> HoloBuilt:
        """serve's engine for ``lab``'s workspace under what ``runtime`` runs now
        (:meth:`~workbench.runtimes.base.Runtime.lab_base`) with its tools embedded and the
        model loaded for the queries, timed."""
        started = time.perf_counter()
        base = runtime.lab_base(Path(lab.workspace.agent.path))
        engine = build_holo(lab.workspace, base)
        if engine.tool_error is None:
            load_model(engine.embedder)
        return HoloBuilt(lab, engine, base, time.perf_counter() - started)

    @staticmethod
    def _prepare(lab: Lab) -> float:
        """Embed every tool once (slow with a real model), timed."""
        started = time.perf_counter()
        lab.workspace.engine.prepare()
        return time.perf_counter() - started

    @staticmethod
    def _diagnosis(lab: Lab, setting: ToolFiltering, runtime: RuntimeInfo) -> Diagnosed:
        found = diagnose(lab.workspace, setting, usage=lab.usage, runtime=runtime)
        return Diagnosed(setting, found)

    # -- what became of them (UI thread) -----------------------------------------------------------
    def rankings_ready(self, message: RankingsReady) -> None:
        seconds = time.perf_counter() - self._rank_started
        self.state.arrived(message.query, list(message.rankings.values()), seconds)

    def signals_scored(self, message: SignalsScored) -> None:
        seconds = time.perf_counter() - self._rank_started
        self.state.holo_scored(message.query, seconds)

    def embedder_loading(self, message: EmbedderLoading) -> None:
        self.state.loading_model(message.query, message.model)

    def state_changed(self, event: Worker.StateChanged) -> None:
        worker, state = event.worker, event.state
        if worker is self._ranking and state in ENDED:
            self._ranking = None
            if self._waiting is not None:
                self._rank(self._waiting)
        if state == WorkerState.ERROR:
            self._failed(worker)
        elif state == WorkerState.SUCCESS:
            if worker.name == "load-model":
                self.state.model_ready()
            elif worker.name == "prepare":
                self.state.prepared(cast(float, worker.result))
                if self.state.lab is not None:
                    self._preload(self.state.lab)
            elif worker.name == "diagnose":
                self.state.diagnosed_as(cast(Diagnosed, worker.result))
            elif worker.name == "holo-engine":
                self.state.holo_ready(cast(HoloBuilt, worker.result))

    def _failed(self, worker: Worker[object]) -> None:
        message = failure(worker)
        if worker.name == "diagnose":
            self.state.diagnosed_as(Diagnosed(self.state.setting, error=message))
        elif worker.name == "rank":
            self.state.say(f"scoring failed: {message}", error=True)
        else:
            report(self.host, self.state, worker)


def failure(worker: Worker[object]) -> str:
    return str(worker.error) if worker.error is not None else "failed"


def report(host: Screen[None], state: LabState, worker: Worker[object]) -> None:
    """A worker failed: said on the status line and in a notification."""
    message = failure(worker)
    state.say(f"{worker.description or worker.name} failed: {message}", error=True)
    host.notify(message, title=f"{worker.name} failed", severity="error", timeout=10)
