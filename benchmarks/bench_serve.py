"""``holo-tune serve``: the ``search_tools`` round trip over stdio, a restart, and serve's memory.

The real command (``python -m workbench serve``) on bfcl's 1,287 tools served from the snapshot
(``--catalog``) with holo-tune's engine at its defaults, reached with the ``mcp`` client over
stdio; the median and p90 of the wall time from sending ``search_tools(query)`` to holding its
answer, over 200 distinct case queries (each searched once: no cache answers), after a warm-up:

- with MiniLM (``--embedder local:all-MiniLM-L6-v2``, the local extra; skipped without it): the
  issue's target. serve is started twice on one fresh embedding cache: the first start embeds
  every tool, the second (the restart) reads them from the disk cache; both starts are timed to
  the moment the client's ``initialize`` is answered (the index is built before serve answers),
  and the restart's first search too. The reference, in the same process: the same function
  (:func:`workbench.search.serving.answer`, through :class:`~workbench.serve.index.ServeIndex`)
  on the same queries without MCP (``ratio``: the round trip over it), and of it the query's
  embedding alone (``embedding_s``: MiniLM on one thread, as serve runs it) and the rest
  (``engine_s``: the signals, fusion, selection and the answer's text); ``same_answers``: the
  round trip's answers are the reference's, text for text (the target needs it too);
- without embeddings (``--embedder none``: BM25 and the names): the round trip and the server
  process's resident memory (VmRSS) and peak (VmHWM), read from /proc while it still serves.

The machine's load decides the wall times on shared cores, so each round-trip row also has
the CPU time a search took in the serve process (``serve_cpu_s``, from /proc: what a quiet
core would take, about) and in this client (``client_cpu_s``: the ``mcp`` client's parsing of
each answer, which the round trip includes and a real client pays too), and the 1-minute load
average at its start and end (``load``).
"""

from __future__ import annotations

import importlib.util
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
MINILM = "local:all-MiniLM-L6-v2"
TARGET_MEDIAN_S = 0.02
TARGET_P90_S = 0.04
TARGET_RSS_MB = 300.0
#: A restart reads the tool vectors from the disk cache: ready within this.
TARGET_RESTART_S = 10.0


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


