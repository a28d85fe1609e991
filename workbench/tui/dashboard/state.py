"""The lab's state: everything the dashboard shows, in one object the panels watch.

:class:`LabState` holds reactive attributes (Textual ``var``s) and is changed only through its
methods: the query typed, a knob edited, a setting adopted, a workspace opened, rankings or
findings arrived, a server moved on. Panels subscribe with ``widget.watch(state, name, ...)``
(see :mod:`workbench.tui.dashboard.panels`); workers subscribe to :attr:`LabState.asked` (which
rankings are wanted) and :attr:`LabState.setting` (what to diagnose). The state never touches a
widget nor starts a worker.

The computing is the core's: :class:`~workbench.tui.lab.Lab` keeps the workspace, the setting
being tuned and the rankings cache; this object decides what of it is on screen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from pydantic import ValidationError
from textual.dom import DOMNode
from textual.reactive import var

from workbench.catalog import ServerStatus
from workbench.config import AgentConfig
from workbench.config.filtering import BLOCK_KEYS, SEARCH_METHODS, ToolFiltering
from workbench.evaluate import Finding
from workbench.evaluate.casestore import query_key
from workbench.runtimes.detect import RuntimeInfo, detect_runtime
from workbench.search.types import Ranking, Selection
from workbench.tui.dashboard.advice import Advice
from workbench.tui.dashboard.marks import Mark, marks, summary
from workbench.tui.lab import HOLO, HoloBuilt, HoloView, Lab

#: The tab whose view wants every method's ranking.
COMPARE_TAB = "tab-compare"
#: What the status line says while serve's engine is being built.
BUILDING = "building serve's engine…"


def file_setting_of(agent: AgentConfig) -> ToolFiltering:
    """The setting the agent's file holds (HoloDeck's defaults where it has no block)."""
    return agent.filtering or ToolFiltering()


@dataclass(frozen=True, eq=False)
class Shown:
    """What the ranking, the bill and the score strip draw (compared by identity: it holds
    arrays). ``ranking`` is None while no query is typed: the bill then counts every tool."""

    lab: Lab
    setting: ToolFiltering
    ranking: Ranking | None = None
    selection: Selection | None = None
    #: The same query as the one drawn before (a knob moved): the cursor stays on its tool.
    follow: bool = False
    #: Under serve's engine: the search with each tool's score split by signal (None:
    #: HoloDeck's ranking).
    split: HoloView | None = None


@dataclass(frozen=True)
class Ask:
    """Rankings wanted: ``query`` scored by each of ``methods`` (the current one first)."""

    query: str
    methods: tuple[str, ...]


@dataclass(frozen=True)
class Diagnosed:
    """The findings of one setting (a late result of an older setting is not shown), or why
    diagnosing failed."""

    setting: ToolFiltering
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class Servers:
    """Every tool source in the servers panel's order, with its tokens once counted."""

    statuses: tuple[ServerStatus, ...] = ()
    tokens: Mapping[str, int] = field(default_factory=dict)

    def get(self, name: str) -> ServerStatus | None:
        return next((s for s in self.statuses if s.name == name), None)

    @property
    def ok(self) -> int:
        return sum(1 for s in self.statuses if s.ok)


@dataclass(frozen=True)
class Status:
    """The line under the query: what scored the ranking, what is loading, what failed."""

    text: str
    error: bool = False


