"""The query lab's computing side, free of textual: the opened workspace, the setting being tuned,
and the rankings already computed (so a knob change re-selects from cached scores without
re-scoring). What the dashboard shows of it is :mod:`workbench.tui.dashboard.state`.

Scoring and selection are calls into the core (``HoloDeckEngine.rank``, ``selection.select``);
this class only remembers their results. Under the serve runtime the lab also holds serve's own
engine (:class:`~workbench.search.holo.engine.HoloEngine`, built in a worker by
:func:`build_holo`): it scores a query's signals once (:meth:`Lab.score_holo`, in a worker) and
ranks and searches under the knobs from them (:meth:`Lab.holo_view`, cheap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.config.filtering import BLOCK_KEYS, ToolFiltering
from workbench.search.holo.engine import NAME, HoloEngine, HoloResult
from workbench.search.holo.knobs import knob_settings
from workbench.search.holo.settings import HoloSettings
from workbench.search.lru import LRU
from workbench.search.selection import match_always_include, select
from workbench.search.types import FloatArray, IntArray, Ranking, Reason, Selection
from workbench.workspace import Workspace

#: How many (query, method) rankings stay cached: enough for a typing session and the history.
CACHE_SIZE = 256
#: The method name of serve's engine in the lab (its rankings are not HoloDeck's).
HOLO = NAME


def build_holo(workspace: Workspace, base: HoloSettings | None = None) -> HoloEngine:
    """serve's engine for ``workspace`` (its catalog, tokens, embedder and vector cache), with
    the tools embedded (slow with a model: call from a thread worker)."""
    settings = base or HoloSettings()
    engine = HoloEngine(
        workspace.catalog,
        np.asarray(workspace.tokens.per_tool, dtype=np.float64),
        workspace.embedder.embedder,
        fields=settings.fields,
        embedding_cache=workspace.embedder.cache,
    )
    engine.prepare()
    return engine


@dataclass(frozen=True, eq=False)
class HoloBuilt:
    """serve's engine built for ``lab`` in a worker (:func:`build_holo`), the settings it was
    built under (``base``: what the runtime runs now, None for the defaults) and the seconds it
    took."""

    lab: Lab
    engine: HoloEngine
    base: HoloSettings | None
    seconds: float


@dataclass(frozen=True, eq=False)
class HoloView:
    """One query through serve's engine under the knobs: what a search returns (``result``,
    whose ``ranking`` holds every tool's fused score and each signal's share), the settings it
    ran under, the pins' catalog indices, and each query signal's raw scores."""

    result: HoloResult
    settings: HoloSettings
    pins: tuple[int, ...]
    raw: dict[str, FloatArray]
    #: ``dense`` (the best cosine) or ``lexical`` (the share of the query's words the best
    #: tool has): what the confidence is.
    confidence_of: str

    @property
    def refused(self) -> bool:
        return self.result.refused

    def ranking(self, requested: str, model_id: str | None) -> Ranking:
        """The fused scores as the lab's ranking (method ``holo``)."""
        ranked = self.result.ranking
        return Ranking(
            ranked.query, requested, HOLO, ranked.scores, ranked.order, model_id=model_id
        )

    def selection(self) -> Selection:
        """What the request after the search carries: the pins, then the tools returned."""
        reasons: dict[int, Reason] = {i: "always_include" for i in self.pins}
        for i in self.result.indices:
            reasons.setdefault(int(i), "search")
        return Selection(tuple(reasons), reasons, passing=int(self.result.ranking.found.size))


@dataclass
class Lab:
    """One workspace under tuning: ``setting`` is what the knobs hold; the YAML holds
    ``file_setting``."""

    workspace: Workspace
    setting: ToolFiltering
    usage: IntArray | None = None
    #: serve's engine (under the serve runtime, once built: None before).
    holo: HoloEngine | None = None
    #: What the knobs do not set of serve's engine (:func:`knob_settings`' base).
    holo_base: HoloSettings | None = None
    _cache: LRU[tuple[str, str], Ranking] = field(default_factory=lambda: LRU(CACHE_SIZE))
    #: The queries whose signals serve's engine has scored.
    _holo_scored: LRU[str, bool] = field(default_factory=lambda: LRU(CACHE_SIZE))

    @classmethod
    def open(cls, workspace: Workspace, usage: IntArray | None = None) -> Lab:
        return cls(workspace=workspace, setting=workspace.setting, usage=usage)

    @property
    def file_setting(self) -> ToolFiltering:
        return self.workspace.setting

    def changed(self) -> set[str]:
        """The ``tool_filtering`` keys whose value differs from the file's."""
        mine, theirs = self.setting.block(), self.file_setting.block()
        return {key for key in BLOCK_KEYS if mine[key] != theirs[key]}

    def edit(self, key: str, value: Any) -> ToolFiltering:
        """Apply one knob change (validated by the setting's own rules) and return the setting."""
        self.setting = self.setting.with_(**{key: value})
        return self.setting

    def toggle_always(self, tool: str) -> ToolFiltering:
        """Add ``tool`` to ``always_include``, or remove it (and bare-name entries naming it)."""
        entries = list(self.setting.always_include)
        bare = tool.split("-", 1)[1] if "-" in tool else tool
        kept = [e for e in entries if e not in (tool, bare)]
        if len(kept) == len(entries):
            kept.append(tool)
        return self.edit("always_include", kept)

    # -- rankings ---------------------------------------------------------------------------
    def cached(self, query: str, method: str) -> Ranking | None:
        return self._cache.get((query, method))

    def remember(self, ranking: Ranking) -> None:
        self._cache.put((ranking.query, ranking.requested), ranking)

    def rank(self, query: str, method: str) -> Ranking:
        """Score ``query`` (slow for semantic: call from a thread worker). Not cached here."""
        return self.workspace.engine.rank(query, method)

    def select(self, ranking: Ranking) -> Selection:
        """What the runtime would send for ``ranking`` under the current setting."""
        return select(ranking, self.setting, self.workspace.catalog, self.usage)

    # -- serve's engine ----------------------------------------------------------------------
    def holo_settings(self) -> HoloSettings:
        """serve's engine settings under the knobs (:func:`knob_settings`)."""
        return knob_settings(self.setting, self.holo_base)

    def holo_scored(self, query: str) -> bool:
        return self.holo is not None and query in self._holo_scored

    def score_holo(self, query: str) -> None:
        """Score ``query``'s signals with serve's engine (slow with a model: call from a thread
        worker); the engine keeps them, and every knob after is a fusion of them
        (:meth:`holo_view`) once :meth:`remember_holo` is told."""
        if self.holo is not None:
            self.holo.signals(query)

    def remember_holo(self, query: str) -> None:
        """``query``'s signals are scored (on the UI thread, after :meth:`score_holo`)."""
        self._holo_scored.put(query, True)

    def holo_view(self, query: str) -> HoloView | None:
        """``query`` searched by serve's engine under the knobs, from its scored signals (None:
        the engine is not built or the query not scored yet)."""
        engine = self.holo
        if engine is None or query not in self._holo_scored:
            return None
        settings = self.holo_settings()
        catalog = self.workspace.catalog
        found = (match_always_include(catalog, entry) for entry in settings.pins)
        pins = tuple(dict.fromkeys(i for i in found if i is not None))
        signals = engine.signals(query)
        return HoloView(
            engine.search(query, settings), settings, pins, dict(signals.raw), signals.confidence_of
        )
