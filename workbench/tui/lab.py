"""The query lab's computing side, free of textual: the opened workspace, the setting being tuned,
and the rankings already computed (so a knob change re-selects from cached scores without
re-scoring). What the dashboard shows of it is :mod:`workbench.tui.dashboard.state`.

Scoring and selection are calls into the core (``HoloDeckEngine.rank``, ``selection.select``);
this class only remembers their results.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from workbench.config.filtering import BLOCK_KEYS, ToolFiltering
from workbench.search.selection import select
from workbench.search.types import IntArray, Ranking, Selection
from workbench.workspace import Workspace

#: How many (query, method) rankings stay cached: enough for a typing session and the history.
CACHE_SIZE = 256


@dataclass
class Lab:
    """One workspace under tuning: ``setting`` is what the knobs hold; the YAML holds
    ``file_setting``."""

    workspace: Workspace
    setting: ToolFiltering
    usage: IntArray | None = None
    _cache: OrderedDict[tuple[str, str], Ranking] = field(default_factory=OrderedDict)

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
        hit = self._cache.get((query, method))
        if hit is not None:
            self._cache.move_to_end((query, method))
        return hit

    def remember(self, ranking: Ranking) -> None:
        self._cache[(ranking.query, ranking.requested)] = ranking
        self._cache.move_to_end((ranking.query, ranking.requested))
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    def forget_rankings(self) -> None:
        """Drop every cached ranking (the catalog or the embedder changed)."""
        self._cache.clear()

    def rank(self, query: str, method: str) -> Ranking:
        """Score ``query`` (slow for semantic: call from a thread worker). Not cached here."""
        return self.workspace.engine.rank(query, method)

    def select(self, ranking: Ranking) -> Selection:
        """What the runtime would send for ``ranking`` under the current setting."""
        return select(ranking, self.setting, self.workspace.catalog, self.usage)
