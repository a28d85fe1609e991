"""``holo-tune serve``: the ``search_tools`` round trip over stdio, and serve's memory.

The real command (``python -m workbench serve``) on bfcl's 1,287 tools served from the snapshot
(``--catalog``, ``--embedder none``: the YAML's bm25 setting), reached with the ``mcp`` client
over stdio; the median and p90 of the wall time from sending ``search_tools(query)`` to holding
its JSON answer, over 200 distinct case queries (each searched once: the engine's ranking cache
never answers), after a warm-up; then the server process's resident memory (VmRSS) and its peak
(VmHWM), read from /proc while it still serves.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[1]
BFCL = REPO / "tests" / "data" / "datasets" / "bfcl"
QUERIES = 200
WARMUP = 10
TARGET_MEDIAN_S = 0.02
TARGET_P90_S = 0.04
TARGET_RSS_MB = 300.0


def _queries() -> list[str]:
    lines = (BFCL / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    texts = list(dict.fromkeys(json.loads(line)["query"] for line in lines))
    step = max(1, len(texts) // (QUERIES + WARMUP))
    return texts[::step][: QUERIES + WARMUP]


def _serve_pid() -> int:
    """The serve process: our child whose command line runs ``workbench serve``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if ppid == os.getpid() and b"serve" in cmdline and b"workbench" in cmdline:
            return int(entry.name)
    raise RuntimeError("the serve process was not found")


def _memory_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


async def _measure(errlog: Any) -> tuple[list[float], int, tuple[float, float], float]:
    argv = ["-m", "workbench", "serve", str(BFCL / "agent.yaml")]
    argv += ["--catalog", str(BFCL / "catalog.json"), "--embedder", "none"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    started = time.perf_counter()
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        ready = time.perf_counter() - started
        queries = _queries()
        times: list[float] = []
        found = 0
        for number, query in enumerate(queries):
            begin = time.perf_counter()
            result = await session.call_tool("search_tools", {"query": query})
            text = result.content[0].text  # type: ignore[union-attr]
            elapsed = time.perf_counter() - begin
            if result.is_error:
                raise RuntimeError(f"search_tools failed: {text}")
            tools = json.loads(text)
            if number >= WARMUP:
                times.append(elapsed)
                found += len(tools)
        memory = _memory_mb(_serve_pid())
    return times, found, memory, ready


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryFile("w+") as errlog:
        times, found, (rss, peak), ready = anyio.run(_measure, errlog)
    times.sort()
    median = statistics.median(times)
    p90 = times[int(0.9 * (len(times) - 1))]
    return [
        {
            "name": f"search_tools round trip, stdio, bfcl 1,287 tools ({len(times)} queries)",
            "median_s": median,
            "p90_s": p90,
            "tools_per_answer": found / len(times),
            "target": f"median < {TARGET_MEDIAN_S * 1000:g} ms, p90 < {TARGET_P90_S * 1000:g} ms",
            "ok": median < TARGET_MEDIAN_S and p90 < TARGET_P90_S,
        },
        {
            "name": "serve's memory (bfcl snapshot, after the queries)",
            "rss_mb": round(rss, 1),
            "peak_mb": round(peak, 1),
            "start_to_ready_s": ready,
            "target": f"rss < {TARGET_RSS_MB:g} MB",
            "ok": rss < TARGET_RSS_MB,
        },
    ]
