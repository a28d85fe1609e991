"""Tool use counts: what a warmed-up runtime's ``always_include_top_n_used`` ranks by.

HoloDeck keeps the counts in memory (they start at 0 on every restart). A usage file lets the
workbench show a runtime that has been running: ``{"<full_name>": count, ...}``.
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


def load_usage(path: str | Path, catalog: Catalog) -> IntArray:
    """Use counts per catalog tool from a JSON object ``{full_name: count}`` (absent tools: 0)."""
    raw = read_input(path, InputError, "usage file (JSON)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", file=path) from None
    data = json_loads(text, error=InputError, file=path)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object {full_name: count}", file=path)
    return usage_array(data, catalog, source=path)


def usage_array(counts: dict[str, object], catalog: Catalog, *, source: str | Path) -> IntArray:
    """Counts by catalog index; an unknown tool name or a bad count is an InputError."""
    usage = cold_usage(catalog)
    for name, count in counts.items():
        tool = catalog.get(name)
        if tool is None:
            raise InputError("no such tool in the catalog", file=source, field=name)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(
                f"count must be a whole number >= 0, not {count!r}", file=source, field=name
            )
        usage[catalog.position(name)] = count
    return usage
