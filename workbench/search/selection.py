"""What the runtime sends for a query: HoloDeck's ``ToolFilterManager.filter_tools``, step by step.

1. ``always_include``: per entry, the first tool in catalog order whose full name equals the entry
   or ends with ``-<entry>``.
2. ``always_include_top_n_used``: the N most used tools (stable sort by use count, so a cold
   runtime adds the first N tools of the catalog).
3. If slots remain: the ranked tools scoring at least the threshold, the first ``remaining +
   already included`` of them (the runtime's over-fetch), added in rank order, skipping tools
   already in, until ``top_k`` tools are in.

This runs on every knob change, so it never scores: it reads a cached :class:`Ranking`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.search.types import IntArray, Ranking, Reason, Selection


def select(
    ranking: Ranking,
    setting: ToolFiltering,
    catalog: Catalog,
    usage: IntArray | None = None,
) -> Selection:
    """The tools HoloDeck would send for ``ranking``'s query under ``setting``.

    ``usage`` holds each catalog tool's use count (None: a runtime just started, all zero).
    """
    chosen: dict[int, Reason] = {}
    names = _names(catalog)
    for entry in setting.always_include:
        index = names.match(entry)
        if index is not None and index not in chosen:
            chosen[index] = "always_include"
    for index in top_n_used(setting.always_include_top_n_used, len(catalog), usage):
        chosen.setdefault(index, "top_n_used")
    threshold = setting.similarity_threshold
    passing = int(np.count_nonzero(ranking.scores >= threshold))
    remaining = max(0, setting.top_k - len(chosen))
    if remaining > 0:
        # Ranked best first, so the tools that pass the threshold are a prefix of the order.
        fetched = ranking.order[: min(passing, remaining + len(chosen))]
        for index in fetched.tolist():
            if len(chosen) >= setting.top_k:
                break
            if index not in chosen:
                chosen[index] = "search"
    return Selection(indices=tuple(chosen), reasons=chosen, passing=passing)


def top_n_used(n: int, size: int, usage: IntArray | None = None) -> list[int]:
    """The runtime's ``get_top_n_used``: by use count descending, ties in catalog order."""
    if n <= 0 or size == 0:
        return []
    if usage is None or not usage.any():
        return list(range(min(n, size)))
    order: list[int] = np.argsort(-usage, kind="stable")[:n].tolist()
    return order


def match_always_include(catalog: Catalog, entry: str) -> int | None:
    """Catalog index of the tool an ``always_include`` entry picks (None: it matches none)."""
    return _names(catalog).match(entry)


def ranked(ranking: Ranking, catalog: Catalog, limit: int | None = None) -> list[tuple[str, float]]:
    """``[(full_name, score)]`` best first in the runtime's tie order (the first ``limit``)."""
    order = ranking.order if limit is None else ranking.order[: max(0, limit)]
    tools = catalog.tools
    scores = ranking.scores
    return [(tools[i].full_name, float(scores[i])) for i in order.tolist()]


@dataclass
class _NameIndex:
    """First catalog position of every full name and every ``-``-suffix of one (built once)."""

    catalog: Catalog
    size: int
    first: dict[str, int]

    def match(self, entry: str) -> int | None:
        return self.first.get(entry)


_NAME_INDEXES: dict[int, _NameIndex] = {}
_NAME_INDEX_LIMIT = 8


def _names(catalog: Catalog) -> _NameIndex:
    """The catalog's name index, cached while the catalog object lives and keeps its size."""
    cached = _NAME_INDEXES.get(id(catalog))
    if cached is not None and cached.catalog is catalog and cached.size == len(catalog.tools):
        return cached
    first: dict[str, int] = {}
    for index, tool in enumerate(catalog.tools):
        name = tool.full_name
        # An entry matches `name` itself or any text after one of its dashes (endswith "-entry").
        keys = [name] + [name[at + 1 :] for at, char in enumerate(name) if char == "-"]
        for key in keys:
            first.setdefault(key, index)
    if len(_NAME_INDEXES) >= _NAME_INDEX_LIMIT:
        _NAME_INDEXES.pop(next(iter(_NAME_INDEXES)))
    built = _NameIndex(catalog=catalog, size=len(catalog.tools), first=first)
    _NAME_INDEXES[id(catalog)] = built
    return built


def search_cut(ranking: Ranking, selection: Selection) -> int:
    """Where the search stopped, as a position in the ranking (for drawing the cut line).

    Tools ranked before it were taken by the search or were already in; from it on, the search
    took none: either top_k was reached or the scores fell under the threshold.
    """
    searched = [i for i, why in selection.reasons.items() if why == "search"]
    if not searched:
        return 0
    positions = np.flatnonzero(np.isin(ranking.order, np.asarray(searched)))
    return int(positions.max()) + 1
