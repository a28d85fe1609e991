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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.search.types import IntArray, Ranking, Reason, Selection

#: The rule that stops the search: the slots (``top_k``) or the scores (``threshold``).
CutRule = Literal["top_k", "threshold"]


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


def always_included(catalog: Catalog, entries: Iterable[str]) -> list[int]:
    """The catalog indices the ``always_include`` entries pick, in catalog order (entries that
    match no tool are left out)."""
    found = (match_always_include(catalog, entry) for entry in entries)
    return sorted({i for i in found if i is not None})


def pinned_indices(catalog: Catalog, entries: Iterable[str]) -> list[int]:
    """The catalog indices the pins name (full or bare names, matched as ``always_include``
    entries are), in the order given, each once; a name that matches no tool is left out."""
    found = (match_always_include(catalog, entry) for entry in entries)
    return list(dict.fromkeys(i for i in found if i is not None))


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


@dataclass(frozen=True)
class SearchCut:
    """Where the runtime's search stops in a ranking, and which rule stops it.

    Positions count ranked tools above a line (0: above the first). ``top_k`` is where the slots
    ran out while tools passing the threshold were left out: the line sits right above the first
    such tool (every tool ranked above it is sent). It is None when no tool passing the threshold
    is left out: then only the threshold limits the search. ``threshold`` is where the scores
    fall under the threshold (the tools that pass are a prefix of the ranking).
    """

    top_k: int | None
    threshold: int

    @property
    def rule(self) -> CutRule:
        """The rule that stops the search: ``top_k`` when it leaves passing tools out."""
        return "top_k" if self.top_k is not None else "threshold"

    @property
    def position(self) -> int:
        """Where the search stops: the first ranked tool it would not send."""
        return self.top_k if self.top_k is not None else self.threshold


def search_cut(ranking: Ranking, selection: Selection) -> SearchCut:
    """Where the runtime's search stopped for ``selection`` (made by :func:`select` from
    ``ranking``), and by which rule, for drawing the cut lines.

    In ``filter_tools`` the search walks the tools passing the threshold in rank order and adds
    each one not already in until ``top_k`` tools are in, so a passing tool that is not selected
    was stopped by top_k (its remaining slots after always_include and top_n_used), and every
    passing tool ranked above the first such one is in. A passing tool that ``always_include``
    or ``top_n_used`` brought is never one the search left out.
    """
    passing = max(0, min(selection.passing, len(ranking.order)))
    chosen = selection.reasons
    for position, index in enumerate(ranking.order[:passing].tolist()):
        if index not in chosen:
            return SearchCut(top_k=position, threshold=passing)
    return SearchCut(top_k=None, threshold=passing)


#: The most decimals a score or a threshold is drawn with.
MAX_DECIMALS = 9


def threshold_decimals(threshold: float, minimum: int = 2) -> int:
    """The fewest decimals (at least ``minimum``) that draw ``threshold`` as it is: 0.3 as 0.30,
    0.375 as 0.375 (float noise such as 0.30000000000000004 is not drawn)."""
    for digits in range(minimum, MAX_DECIMALS + 1):
        if abs(float(f"{threshold:.{digits}f}") - threshold) <= 1e-12:
            return digits
    return MAX_DECIMALS


def score_decimals(scores: Iterable[float], threshold: float, minimum: int = 3) -> int:
    """The fewest decimals (at least ``minimum`` and the threshold's own) that draw every one of
    ``scores`` on its side of ``threshold``: a score under it never rounds up to it (0.4978 under
    0.5 is 0.498, and 0.49996 is 0.49996), and one at or over it never rounds under it.

    One number for a whole table, so its scores stay aligned.
    """
    values = [float(s) for s in scores]
    for digits in range(max(minimum, threshold_decimals(threshold)), MAX_DECIMALS + 1):
        if all((float(f"{s:.{digits}f}") >= threshold) == (s >= threshold) for s in values):
            return digits
    return MAX_DECIMALS
