"""serve's replicas (deploy/): a replica's time to ready from a snapshot, and searches per second
through nginx over two replicas.

bfcl's 1,287 tools with MiniLM (``--embedder local:all-MiniLM-L6-v2``, the local extra; skipped
without it), served over HTTP from the snapshot (``--catalog``; bfcl's tools have no server, so
no ``--live-calls``) on an embedding cache filled once beforehand (the artifact a replica starts
from: a snapshot and its tools' vectors):

- time to ready: the real command started three times, each timed from its start to the first
  200 of ``/readyz`` (the median is the target's: ``/readyz`` waits for MiniLM, which loads once
  HTTP answers), and to its first search's answer; where the time went, from serve's stderr: to
  its first line (Python's start and the imports), to ``serving on`` (the snapshot read, the
  index built with the vectors from the cache, the server built). The reference, in the same
  process: the index built from the same snapshot and cache without a process or HTTP
  (``ratio``: a replica's start over it, Python's start and imports included);
- requests per second: wrk (deploy/search.lua, each answer checked) holds 10 ``search_tools``
  POSTs in flight for 20 s through nginx (deploy/nginx.conf) over two replicas, every query a
  distinct bfcl case's; the issue's target is no error. The reference, in the same run: the same
  load on one replica without nginx (``ratio``: two behind nginx over one alone; both replicas
  share this machine's cores, so the ratio says what nginx and a second process cost or gain
  here, not what a second machine would).
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BFCL = REPO / "tests" / "data" / "datasets" / "bfcl"
DEPLOY = REPO / "deploy"
MINILM = "local:all-MiniLM-L6-v2"
STARTS = 3
IN_FLIGHT = 10
LOAD_SECONDS = 20
TARGET_READY_S = 3.0
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get(address: str, path: str) -> int:
    """The status of a GET of ``path`` at ``host:port`` (0: no answer). The standard library's
    client, whose connection costs next to nothing: the readiness is polled every 10 ms, and
    httpx builds an SSL context for each client (tens of ms of CPU that the replica, on the
    same cores, would wait for)."""
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    except OSError:
        return 0
    finally:
        connection.close()


def _search(url: str, query: str) -> None:
    """One ``search_tools`` POST to ``url``, with the standard library's client as :func:`_get`
    (httpx's import and SSL context took 0.4 s of this process's time, which the first search's
    figure counted as the replica's)."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": query}},
    }
    address, _, path = url.removeprefix("http://").partition("/")
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        connection.request("POST", "/" + path, body=json.dumps(request), headers=HEADERS)
        reply = connection.getresponse()
        text = reply.read().decode(errors="replace")
    finally:
        connection.close()
    if reply.status != 200 or '"isError":false' not in text:
        raise RuntimeError(f"search failed: {reply.status} {text[:300]}")