class LabState(DOMNode):
    """The query lab of one agent. Change it through its methods; watch its ``var``s."""

    #: The agent as read from its file (read again after a write-back).
    agent: var[AgentConfig] = var(cast(AgentConfig, None), init=False, always_update=True)
    #: The opened workspace with its rankings cache (None while the servers are listed).
    lab: var[Lab | None] = var(None, init=False, always_update=True)
    #: What the knobs hold; announced on every edit, even one that was refused.
    setting: var[ToolFiltering] = var(ToolFiltering(), init=False, always_update=True)
    #: What the file holds: the knobs mark what differs.
    file_setting: var[ToolFiltering] = var(ToolFiltering(), init=False)
    #: The query as typed.
    query_text: var[str] = var("", init=False)
    #: The rankings wanted now (workers score what the cache lacks).
    asked: var[Ask | None] = var(None, init=False, always_update=True)
    #: The ranking on screen and its selection.
    shown: var[Shown | None] = var(None, init=False, always_update=True)
    #: The diagnostics of the current setting.
    diagnosed: var[Diagnosed | None] = var(None, init=False, always_update=True)
    #: The catalog's findings, query reader and cases (None: being read).
    advice: var[Advice | None] = var(None, init=False, always_update=True)
    #: The findings of the query typed (unreadable, parameter-only).
    query_found: var[tuple[Finding, ...]] = var((), init=False)
    servers: var[Servers] = var(Servers(), init=False)
    status: var[Status] = var(Status(""), init=False)
    #: What runs the agent, and why (``--runtime``, else detected: docs/runtimes.md).
    runtime: var[RuntimeInfo] = var(cast(RuntimeInfo, None), init=False)
    #: The most important runtime caveat (None: none).
    banner: var[str | None] = var(None, init=False)
    #: The labelled queries of the cases file: ``{query_key: expected names}`` (a new mapping
    #: on every change; see :mod:`workbench.tui.dashboard.labels`).
    labels: var[Mapping[str, tuple[str, ...]]] = var(cast(Mapping[str, tuple[str, ...]], {}))

    def __init__(
        self,
        agent: AgentConfig,
        *,
        query: str = "",
        show_timing: bool = True,
        runtime: str | None = None,
    ) -> None:
        super().__init__()
        self.agent = agent
        #: ``--runtime`` (None: detected from the agent, again on every reload).
        self.runtime_flag = runtime
        self.runtime = detect_runtime(agent.path, agent.data, explicit=runtime)
        self.query_text = query
        self.setting = self.file_setting = file_setting_of(agent)
        self.show_timing = show_timing
        #: The compare tab is open: every method's ranking is wanted.
        self.comparing = False
        #: How long the last ranking of the current query took to arrive.
        self.rank_seconds: float | None = None
        #: The query whose ranking is drawn.
        self.shown_query = ""

    # -- the query ---------------------------------------------------------------------------
    def type_query(self, text: str) -> None:
        self.query_text = text
        self._read_query()
        self._ask()

    def _read_query(self) -> None:
        """What the runtime's BM25 can read of the query (cheap: the reader is per catalog)."""
        advice, lab = self.advice, self.lab
        if advice is None or lab is None:
            self.query_found = ()
            return
        embeds = self.setting.search_method != "bm25" and bool(lab.workspace.embedder.model_id)
        self.query_found = tuple(advice.reader.findings(self.query_text, embeds=embeds))

    @property
    def serve_engine(self) -> bool:
        """The lab ranks with serve's engine under the knobs (the runtime's ``lab_engine``)."""
        return self.runtime.plugin.lab_engine == HOLO

    def show_tab(self, tab: str | None) -> None:
        """A tab was opened: the compare tab wants every method's ranking."""
        self.comparing = tab == COMPARE_TAB
        if self.comparing:
            self._ask()

    def methods_wanted(self) -> tuple[str, ...]:
        """The current method first; all three when the compare view is open."""
        current = self.setting.search_method
        if self.serve_engine:  # the compare tab still shows HoloDeck's three methods
            return (HOLO, *SEARCH_METHODS) if self.comparing else (HOLO,)
        if self.comparing:
            return (current, *[m for m in SEARCH_METHODS if m != current])
        return (current,)

    # -- the setting -------------------------------------------------------------------------
    def edit(self, key: str, value: object) -> str | None:
        """One knob moved: the setting with it, validated by the setting's own rules. Returns
        why a value was refused (the setting is then announced unchanged)."""
        try:
            setting, error = self.setting.with_(**{key: value}), None
        except ValidationError as err:
            setting, error = self.setting, str(err.errors()[0]["msg"])
        self._announce(setting, rerank=key == "search_method")
        return error

    def toggle_always(self, tool: str) -> None:
        """Add ``tool`` to always_include, or take it out (once the workspace is open)."""
        if self.lab is not None:
            self._announce(self.lab.toggle_always(tool))

    def adopt(self, setting: ToolFiltering) -> None:
        """A whole setting at once (a point adopted from Evaluate)."""
        self._announce(setting, rerank=True)

    def revert(self) -> None:
        """The knobs back to the file's values."""
        if self.lab is not None:
            self.adopt(self.lab.file_setting)

    def changed(self) -> list[str]:
        """The ``tool_filtering`` keys whose knob differs from the file, in the block's order."""
        if self.lab is None:
            return []
        changed = self.lab.changed()
        return [key for key in BLOCK_KEYS if key in changed]

    def _announce(self, setting: ToolFiltering, *, rerank: bool = False) -> None:
        """The one way a setting change goes out: the knobs and the diagnostics follow it, the
        ranking is selected again (and scored again when the method may have no scores)."""
        if self.lab is not None:
            self.lab.setting = setting
        self.setting = setting
        if rerank:
            self._read_query()
            self._ask()
        else:
            self._reselect()

    # -- the file and the workspace -----------------------------------------------------------
    def reload(self, agent: AgentConfig) -> None:
        """The file was read again (after a write, or changed on disk): the knobs keep their
        values and are compared with what it holds now."""
        self.agent = agent
        serve_engine = self.serve_engine
        self.runtime = detect_runtime(agent.path, agent.data, explicit=self.runtime_flag)
        if self.lab is not None:
            self.lab.workspace = replace(self.lab.workspace, agent=agent)
        self.file_setting = file_setting_of(agent)
        # Another runtime may rank with another engine: then the query is ranked again.
        self._announce(self.setting, rerank=self.serve_engine != serve_engine)

    def open(self, lab: Lab) -> None:
        """A workspace was opened (the catalog so far, or the final one): it keeps the knobs'
        setting, even one moved while the servers were being listed."""
        lab.setting = self.setting
        self.lab = lab
        self.file_setting = lab.file_setting
        self._announce(self.setting, rerank=True)

    def prepared(self, seconds: float) -> None:
        """Every tool is embedded (or that failed): say so and rank with the embeddings."""
        if self.lab is None:
            return
        error = self.lab.workspace.engine.tool_embedding_error
        if error:
            self.say(f"tool embeddings failed: {error}", error=True)
        else:
            took = f" in {seconds:.1f}s" if self.show_timing else ""
            self.say(f"embedded {len(self.lab.workspace.catalog):,} tools{took}")
        self._ask()

    def holo_ready(self, built: HoloBuilt) -> None:
        """serve's engine is built for a lab (the tools embedded): rank with it under the
        settings it was built on, unless another workspace opened since."""
        lab, engine, seconds = built.lab, built.engine, built.seconds
        if self.lab is not lab:
            return
        lab.holo, lab.holo_base = engine, built.base
        if engine.tool_error:
            self.say(f"tool embeddings failed: {engine.tool_error}", error=True)
        else:
            took = f" in {seconds:.1f}s" if self.show_timing else ""
            self.say(f"serve's engine ready for {len(lab.workspace.catalog):,} tools{took}")
        self._ask()

    def holo_scored(self, query: str, seconds: float) -> None:
        """serve's engine scored ``query``: remembered, and drawn when it is the current one."""
        if self.lab is None or self.lab.holo is None:
            return
        self.lab.remember_holo(query)
        self.arrived(query, (), seconds)

    # -- rankings ----------------------------------------------------------------------------
    def _ask(self) -> None:
        """Show what is cached at once, and ask for what is missing (:attr:`asked`)."""
        if self.lab is None:
            return
        self._reselect()
        query = self.query_text.strip()
        if query:
            self.asked = Ask(query, self.methods_wanted())

    def arrived(self, query: str, rankings: Sequence[Ranking], seconds: float) -> None:
        """Rankings a worker scored: remembered, and drawn when they are the current query's."""
        if self.lab is None:
            return
        for ranking in rankings:
            self.lab.remember(ranking)
        if query == self.query_text.strip():
            self.rank_seconds = seconds
            self._reselect()

    def _reselect(self) -> None:
        """Select from the cached ranking of the current query under the current setting and
        show it (no scoring). Without one for a typed query, what is drawn stays."""
        lab = self.lab
        if lab is None:
            return
        setting = lab.setting
        query = self.query_text.strip()
        if self.serve_engine:
            self._reselect_holo(lab, setting, query)
            return
        ranking = lab.cached(query, setting.search_method) if query else None
        banner = lab.workspace.embedder.note
        if ranking is None:
            if not query:
                self.shown = Shown(lab, setting)
                self.say(f"{len(lab.workspace.catalog):,} tools · type a query")
            self.banner = banner
            return
        selection = lab.select(ranking)
        follow = ranking.query == self.shown_query
        self.shown_query = ranking.query
        self.shown = Shown(lab, setting, ranking, selection, follow)
        if ranking.fallback and not banner:
            banner = f"{ranking.requested} is really BM25 here: {ranking.fallback}"
        self.banner = banner
        self.say(self._scored_by(ranking, selection))

    def _reselect_holo(self, lab: Lab, setting: ToolFiltering, query: str) -> None:
        """:meth:`_reselect` under serve's engine: its search of the query under the knobs,
        fused from the signals scored (without them, what is drawn stays)."""
        view = lab.holo_view(query) if query else None
        self.banner = lab.workspace.embedder.serve_note
        if view is None:
            if not query:
                self.shown = Shown(lab, setting)
                tools = f"{len(lab.workspace.catalog):,} tools"
                self.say(f"{tools} · type a query" if lab.holo else f"{tools} · {BUILDING}")
            return
        model = lab.workspace.embedder.model_id if "dense" in view.raw else None
        ranking = view.ranking(setting.search_method, model)
        selection = view.selection()
        follow = ranking.query == self.shown_query
        self.shown_query = ranking.query
        self.shown = Shown(lab, setting, ranking, selection, follow, split=view)
        self.say(self._searched_by(view, selection))

    def _searched_by(self, view: HoloView, selection: Selection) -> str:
        """The status line under serve's engine: what a search returns (or that no tool fits),
        and which signals ranked it."""
        result, ranked = view.result, view.result.ranking
        took = ""
        if self.rank_seconds is not None and self.show_timing:
            took = f" · {self.rank_seconds * 1000:.0f} ms"
        signals = " + ".join(ranked.shares) or "no signal"
        threshold = view.settings.threshold
        if result.refused:
            head = "no tool fits"
            if threshold is not None and ranked.confidence < threshold:
                head += f": confidence {ranked.confidence:.2f} < threshold {threshold:.2f}"
        else:
            head = f"{len(result.indices)} returned of {ranked.found.size:,} found"
        pinned = f" · {len(view.pins)} pinned" if view.pins else ""
        text = f"{head}{pinned} · serve's engine: {signals}{took}"
        labelled = summary(self.marks(selection))
        return f"{labelled} · {text}" if labelled else text

    def _scored_by(self, ranking: Ranking, selection: Selection) -> str:
        model = ranking.model_id or ("BM25" if ranking.method == "bm25" else ranking.method)
        took = ""
        if self.rank_seconds is not None and self.show_timing:
            took = f" · {self.rank_seconds * 1000:.0f} ms"
        if not self.setting.enabled:
            text = f"{ranking.requested} by {model}{took} · enabled: false, so every tool is sent"
        else:
            sent, passing = len(selection.indices), selection.passing
            text = f"{sent} sent · {passing:,} pass · {ranking.requested} scored by {model}{took}"
        labelled = summary(self.marks(selection))  # first: the line is cut at the right
        return f"{labelled} · {text}" if labelled else text

    def model_ready(self) -> None:
        """The embedding model loaded ahead of the queries: the status line says what it said
        before (the ranking shown, or what to do)."""
        self._reselect()

    def loading_model(self, query: str, model: str) -> None:
        """Scoring ``query`` first loads the embedding model (seconds)."""
        if query == self.query_text.strip():
            self.say(f"loading embedding model {model}…")

    # -- labels ------------------------------------------------------------------------------
    def load_labels(self, labels: Mapping[str, tuple[str, ...]]) -> None:
        """The cases file's labels, read when the dashboard opens."""
        self.labels = dict(labels)
        self._reselect()

    def set_label(self, query: str, names: Sequence[str]) -> None:
        """``query``'s expected tools (none: unlabelled); the ranking is drawn again with its
        marks at once (the file is written after, by the labeller)."""
        key = query_key(query)
        labels = dict(self.labels)
        if names:
            labels[key] = tuple(names)
        else:
            labels.pop(key, None)
        self.labels = labels
        self._reselect()

    def expected(self) -> tuple[str, ...]:
        """The expected tools of the query in the lab (``()``: not labelled)."""
        return self.labels.get(query_key(self.query_text), ())

    def marks(self, selection: Selection | None) -> dict[int, Mark]:
        """The expected tools of the query in the lab by catalog index, each sent or missed by
        ``selection`` (every tool is sent while filtering is off)."""
        names = self.expected()
        if not names or self.lab is None or selection is None:
            return {}
        sent = set(selection.indices) if self.setting.enabled or self.serve_engine else None
        return marks(names, self.lab.workspace.catalog, sent)

    # -- findings, servers, the status line ----------------------------------------------------
    def diagnosed_as(self, diagnosed: Diagnosed) -> None:
        """Findings arrived: shown unless the setting moved on since (newer ones are coming)."""
        if diagnosed.error is not None or diagnosed.setting == self.setting:
            self.diagnosed = diagnosed

    def advised(self, advice: Advice) -> None:
        """The catalog's findings arrived: shown while it is still the catalog on screen."""
        if self.lab is not None and advice.catalog is self.lab.workspace.catalog:
            self.advice = advice
            self._read_query()

    def unreachable_found(
        self, catalog: object, setting: ToolFiltering, found: list[Finding]
    ) -> None:
        """The unreachable tools under ``setting``: shown unless the catalog or the setting
        moved on since."""
        advice = self.advice
        if advice is not None and advice.catalog is catalog and setting == self.setting:
            self.advice = replace(advice, setting=setting, unreachable=found)

    def say(self, text: str, *, error: bool = False) -> None:
        self.status = Status(text, error)

    def server_changed(self, status: ServerStatus) -> None:
        """A server moved on: its line is updated (or added at the end)."""
        statuses = {s.name: s for s in self.servers.statuses}
        statuses[status.name] = status
        self.servers = replace(self.servers, statuses=tuple(statuses.values()))

    def merge_servers(self, catalog_servers: Sequence[ServerStatus]) -> list[ServerStatus]:
        """A catalog's sources in its order; a server it shows still connecting (a catalog so
        far) keeps the state the listing has reported since."""
        now = {s.name: s for s in self.servers.statuses}
        merged = []
        for status in catalog_servers:
            known = now.get(status.name)
            if known is not None and status.state in ("pending", "connecting"):
                status = known
            merged.append(status)
        return merged

    def list_servers(self, statuses: Sequence[ServerStatus], tokens: Mapping[str, int]) -> None:
        """Every server at once, in the catalog's order, with its tokens (``{}``: not counted)."""
        self.servers = Servers(tuple(statuses), dict(tokens))
