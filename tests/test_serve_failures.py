"""``holo-tune serve`` as a service, with real stdio servers that fail the ways real ones do.

One serve process (the real command over stdio) fronts two good servers (tests/servers/
toolserver.py ``--callable``), one that fails to start quoting a secret of its environment, and
one that never answers. Each failure is one clear MCP error (``isError``) while every other tool
keeps working: a server down from the start, an unknown tool, arguments that break the schema,
a call that hangs (bounded by ``--timeout``), a server that dies mid-call (the next call starts
it again), an oversized query. ``tools/list_changed`` re-indexes; the logs hold no secret;
SIGTERM leaves no server behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from serve_client import search_names, serve_argv, serve_env, serve_stdio, text_of

pytestmark_fastmcp = pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])

SERVERS = Path(__file__).resolve().parent / "servers"
TOOLSERVER = str(SERVERS / "toolserver.py")
MISBEHAVING = str(SERVERS / "misbehaving.py")
SECRET = "s3cr3t-token-0123456789"
#: Each upstream's timeout: long enough for a Python test server to start on a loaded machine
#: (the hung server and the hanging call wait this long).
TIMEOUT = 8.0
ProcessFinder = Callable[[str], list[int]]

pytestmark = [pytest.mark.slow, pytestmark_fastmcp]


def write_agent(tmp_path: Path, tag: str) -> Path:
    servers: dict[str, list[str]] = {
        "good": [TOOLSERVER, "--tools", "3", "--callable", "--tag", f"{tag}-good"],
        "other": [TOOLSERVER, "--tools", "2", "--callable", "--tag", f"{tag}-other"],
        "broken": [MISBEHAVING, "exit-env", "TEST_TOKEN", "--tag", f"{tag}-broken"],
        "hung": [MISBEHAVING, "hang", "--tag", f"{tag}-hung"],
    }
    entries = "".join(
        f"  - name: {name}\n    type: mcp\n    description: test server {name}\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
        f"    env:\n      TEST_TOKEN: {SECRET}\n"
        for name, args in servers.items()
    )
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: served\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        f"instructions:\n  inline: test\ntools:\n{entries}"
        "tool_filtering:\n  enabled: true\n  top_k: 20\n  similarity_threshold: 0.01\n"
        "  search_method: bm25\n"
    )
    return agent


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    result = await session.call_tool("call_tool", {"name": name, "arguments": arguments})
    return result.is_error, text_of(result)


async def works(session: ClientSession) -> None:
    """Both good servers answer (every other tool keeps working)."""
    for name in ("good-tool_01", "other-tool_00"):
        error, text = await call(session, name, {"query": "x"})
        assert not error and text == f"{name.split('-')[1]} called with " + '{"query": "x"}'


def test_failures_are_mcp_errors_and_the_rest_keeps_serving(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    agent = write_agent(tmp_path, tag)
    errlog_path = tmp_path / "serve.err"

    async def scenario() -> None:
        args = [str(agent), "--timeout", str(TIMEOUT), "--pin", "other-tool_01"]
        with errlog_path.open("w") as errlog:
            async with serve_stdio(args, errlog) as session:
                listing = [t.name for t in (await session.list_tools()).tools]
                assert listing == ["other-tool_01", "search_tools", "call_tool"]
                found = await search_names(session, "test tool number")
                tools = {f"good-tool_0{i}" for i in range(3)} | {"other-tool_00", "other-tool_01"}
                assert tools <= set(found)
                assert not [name for name in found if name.startswith(("broken-", "hung-"))]
                await works(session)

                # a server that failed to start: down, and why (it is tried again once)
                error, text = await call(session, "broken-anything", {})
                assert error and text.startswith("server broken is down: ")
                assert "the key [hidden] is refused" not in text  # the client sees the server
                error, text = await call(session, "broken-anything", {})
                assert error and "is started again on a call in 2 s or later" in text
                error, text = await call(session, "hung-anything", {})
                assert error and "server hung is down" in text
                await works(session)

                # unknown tools
                error, text = await call(session, "nope-tool", {})
                assert error and text.startswith("unknown tool 'nope-tool'")
                error, text = await call(session, "good-tool_99", {})
                assert error and "server good has no tool 'tool_99'" in text
                direct = await session.call_tool("good-nothing", {})
                assert direct.is_error and "no tool 'nothing'" in text_of(direct)

                # arguments that break the schema never reach the server
                error, text = await call(session, "good-tool_00", {"query": 5})
                assert error and text == (
                    "arguments for good-tool_00 break its input schema at query: "
                    "5 is not of type 'string'"
                )
                error, text = await call(session, "good-tool_00", {})
                assert error and "'query' is a required property" in text
                await works(session)

                # a call that hangs is bounded by the timeout
                started = time.monotonic()
                error, text = await call(session, "good-hang", {})
                assert error and text == f"server good: hang gave no answer within {TIMEOUT:g} s"
                assert TIMEOUT <= time.monotonic() - started < TIMEOUT + 5
                await works(session)

                # a server that dies mid-call: an error, then the next call starts it again
                before = find_processes(f"{tag}-good")
                error, text = await call(session, "good-crash", {})
                assert error and text.startswith("server good exited during the call to crash")
                await works(session)
                after = find_processes(f"{tag}-good")
                assert after and set(after).isdisjoint(before)

                # a tool called directly by its full name, and a pinned one
                direct = await session.call_tool("other-tool_00", {"query": "y"})
                assert text_of(direct) == 'tool_00 called with {"query": "y"}'
                pinned = await session.call_tool("other-tool_01", {"query": "z"})
                assert text_of(pinned) == 'tool_01 called with {"query": "z"}'

                # tools/list_changed: the server is listed again and re-indexed
                assert "good-tool_new" not in await search_names(session, "added by grow")
                error, _ = await call(session, "good-grow", {})
                assert not error
                for _ in range(50):
                    if "good-tool_new" in await search_names(session, "added by grow"):
                        break
                    await anyio.sleep(0.1)
                assert "good-tool_new" in await search_names(session, "added by grow")

                # bad requests to serve's own tools
                long = await session.call_tool("search_tools", {"query": "x " * 33_000})
                assert long.is_error and "longer than 65536 bytes" in text_of(long)
                assert await search_names(session, "test tool " * 2000)  # 20 KB: a real message
                error, text = await call(session, "search_tools", {})
                assert error and "one of serve's own tools" in text
                await works(session)

    anyio.run(scenario)
    assert find_processes(tag) == []  # the client left: serve and every server are gone
    stderr = errlog_path.read_text()
    log_file = Path(re.search(r"log: (\S+serve\.log)", stderr).group(1))  # type: ignore[union-attr]
    for text in (stderr, log_file.read_text()):
        assert SECRET not in text
        assert "the key [hidden] is refused" in text  # the broken server's reason, scrubbed
        assert f"server hung failed to start (no answer within {TIMEOUT:g} s)" in text
        assert "server good: its tools changed; listed again" in text


def test_sigterm_stops_every_server(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    agent = write_agent(tmp_path, tag)
    err = tmp_path / "serve.err"
    with err.open("wb") as errlog:
        proc = subprocess.Popen(
            serve_argv([str(agent), "--timeout", str(TIMEOUT)]),
            env=serve_env(),
            stdin=subprocess.PIPE,  # kept open: the client is still there
            stdout=subprocess.PIPE,
            stderr=errlog,
        )
    try:
        deadline = time.monotonic() + 60
        while "serving on stdio" not in err.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, err.read_text()
            time.sleep(0.1)
        assert len(find_processes(f"{tag}-good")) == 1
        assert len(find_processes(f"{tag}-other")) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()
    assert find_processes(tag) == []
    assert "SIGTERM: stopping" in err.read_text()


def test_a_missing_fastmcp_is_one_line(tmp_path: Path) -> None:
    """Without the serve extra: one line naming it, exit 2 (fastmcp hidden from the import)."""
    code = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'fastmcp' or name.startswith('fastmcp.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from workbench.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    agent = write_agent(tmp_path, "unused")
    result = subprocess.run(
        [sys.executable, "-c", code, "serve", str(agent)],
        env=serve_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr == (
        "holo-tune: error: holo-tune serve needs the serve extra (FastMCP): "
        f"{sys.executable} -m pip install 'fastmcp>=4.1.6,<5' 'jsonschema>=4.20' "
        "'prometheus-client>=0.20' "
        "(in a clone of holo-tune: pip install -e '.[serve]')\n"
    )
    assert os.path.exists(agent)