class Replica:
    """``holo-tune serve`` on bfcl's snapshot over HTTP, as deploy/'s files start it."""

    def __init__(self, cache: str, log: Any) -> None:
        self.port = _free_port()
        argv = [sys.executable, "-m", "workbench", "serve", str(BFCL / "agent.yaml")]
        argv += ["--catalog", str(BFCL / "catalog.json"), "--embedder", MINILM]
        argv += ["--transport", "http", "--port", str(self.port)]
        env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": cache}
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.PIPE
        )
        #: When serve's stderr said each line (seconds from the start), in a thread of its own.
        self.said: list[tuple[float, str]] = []
        threading.Thread(target=self._read, args=(log,), daemon=True).start()

    def _read(self, log: Any) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            self.said.append((time.perf_counter() - self.started, line))
            log.write(line)

    def when(self, text: str) -> float:
        """Seconds from the start to serve's first stderr line holding ``text``."""
        return next(at for at, line in self.said if text in line)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/mcp"

    def ready(self) -> float:
        """Seconds from the start to the first 200 of /readyz."""
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited ({self.proc.returncode})")
            if _get(self.address, "/readyz") == 200:
                return time.perf_counter() - self.started
            time.sleep(0.01)
        raise RuntimeError("serve was not ready in 180 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def _replicas(count: int, cache: str, log: Any) -> Iterator[list[Replica]]:
    replicas: list[Replica] = []
    try:
        for _ in range(count):
            replicas.append(Replica(cache, log))
        for replica in replicas:
            replica.ready()
            _search(replica.url, "warm up: the model loaded")
        yield replicas
    finally:
        for replica in replicas:
            replica.stop()


def _executable(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None:
        raise RuntimeError(f"{name} is missing: make bench installs it (the balancer target)")
    return found


@contextmanager
def _nginx(replicas: list[Replica]) -> Iterator[str]:
    """deploy/nginx.conf over the replicas, unprivileged in a temporary prefix: its URL."""
    with tempfile.TemporaryDirectory() as prefix:
        port = _free_port()
        (Path(prefix) / "tmp").mkdir()
        shutil.copy(DEPLOY / "nginx.conf", Path(prefix) / "nginx.conf")
        values = {
            "HOLO_TUNE_LISTEN": f"127.0.0.1:{port}",
            "HOLO_TUNE_REPLICA_1": replicas[0].address,
            "HOLO_TUNE_REPLICA_2": replicas[1].address,
        }
        template = (DEPLOY / "holo-tune.conf.template").read_text()
        rendered = re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], template)
        (Path(prefix) / "holo-tune.conf").write_text(rendered)
        argv = [_executable("nginx"), "-e", "stderr", "-p", prefix, "-c", "nginx.conf"]
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while _get(f"127.0.0.1:{port}", "/readyz") != 200:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("nginx did not start")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _wrk(url: str, queries: Path) -> dict[str, Any]:
    """deploy/search.lua's counts of a 20 s wrk run with 10 searches in flight."""
    argv = [_executable("wrk"), "-t", "2", "-c", str(IN_FLIGHT), "-d", f"{LOAD_SECONDS}s"]
    argv += ["--timeout", "30s", "-s", str(DEPLOY / "search.lua"), url]
    env = {**os.environ, "HOLO_TUNE_QUERIES": str(queries)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("holo-tune-load "))
    counts: dict[str, Any] = json.loads(line.removeprefix("holo-tune-load "))
    return counts


