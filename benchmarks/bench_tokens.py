"""Token counting of the largest dataset catalog: cold, from the disk cache, and warm.

Cold = building the encoding from the bundled rank file (gunzip, sha256, parse) and counting every
tool (then storing the counts), timed inside a fresh interpreter with an empty token count cache
(interpreter start-up and imports are not counted). Cached = the same in a fresh interpreter whose
cache a cold run filled: every count read from the disk, no encoding built (what a second command
or a serve replica's start costs). Warm = counting again in the same process, which is what a
model switch or a catalog refresh costs in the dashboard. Every cache is a temporary folder.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.tokens import TokenCountCache, token_table
from workbench.tokens.encodings import get_encoding

DATASETS = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets"
PROVIDER, MODEL = "openai", "gpt-4o"
COLD_RUNS, CACHED_RUNS, WARM_RUNS, SELECTION_RUNS = 3, 3, 7, 2000
WARM_TARGET_S, COLD_TARGET_S, SELECTION_TARGET_S = 0.5, 2.0, 0.0001
CACHED_TARGET_S = 0.25


def largest_catalog(root: Path = DATASETS) -> Path | None:
    """The dataset catalog.json with the most tools (None when the datasets are absent)."""
    sizes = {path: _tool_count(path) for path in sorted(root.glob("*/catalog.json"))}
    return max(sizes, key=lambda path: sizes[path]) if sizes else None


def _tool_count(path: Path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))
    return sum(len(entry.get("tools", [])) for entry in data.get("servers", {}).values())


def load_catalog(path: Path) -> Catalog:
    """A catalog straight from a snapshot's listings: full name, description, input schema."""
    data = json.loads(path.read_text(encoding="utf-8"))
    tools = [
        Tool(
            full_name=f"{server}-{listing['name']}",
            plugin=server,
            name=listing["name"],
            description=listing.get("description") or "",
            parameters=tuple((listing.get("inputSchema") or {}).get("properties") or {}),
            kind="mcp",
            definition=listing,
        )
        for server, entry in data["servers"].items()
        for listing in entry.get("tools", [])
    ]
    servers = [ServerStatus(name, "snapshot", "snapshot") for name in data["servers"]]
    return Catalog(tools=tools, servers=servers)


_COLD_SCRIPT = """
import sys, time
from benchmarks.bench_tokens import load_catalog, PROVIDER, MODEL
from pathlib import Path
from workbench.tokens import token_table
from workbench.tokens.encodings import get_encoding
catalog = load_catalog(Path(sys.argv[1]))
started = time.perf_counter()
table = token_table(catalog, PROVIDER, MODEL)
print(time.perf_counter() - started, table.all, get_encoding.cache_info().currsize)
"""


def _fresh_process(path: Path, cache: str) -> tuple[float, int, int]:
    """Seconds of ``token_table`` in a fresh interpreter counting through the cache in folder
    ``cache``, the bill of every tool, and how many encodings it built."""
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", _COLD_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        cwd=root,
        check=True,
        timeout=120,
        env={**os.environ, "XDG_CACHE_HOME": cache},
    )
    seconds, total, built = result.stdout.split()
    return float(seconds), int(total), int(built)


def _warm_once(catalog: Catalog, cache: TokenCountCache) -> float:
    started = time.perf_counter()
    token_table(catalog, PROVIDER, MODEL, cache)
    return time.perf_counter() - started


def run() -> list[dict[str, Any]]:
    path = largest_catalog()
    if path is None:
        return [{"name": "tokens", "target": "a data set catalog", "ok": False}]
    catalog = load_catalog(path)
    label = f"{path.parent.name}, {len(catalog):,} tools"

    with tempfile.TemporaryDirectory(prefix="bench-tokens-") as folder:
        cold = [_fresh_process(path, f"{folder}/cold-{run}") for run in range(COLD_RUNS)]
        cold_s = statistics.median(seconds for seconds, _, _ in cold)
        cached = [_fresh_process(path, f"{folder}/cold-0") for _ in range(CACHED_RUNS)]
        cached_s = statistics.median(seconds for seconds, _, _ in cached)
        built = max(count for _, _, count in cached)

        get_encoding("o200k_base")
        store = TokenCountCache(f"{folder}/warm")
        table = token_table(catalog, PROVIDER, MODEL, store)
        warm_s = statistics.median(_warm_once(catalog, store) for _ in range(WARM_RUNS))
    totals = {total for _, total, _ in cold + cached}
    assert totals == {table.all}, "cold, cached and warm counts differ"

    selection = list(range(0, len(table), max(1, len(table) // 5)))[:5]
    started = time.perf_counter()
    for _ in range(SELECTION_RUNS):
        table.total(selection)
    selection_s = (time.perf_counter() - started) / SELECTION_RUNS

    return [
        {
            "name": f"tokens cold ({label}, {table.encoding})",
            "median_s": cold_s,
            "tokens_all": table.all,
            "target": f"< {COLD_TARGET_S:g} s",
            "ok": cold_s < COLD_TARGET_S,
        },
        {
            "name": f"tokens from the disk cache ({label}, {table.encoding})",
            "median_s": cached_s,
            "ratio": cached_s / cold_s,
            "encodings_built": built,
            "target": f"< {CACHED_TARGET_S:g} s, no encoding built",
            "ok": cached_s < CACHED_TARGET_S and built == 0,
        },
        {
            "name": f"tokens warm ({label}, {table.encoding})",
            "median_s": warm_s,
            "ratio": warm_s / cold_s,
            "target": f"< {WARM_TARGET_S:g} s",
            "ok": warm_s < WARM_TARGET_S,
        },
        {
            "name": "tokens total() of a 5-tool selection",
            "median_s": selection_s,
            "target": f"< {SELECTION_TARGET_S * 1000:g} ms",
            "ok": selection_s < SELECTION_TARGET_S,
        },
    ]