def _cpu_s(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _memory_mb(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class Run:
    """One serve process's figures."""

    def __init__(self) -> None:
        self.ready_s = 0.0
        self.first_s = 0.0
        self.times: list[float] = []
        self.found = 0
        self.memory = (0.0, 0.0)
        self.texts: list[str] = []
        self.serve_cpu_s = 0.0
        self.client_cpu_s = 0.0
        self.load = ""


async def _serve(embedder: str, cache: str, errlog: Any, queries: list[str]) -> Run:
    argv = ["-m", "workbench", "serve", str(BFCL / "agent.yaml")]
    argv += ["--catalog", str(BFCL / "catalog.json"), "--embedder", embedder]
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": cache}
    params = StdioServerParameters(command=sys.executable, args=argv, env=env)
    run = Run()
    started = time.perf_counter()
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        run.ready_s = time.perf_counter() - started
        pid = _serve_pid()
        load = os.getloadavg()[0]
        for number, query in enumerate(queries):
            if number == min(WARMUP, len(queries) - 1):
                served, client = _cpu_s(pid), time.process_time()
            begin = time.perf_counter()
            result = await session.call_tool("search_tools", {"query": query})
            text = result.content[0].text  # type: ignore[union-attr]
            elapsed = time.perf_counter() - begin
            if result.is_error:
                raise RuntimeError(f"search_tools failed: {text}")
            if number == 0:
                run.first_s = elapsed
            if number >= WARMUP:
                run.times.append(elapsed)
                run.texts.append(text)
                run.found += 0 if text.startswith("no tool fits") else len(json.loads(text))
        timed = max(1, len(run.times))
        run.serve_cpu_s = (_cpu_s(pid) - served) / timed
        run.client_cpu_s = (time.process_time() - client) / timed
        run.load = f"{load:.1f} -> {os.getloadavg()[0]:.1f}"
        run.memory = _memory_mb(pid)
    return run


def _in_process(cache: str, queries: list[str]) -> tuple[list[float], list[float], list[str]]:
    """The reference: the same answers in this process, no MCP (the same warm-up); of each,
    the time its query's embedding took (the rest is the engine's and the answer's text); and
    the answers."""
    os.environ["XDG_CACHE_HOME"] = cache
    from workbench.catalog.enumerate import load_catalog
    from workbench.catalog.models import AS_LISTED
    from workbench.config import load_agent
    from workbench.search.embedders.local import load_model
    from workbench.search.holo.settings import HoloSettings
    from workbench.serve.app import one_thread_per_query
    from workbench.serve.index import ServeIndex

    agent = load_agent(BFCL / "agent.yaml")
    catalog = load_catalog(agent, catalog_file=BFCL / "catalog.json", view=AS_LISTED)
    index = ServeIndex(agent, catalog, HoloSettings(), embedder_spec=MINILM)
    load_model(index.engine.embedder)
    one_thread_per_query(index.engine.embedder)  # as serve embeds its queries
    times, embedding, texts = [], [], []
    for number, query in enumerate(queries):
        begin = time.perf_counter()
        index.engine.query_vector(query)  # remembered: the search below embeds nothing
        embedded = time.perf_counter()
        text = index.search(query).text()
        if number >= WARMUP:
            times.append(time.perf_counter() - begin)
            embedding.append(embedded - begin)
            texts.append(text)
    return times, embedding, texts


def _p90(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[int(0.9 * (len(ordered) - 1))]


def _round_trip(name: str, run: Run, same: bool = True, **extra: Any) -> dict[str, Any]:
    median, p90 = statistics.median(run.times), _p90(run.times)
    return {
        "name": name,
        "median_s": median,
        "p90_s": p90,
        "tools_per_answer": run.found / len(run.times),
        "serve_cpu_s": run.serve_cpu_s,
        "client_cpu_s": run.client_cpu_s,
        "load": run.load,
        **extra,
        "target": f"median < {TARGET_MEDIAN_S * 1000:g} ms, p90 < {TARGET_P90_S * 1000:g} ms",
        "ok": median < TARGET_MEDIAN_S and p90 < TARGET_P90_S and same,
    }


def _minilm(queries: list[str]) -> list[dict[str, Any]]:
    title = f"search_tools round trip, stdio, MiniLM, bfcl 1,287 tools ({QUERIES} queries)"
    if importlib.util.find_spec("sentence_transformers") is None:
        return [{"name": title, "skipped": "the local extra (sentence-transformers) is missing"}]
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryFile("w+") as errlog:
        cold = anyio.run(_serve, MINILM, cache, errlog, queries[:1])
        warm = anyio.run(_serve, MINILM, cache, errlog, queries)
        reference, embedding, texts = _in_process(cache, queries)
    ref = statistics.median(reference)
    embed = statistics.median(embedding)
    same = texts == warm.texts
    return [
        _round_trip(
            title,
            warm,
            same,
            same_answers=same,
            reference_s=ref,
            ratio=statistics.median(warm.times) / ref,
            reference=f"the same answers in-process, no MCP: median {ref * 1000:.2f} ms, "
            f"p90 {_p90(reference) * 1000:.2f} ms, of which the query's embedding "
            f"{embed * 1000:.2f} ms",
            embedding_s=embed,
            engine_s=statistics.median(t - e for t, e in zip(reference, embedding, strict=True)),
        ),
        {
            "name": "serve's restart, MiniLM, bfcl (tool vectors from the disk cache)",
            "start_to_ready_s": warm.ready_s,
            "first_search_s": warm.first_s,
            "cold_start_to_ready_s": cold.ready_s,
            "target": f"restart ready < {TARGET_RESTART_S:g} s",
            "ok": warm.ready_s < TARGET_RESTART_S,
        },
    ]


def run() -> list[dict[str, Any]]:
    queries = _queries()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryFile("w+") as errlog:
        plain = anyio.run(_serve, "none", cache, errlog, queries)
    rss, peak = plain.memory
    return [
        *_minilm(queries),
        _round_trip(
            f"search_tools round trip, stdio, no embeddings, bfcl ({QUERIES} queries)", plain
        ),
        {
            "name": "serve's memory (bfcl snapshot, no embeddings, after the queries)",
            "rss_mb": round(rss, 1),
            "peak_mb": round(peak, 1),
            "start_to_ready_s": plain.ready_s,
            "target": f"rss < {TARGET_RSS_MB:g} MB",
            "ok": rss < TARGET_RSS_MB,
        },
    ]