def _queries(folder: Path) -> Path:
    """bfcl's distinct case queries, one a line (deploy/search.lua's HOLO_TUNE_QUERIES)."""
    lines = (BFCL / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    texts = dict.fromkeys(" ".join(json.loads(line)["query"].split()) for line in lines)
    path = folder / "queries.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


def _in_process_index_s(cache: str) -> float:
    """The reference: bfcl's index built in this process from the snapshot and the filled cache
    (the tool vectors read, nothing embedded), the median of three."""
    os.environ["XDG_CACHE_HOME"] = cache
    from workbench.catalog.enumerate import load_catalog
    from workbench.catalog.models import AS_LISTED
    from workbench.config import load_agent
    from workbench.search.holo.settings import HoloSettings
    from workbench.serve.index import ServeIndex

    times = []
    for _ in range(STARTS):
        begin = time.perf_counter()
        agent = load_agent(BFCL / "agent.yaml")
        catalog = load_catalog(agent, catalog_file=BFCL / "catalog.json", view=AS_LISTED)
        ServeIndex(agent, catalog, HoloSettings(), embedder_spec=MINILM)
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def _fill_cache(cache: str) -> float:
    """Embed bfcl's tools into ``cache`` (what a replica then starts from); seconds it took."""
    os.environ["XDG_CACHE_HOME"] = cache
    from workbench.catalog.enumerate import load_catalog
    from workbench.catalog.models import AS_LISTED
    from workbench.config import load_agent
    from workbench.search.holo.settings import HoloSettings
    from workbench.serve.index import ServeIndex

    begin = time.perf_counter()
    agent = load_agent(BFCL / "agent.yaml")
    catalog = load_catalog(agent, catalog_file=BFCL / "catalog.json", view=AS_LISTED)
    ServeIndex(agent, catalog, HoloSettings(), embedder_spec=MINILM)
    return time.perf_counter() - begin


def _load_row(name: str, counts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    errors = counts["bad"] + counts["socket_errors"] + counts["timeouts"]
    return {
        "name": name,
        "requests_per_s": round(counts["requests"] / counts["seconds"], 1),
        "requests": counts["requests"],
        "errors": errors,
        "latency_p50_s": counts["latency_p50_ms"] / 1000,
        "latency_p99_s": counts["latency_p99_ms"] / 1000,
        **extra,
    }


def run() -> list[dict[str, Any]]:
    ready_title = f"a replica's time to ready, bfcl snapshot, MiniLM ({STARTS} starts)"
    load_title = f"search_tools through nginx, two replicas, {IN_FLIGHT} in flight, MiniLM"
    if importlib.util.find_spec("sentence_transformers") is None:
        missing = "the local extra (sentence-transformers) is missing"
        return [{"name": ready_title, "skipped": missing}, {"name": load_title, "skipped": missing}]
    saved = os.environ.get("XDG_CACHE_HOME")
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryFile("w+") as log:
        try:
            filled = _fill_cache(cache)
            reference = _in_process_index_s(cache)
        finally:
            if saved is None:
                os.environ.pop("XDG_CACHE_HOME", None)
            else:
                os.environ["XDG_CACHE_HOME"] = saved
        ready, first, started, indexed = [], [], [], []
        for _ in range(STARTS):
            replica = Replica(cache, log)
            try:
                ready.append(replica.ready())
                _search(replica.url, "what is the weather in Paris")
                first.append(time.perf_counter() - replica.started)
                started.append(replica.when("holo-tune serve: log:"))
                indexed.append(replica.when("serving on"))
            finally:
                replica.stop()
        queries = _queries(Path(cache))
        load = os.getloadavg()[0]
        with _replicas(2, cache, log) as pair, _nginx(pair) as url:
            both = _wrk(url, queries)
        with _replicas(1, cache, log) as (one,):
            alone = _wrk(one.url, queries)
        load_text = f"{load:.1f} -> {os.getloadavg()[0]:.1f}"
    median_ready = statistics.median(ready)
    both_rate = both["requests"] / both["seconds"]
    alone_rate = alone["requests"] / alone["seconds"]
    load_row = _load_row(
        load_title + f", {LOAD_SECONDS} s",
        both,
        reference=f"one replica without nginx: {alone_rate:.1f} requests/s, "
        f"p50 {alone['latency_p50_ms']:.0f} ms, errors "
        f"{alone['bad'] + alone['socket_errors'] + alone['timeouts']}",
        ratio=both_rate / alone_rate,
        load=load_text,
    )
    load_row["target"] = "no error"
    load_row["ok"] = load_row["errors"] == 0
    return [
        {
            "name": ready_title,
            "median_s": median_ready,
            "ready_s": [round(s, 2) for s in ready],
            "first_search_s": statistics.median(first),
            # Where the start went: Python's start and imports to serve's first line, then
            # the snapshot read and the index built (the vectors from the cache) to "serving
            # on", then HTTP's start to the first 200 of /readyz.
            "to_first_line_s": statistics.median(started),
            "to_serving_s": statistics.median(indexed),
            "reference_s": reference,
            "ratio": median_ready / reference,
            "reference": f"the same index built in-process from the snapshot and cache: "
            f"{reference:.2f} s (the cache filled once beforehand in {filled:.0f} s)",
            "target": f"ready < {TARGET_READY_S:g} s",
            "ok": median_ready < TARGET_READY_S,
        },
        load_row,
    ]
