"""Tool use counts: what a warmed-up runtime's ``always_include_top_n_used`` ranks by.

HoloDeck keeps the counts in memory (they start at 0 on every restart). A usage file lets the
workbench show a runtime that has been running: ``{"<full_name>": count, ...}`` (a bare tool
name does when one tool has it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from workbench.catalog.models import Catalog
from workbench.errors import InputError
from workbench.limits import json_loads, read_input
from workbench.search.types import IntArray


def cold_usage(catalog: Catalog) -> IntArray:
    """All counts zero: a runtime that just started."""
    return np.zeros(len(catalog), dtype=np.int64)


def load_usage(path: str | Path, catalog: Catalog, *, partial: bool = False) -> IntArray:
    """Use counts per catalog tool from a JSON object ``{full_name: count}`` (absent tools: 0).

    ``partial``: the catalog lacks some servers (still listing, or failed), so a name it does
    not have is left out instead of refused."""
    return usage_array(read_counts(path), catalog, source=path, partial=partial)


def read_counts(path: str | Path) -> dict[str, int]:
    """The usage file's counts by name, each a whole number >= 0 (the names are not looked up:
    :func:`usage_array` does that against a catalog); an InputError naming the file otherwise."""
    raw = read_input(path, InputError, "usage file (JSON)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", file=path) from None
    data = json_loads(text, error=InputError, file=path)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object {full_name: count}", file=path)
    for name, count in data.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(
                f"count must be a whole number >= 0, not {count!r}", file=path, field=name
            )
    return data


def usage_array(
    counts: dict[str, int], catalog: Catalog, *, source: str | Path, partial: bool = False
) -> IntArray:
    """Counts by catalog index; an unknown tool name (unless ``partial``) or two names for one
    tool (a full and a bare one) is an InputError."""
    usage = cold_usage(catalog)
    named: dict[int, str] = {}
    for name, count in counts.items():
        try:
            index = _index(catalog, name, source)
        except InputError:
            if partial:
                continue
            raise
        if index in named:
            raise InputError(
                f"names the same tool as {named[index]!r}: give it once", file=source, field=name
            )
        named[index] = name
        usage[index] = count
    return usage


def _index(catalog: Catalog, name: str, source: str | Path) -> int:
    """A tool's position by full name (``<server>-<tool>``), or by its bare name when one tool
    has it (as cases files name tools)."""
    if catalog.get(name) is not None:
        return catalog.position(name)
    bare = [i for i, tool in enumerate(catalog.tools) if tool.name == name]
    if len(bare) == 1:
        return bare[0]
    if bare:
        servers = ", ".join(catalog.tools[i].full_name for i in bare)
        raise InputError(f"names {len(bare)} tools ({servers}): give the full name", file=source,
                         field=name)  # fmt: skip
    raise InputError("no such tool in the catalog", file=source, field=name)
