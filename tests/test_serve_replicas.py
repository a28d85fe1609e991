"""``holo-tune serve --transport http`` as a replica behind a load balancer: the real command on
127.0.0.1 in front of real stdio MCP servers (``mcp-server-time`` from the test extras and
tests/servers/toolserver.py).

A replica starts from ``holo-tune snapshot`` (``--catalog FILE --live-calls``): it answers a
search before its servers have listed anything, and its calls go to the live servers. Any request
is answered on its own (the stateless protocol: no ``initialize``, no ``Mcp-Session-Id``), and the
``mcp`` SDK's session-based streamable-HTTP client works too.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from serve_client import (
    alive,
    descendants,
    free_port,
    http_session,
    search_names,
    serve_argv,
    serve_env,
    start_http,
    stateless,
    stateless_search,
    text_of,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"]),
    pytest.mark.provided("the test extras (mcp-server-time)", modules=["mcp_server_time"]),
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
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "snapshot", str(agent), "-o", str(out)],
        env=serve_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
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
    args = [str(agent), "--catalog", str(snapshot), "--live-calls", "--embedder", "none"]
    proc = start_http(args, port, log)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        # Stateless: each request on its own, before the tools server has listed anything.
        listed = stateless(url, "tools/list")
        assert [tool["name"] for tool in listed["tools"]] == ["search_tools", "call_tool"]
        found = stateless_search(url, "what time is it in Tokyo")
        assert "time-get_current_time" in found
        assert "server tools: up" not in log.read_text()  # the search did not wait for it

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
    done = subprocess.run(
        serve_argv([str(agent), "--live-calls"]),
        env=serve_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "holo-tune: --live-calls: needs --catalog (without it serve lists the live servers)"
    )
