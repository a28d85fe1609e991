"""A label's marks, pure: the tools a query's expected names resolve to, which the setting sends
(✓) and which it misses (✗), the status line's word on them, and a name toggled.

The state draws its marks from here (:meth:`LabState.marks`); the labeller
(:mod:`workbench.tui.dashboard.labels`) toggles names with :func:`toggled`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from workbench.catalog import Catalog
from workbench.evaluate.cases import resolve_name

#: An expected tool the setting sends, or one it misses.
Mark = Literal["sent", "missed"]


def expected_indices(names: Sequence[str], catalog: Catalog) -> dict[int, str]:
    """``{catalog index: the expected name it satisfies}`` (a bare name may match several tools
    on different servers; a name matching none is left out)."""
    out: dict[int, str] = {}
    for name in names:
        for index in resolve_name(name, catalog):
            out.setdefault(index, name)
    return out


def marks(names: Sequence[str], catalog: Catalog, sent: Collection[int] | None) -> dict[int, Mark]:
    """Each expected tool's mark: sent or missed (``sent`` None: every tool is sent)."""
    return {
        index: "sent" if sent is None or index in sent else "missed"
        for index in expected_indices(names, catalog)
    }


def toggled(names: Sequence[str], catalog: Catalog, tool: str) -> tuple[str, ...]:
    """``names`` with ``tool`` (a full name) unmarked if a name there resolves to it, else
    marked (added under its full name, which no other tool shares)."""
    try:
        index = catalog.position(tool)
    except KeyError:
        return tuple(names)
    found = expected_indices(names, catalog)
    if index in found:
        return tuple(name for name in names if name != found[index])
    return (*names, tool)


def summary(found: Mapping[int, Mark]) -> str:
    """The status line's word on the expected tools: ``✓ 2/2 expected`` when the setting sends
    them all, ``✗ 1/2 missed`` when it misses some (empty when the query has no label)."""
    if not found:
        return ""
    missed = sum(1 for mark in found.values() if mark == "missed")
    if missed:
        return f"✗ {missed}/{len(found)} missed"
    return f"✓ {len(found)}/{len(found)} expected"
