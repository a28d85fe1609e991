"""``holo-tune serve --transport http`` as a replica behind a load balancer: the real command on
127.0.0.1 in front of real stdio MCP servers (``mcp-server-time`` from the test extras and
tests/servers/toolserver.py).

A replica starts from ``holo-tune snapshot`` (``--catalog FILE --live-calls``): it answers a
search before its servers have listed anything, and its calls go to the live servers. Any request
is answered on its own (the stateless protocol: no ``initialize``, no ``Mcp-Session-Id``), and the
``mcp`` SDK's session-based streamable-HTTP client works too. ``/healthz`` says it is alive,
``/readyz`` whether it is ready (and, with ``--ready-needs``, turns 503 while a server it needs is
down), ``/metrics`` parses with prometheus-client's own parser and counts what was served, and
SIGTERM drains: the searches and the call in flight complete, a new request gets 503, then the
servers stop and none is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from cli_run import run_cli
from fake_embedding_server import OPENAI_KEY, FakeEmbeddingServer
from prometheus_client.parser import text_string_to_metric_families
from provided import LOCAL_EXTRA
from serve_client import (
    STATELESS_HEADERS,
    alive,
    descendants,
    free_port,
    http_session,
    search_names,
    start_http,
    stateless,
    stateless_search,
    text_of,
)

from workbench.cli import parse_args
from workbench.commands.serve import served_from_args, snapshot_index
from workbench.serve.operate import Operation

pytestmark = [
    pytest.mark.slow,
    pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"]),
    pytest.mark.provided("the test extras (mcp-server-time)", modules=["mcp_server_time"]),
    pytest.mark.provided("the serve extra (prometheus-client)", modules=["prometheus_client"]),
]

TOOLSERVER = str(Path(__file__).resolve().parent / "servers" / "toolserver.py")
#: Seconds the served agent's ``tools`` server takes to list its tools (its snapshot's took none).
SLOW_LIST = 3


def write_agent(path: Path, tag: str, *extra: str) -> Path:
    """An agent of two servers: ``time`` (mcp-server-time) and ``tools`` (3 callable tools;
    ``extra`` flags of toolserver.py, and ``tag`` on its command line)."""
    servers = {
        "time": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
        "tools": [TOOLSERVER, "--tools", "3", "--callable", "--tag", tag, *extra],
    }
    entries = "".join(
        f"  - name: {name}\n    type: mcp\n    description: test server {name}\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
        for name, args in servers.items()
    )
    path.write_text(
        "name: replica\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        f"instructions:\n  inline: test\ntools:\n{entries}"
    )
    return path


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``holo-tune snapshot`` of the agent (its servers listed once, as a deploy does)."""
    folder = tmp_path_factory.mktemp("snapshot")
    agent = write_agent(folder / "agent.yaml", "holo-tune-test-snapshot")
    out = folder / "agent.catalog.json"
    done = run_cli("snapshot", str(agent), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return out


def stop(proc: subprocess.Popen[bytes]) -> list[int]:
    """SIGTERM ``proc`` (exit 0 expected); the processes it had started."""
    children = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    return children


def test_a_replica_from_a_snapshot_answers_any_request_and_calls_the_live_servers(
    tmp_path: Path, tag: str, snapshot: Path
) -> None:
    agent = write_agent(tmp_path / "agent.yaml", tag, "--slow-list", str(SLOW_LIST))
    port = free_port()
    log = tmp_path / "serve.err"
    embedder = ["--embedder", "openai:text-embedding-3-small"]
    args = [str(agent), "--catalog", str(snapshot), "--live-calls", *embedder]
    url = f"http://127.0.0.1:{port}/mcp"
    with FakeEmbeddingServer() as embeddings:
        env = {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": f"{embeddings.url}/v1"}
        # The embedding cache, as a deploy fills it once: a search on the snapshot.
        warm = ["search", str(agent), "warm up", "--runtime", "serve", "--catalog", str(snapshot)]
        assert run_cli(*warm, *embedder, env={**os.environ, **env}).returncode == 0
        embedded = embeddings.count()
        assert embedded >= 1
        proc = start_http(args, port, log, **env)
        try:
            # Stateless: each request on its own, before the tools server has listed anything,
            # and no tool embedded again: the one request is the query's.
            listed = stateless(url, "tools/list")
            assert [tool["name"] for tool in listed["tools"]] == ["search_tools", "call_tool"]
            found = stateless_search(url, "what time is it in Tokyo")
            assert "time-get_current_time" in found
            assert "server tools: up" not in log.read_text()  # the search did not wait for it
            assert embeddings.count() == embedded + 1
            ready = get(port, "/readyz")
            assert ready.status_code == 200  # the index is loaded; no server is needed
            assert ready.json()["tools"] == 8 and ready.json()["upstreams"]["tools"] == "starting"

            # The session-based protocol (initialize, then a session): the same answers, and
            # calls go to the live servers (the slow one once it is up).
            async def session() -> tuple[list[str], str, str]:
                async with http_session(url) as client:
                    names = await search_names(client, "what time is it in Tokyo")
                    now = await client.call_tool(
                        "call_tool",
                        {"name": "time-get_current_time", "arguments": {"timezone": "UTC"}},
                    )
                    assert not now.is_error, text_of(now)
                    tool = await client.call_tool(
                        "call_tool", {"name": "tools-tool_01", "arguments": {"query": "x"}}
                    )
                    assert not tool.is_error, text_of(tool)
                    return names, text_of(now), text_of(tool)

            names, now, tool = anyio.run(session)
            assert names == found
            assert json.loads(now)["timezone"] == "UTC"
            assert tool == 'tool_01 called with {"query": "x"}'
            children = stop(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert len(children) >= 2 and alive(children) == []
    assert "server tools: up, 6 tools" in log.read_text()  # 3, and 3 that misbehave


def test_live_calls_need_a_snapshot(tmp_path: Path, tag: str) -> None:
    agent = write_agent(tmp_path / "agent.yaml", tag)
    done = run_cli("serve", str(agent), "--live-calls")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "holo-tune: error: --live-calls: needs --catalog (without it serve lists the live servers)"
    )


def get(port: int, path: str) -> httpx2.Response:
    return httpx2.get(f"http://127.0.0.1:{port}{path}", timeout=10.0)


def metrics(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``/metrics`` read with prometheus-client's own parser: each sample's value by its name
    and labels."""
    answer = get(port, "/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def server_pid(proc: subprocess.Popen[bytes], word: str) -> int:
    """The process below serve whose command line holds ``word``."""
    for pid in descendants(proc.pid):
        try:
            if word.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    raise AssertionError(f"no process of {word} below serve")


def wait_status(
    port: int, status: int, down: str | None = None, seconds: float = 20.0
) -> dict[str, Any]:
    """``/readyz``'s body once it answers ``status`` (and says the server ``down`` is down,
    when given)."""
    deadline = time.monotonic() + seconds
    while True:
        answer = get(port, "/readyz")
        body: dict[str, Any] = answer.json()
        if answer.status_code == status and (down is None or body["upstreams"][down] == "down"):
            return body
        assert time.monotonic() < deadline, (answer.status_code, answer.text)
        time.sleep(0.1)


def test_readyz_turns_503_while_a_needed_server_is_down_and_ready_again_once_it_is_back(
    tmp_path: Path, tag: str
) -> None:
    agent = write_agent(tmp_path / "agent.yaml", tag)
    port = free_port()
    args = [str(agent), "--embedder", "none", "--ready-needs", "time"]
    proc = start_http(args, port, tmp_path / "serve.err")
    try:
        assert get(port, "/healthz").status_code == 200
        body = wait_status(port, 200)
        assert body["upstreams"] == {"time": "up", "tools": "up"} and body["needs"] == ["time"]
        os.kill(server_pid(proc, tag), signal.SIGKILL)  # a server it does not need: ready
        body = wait_status(port, 200, down="tools")
        assert body["ready"] is True and body["missing"] == []
        os.kill(server_pid(proc, "mcp_server_time"), signal.SIGKILL)
        body = wait_status(port, 503)
        assert body["ready"] is False and body["missing"] == ["time"]
        assert get(port, "/healthz").status_code == 200  # alive all along
        body = wait_status(port, 200)  # /readyz started it again
        assert body["upstreams"]["time"] == "up"
        seen = metrics(port)
        assert seen[("holo_tune_upstream_restarts_total", (("upstream", "time"),))] == 1
        assert seen[("holo_tune_upstream_up", (("upstream", "time"),))] == 1
        assert seen[("holo_tune_upstream_up", (("upstream", "tools"),))] == 0
        stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ready_needs_names_a_server_of_the_agent(tmp_path: Path, tag: str) -> None:
    agent = write_agent(tmp_path / "agent.yaml", tag)
    done = run_cli("serve", str(agent), "--transport", "http", "--ready-needs", "time,clock")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "holo-tune: error: --ready-needs: 'clock' is not an MCP server of the agent (time, tools)"
    )


def test_metrics_count_what_was_served_and_sigterm_lets_the_requests_in_flight_finish(
    tmp_path: Path, tag: str
) -> None:
    agent = write_agent(tmp_path / "agent.yaml", tag, "--slow-call", "2")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tmp_path / "serve.err"
    args = [str(agent), "--embedder", "openai:text-embedding-3-small", "--threshold", "0.99"]
    with FakeEmbeddingServer() as embeddings:
        env = {"OPENAI_API_KEY": OPENAI_KEY, "OPENAI_BASE_URL": f"{embeddings.url}/v1"}
        proc = start_http(args, port, log, **env)
        try:
            # A query that names a tool gets it; one that fits no tool is refused.
            assert stateless_search(url, "get_current_time in UTC")[0] == "time-get_current_time"
            assert stateless_search(url, "bake a chocolate cake") == []
            result = stateless(
                url,
                "tools/call",
                {
                    "name": "call_tool",
                    "arguments": {
                        "name": "time-get_current_time",
                        "arguments": {"timezone": "UTC"},
                    },
                },
            )
            assert not result.get("isError"), result
            seen = metrics(port)
            assert seen[("holo_tune_search_seconds_count", ())] == 2
            assert seen[("holo_tune_searches_refused_total", ())] == 1
            called = (("outcome", "result"), ("upstream", "time"))
            assert seen[("holo_tune_calls_total", called)] == 1
            assert seen[("holo_tune_call_seconds_count", (("upstream", "time"),))] == 1
            assert seen[("holo_tune_index_tools", ())] == 8
            assert seen[("holo_tune_upstream_up", (("upstream", "time"),))] == 1
            assert seen[("holo_tune_draining", ())] == 0
            # Without --ready-needs a server that dies leaves serve ready.
            os.kill(server_pid(proc, "mcp_server_time"), signal.SIGKILL)
            assert wait_status(port, 200, down="time")["ready"] is True
            assert metrics(port)[("holo_tune_upstream_up", (("upstream", "time"),))] == 0

            # Four searches whose query embedding takes 2 s, and a call that takes 2 s, are in
            # flight when SIGTERM comes.
            embeddings.delay = 2.0
            queries = [f"what time is it in city number {i}" for i in range(4)]
            call = {
                "name": "call_tool",
                "arguments": {"name": "tools-tool_01", "arguments": {"query": "x"}},
            }
            with ThreadPoolExecutor(5) as pool:
                searches = [pool.submit(stateless_search, url, query) for query in queries]
                slow = pool.submit(stateless, url, "tools/call", call)
                deadline = time.monotonic() + 10
                while metrics(port)[("holo_tune_requests_in_flight", ())] < 5:
                    assert time.monotonic() < deadline, "the requests did not start"
                    time.sleep(0.02)
                children = descendants(proc.pid)
                proc.send_signal(signal.SIGTERM)
                time.sleep(0.3)
                refused = httpx2.post(
                    url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers=STATELESS_HEADERS,
                    timeout=10.0,
                )
                assert refused.status_code == 503
                assert refused.json()["error"]["message"].startswith("serve is stopping")
                assert get(port, "/readyz").status_code == 503
                assert get(port, "/healthz").status_code == 200
                answers = [search.result(timeout=20) for search in searches]
                answered = slow.result(timeout=20)
            assert all(isinstance(names, list) for names in answers)
            assert not answered.get("isError"), answered
            assert answered["content"][0]["text"] == 'tool_01 called with {"query": "x"}'

            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert children and alive(children) == []  # the tools server (the time server died)
    text = log.read_text()
    assert "draining: 5 requests in flight" in text and "drained: no request in flight" in text
    assert text.index("drained") < text.index("server tools: stopped")


def test_a_drain_waits_for_the_requests_in_flight_then_refuses_every_new_one() -> None:
    """The drain's logic on its own (the sample's snapshot index, no server)."""
    sample = Path(__file__).resolve().parents[1] / "sample_configs"
    agent, catalog = sample / "research-agent.yaml", sample / "research-agent.catalog.json"
    args = parse_args(["serve", str(agent), "--embedder", "none", "--catalog", str(catalog)])
    op = Operation(snapshot_index(args, served_from_args(args)), None)
    left: list[int] = []

    async def run() -> None:
        assert op.enter() and op.enter()
        assert op.readiness()[0] is True

        async def finish() -> None:
            await anyio.sleep(0.1)
            left.append(op.in_flight)
            op.leave()
            await anyio.sleep(0.1)
            left.append(op.in_flight)
            op.leave()

        async with anyio.create_task_group() as group:
            group.start_soon(finish)
            assert await op.drain(30.0) == 0
            assert left == [2, 1] and op.in_flight == 0  # it returned once both had left
        assert op.enter() is False and op.readiness()[0] is False
        assert op.enter() is False
        assert await op.drain(0.05) == 0
        assert op.enter() is False
        op.draining = False  # a request that never ends: the drain gives up after its time
        assert op.enter() is True
        assert await op.drain(0.05) == 1

    anyio.run(run)
    text = op.exposition().decode()
    assert "holo_tune_requests_refused_total 3.0" in text
    assert "holo_tune_draining 1.0" in text and "holo_tune_requests_in_flight 1.0" in text


class _Model:
    """A stand-in for a local model (the ``loaded``/``load()`` protocol
    :func:`~workbench.search.embedders.local.model_to_load` reads): the logic alone."""

    model_id = "local:stand-in"

    def __init__(self) -> None:
        self.loaded = False


def test_readyz_waits_for_the_embedding_model_and_says_when_it_failed() -> None:
    """A replica whose queries need a local model is not ready until it is loaded (a search
    before would wait seconds), and stays not ready, saying why, when the load failed; an index
    with no embedder has no model to wait for."""
    sample = Path(__file__).resolve().parents[1] / "sample_configs"
    agent, catalog = sample / "research-agent.yaml", sample / "research-agent.catalog.json"
    args = parse_args(["serve", str(agent), "--embedder", "none", "--catalog", str(catalog)])
    index = snapshot_index(args, served_from_args(args))
    op = Operation(index, None)
    ready, body = op.readiness()
    assert (ready, body["model"]) == (True, None)
    model = _Model()
    index.engine.embedder = model  # type: ignore[assignment]
    ready, body = op.readiness()
    assert (ready, body["model"]) == (False, "loading")
    model.loaded = True
    ready, body = op.readiness()
    assert (ready, body["model"]) == (True, "loaded")
    model.loaded = False
    op.model_error = "no such file: model.safetensors"
    ready, body = op.readiness()
    assert (ready, body["model"]) == (False, "failed: no such file: model.safetensors")


#: A ``sitecustomize`` that makes torch and sentence-transformers unimportable, as in an
#: install without torch (deploy/Dockerfile's).
NO_TORCH = """\
import importlib.abc, sys
class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
            raise ImportError(f"{name} is blocked: an install without torch")
sys.meta_path.insert(0, NoTorch())
"""


@LOCAL_EXTRA
def test_a_replica_with_minilm_is_ready_at_once_and_without_torch(tmp_path: Path) -> None:
    """The real MiniLM (the tool vectors from a warm cache, as a replica starts), run by numpy
    with torch unimportable: ``/readyz`` is 503 only while the model is ``loading``, then 200
    ``loaded``, a search answers, and the log names the backend."""
    sample = Path(__file__).resolve().parents[1] / "sample_configs"
    agent, catalog = sample / "research-agent.yaml", sample / "research-agent.catalog.json"
    minilm = ["--embedder", "local:all-MiniLM-L6-v2"]
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    warm = ["search", str(agent), "papers", "--runtime", "serve", "--catalog", str(catalog)]
    assert run_cli(*warm, *minilm, env={**os.environ, **env}).returncode == 0
    blocker = tmp_path / "no-torch"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_TORCH)
    port = free_port()
    log = tmp_path / "serve.err"
    proc = start_http(
        [str(agent), "--catalog", str(catalog), *minilm], port, log, PYTHONPATH=str(blocker), **env
    )
    try:
        states = []
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            answer = httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
            states.append((answer.status_code, answer.json()["model"]))
            if answer.status_code == 200:
                break
            time.sleep(0.05)
        assert states[-1] == (200, "loaded"), states
        assert set(states) <= {(503, "loading"), (200, "loaded")}
        assert stateless_search(f"http://127.0.0.1:{port}/mcp", "find papers on transformers")
        assert "embedding model local:all-MiniLM-L6-v2 (onnxruntime) loaded" in log.read_text()
    finally:
        stop(proc)


def test_an_answer_leaves_whole_and_an_event_stream_at_once() -> None:
    """``whole_answers``: a response's start waits for its body, so both leave in one step of
    the event loop (a replica killed between them left nginx a header it could not retry: a
    client's read error under load); an event stream's start is not held."""
    from workbench.serve.server import whole_answers

    async def run(content_type: bytes) -> list[str]:
        sent: list[str] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message["type"])

        wrapped = whole_answers(send)
        headers = [(b"content-type", content_type)]
        await wrapped({"type": "http.response.start", "status": 200, "headers": headers})
        sent.append("the app between")
        await anyio.sleep(0)
        await wrapped({"type": "http.response.body", "body": b"{}", "more_body": False})
        return sent

    start, body, between = "http.response.start", "http.response.body", "the app between"
    assert anyio.run(run, b"application/json") == [between, start, body]
    assert anyio.run(run, b"text/event-stream") == [start, between, body]
