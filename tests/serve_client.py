"""Reaching ``holo-tune serve`` from the tests: the real command over stdio or streamable HTTP
with the ``mcp`` client, and the side every answer is held to: ``holo-tune search --runtime serve
--json``'s answer in its order, computed in-process by the core functions the command calls.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from workbench.cli import parse_args
from workbench.commands.common import open_command_workspace, runtime_of
from workbench.commands.search_ranked import ranked_json
from workbench.search.flags import SearchFlags
from workbench.search.serving import NO_TOOL_FITS

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "tests" / "data" / "datasets"


def serve_env(**extra: str) -> dict[str, str]:
    """The environment of a serve process: this checkout first on PYTHONPATH."""
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def serve_argv(args: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "workbench", "serve", *args]


@asynccontextmanager
async def serve_stdio(
    args: Sequence[str], errlog: TextIO, **env: str
) -> AsyncIterator[ClientSession]:
    """``holo-tune serve ARGS`` over stdio, initialized."""
    argv = serve_argv(args)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=serve_env(**env))
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_http(args: Sequence[str], port: int, log: Path, **env: str) -> subprocess.Popen[bytes]:
    """``holo-tune serve ARGS --transport http --port PORT`` started, once the port answers."""
    argv = serve_argv([*args, "--transport", "http", "--port", str(port)])
    with log.open("wb") as err:
        proc = subprocess.Popen(
            argv, env=serve_env(**env), stdin=subprocess.DEVNULL, stdout=err, stderr=err
        )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited ({proc.returncode}): {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"serve did not listen on {port}: {log.read_text()}")


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, theirs, ...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pids: Sequence[int]) -> list[int]:
    """The processes of ``pids`` still running (zombies excluded)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            running.append(pid)
    return running


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def search_names(session: ClientSession, query: str) -> list[str]:
    """``search_tools``' answer: the tools' names in its order (each a full definition); none
    when it answers that no tool fits."""
    result = await session.call_tool("search_tools", {"query": query})
    assert not result.is_error, text_of(result)
    text = text_of(result)
    if text.startswith(NO_TOOL_FITS):
        assert result.structured_content == {"result": []}
        return []
    tools: list[dict[str, Any]] = json.loads(text)
    assert all({"name", "inputSchema"} <= set(tool) for tool in tools)
    return [tool["name"] for tool in tools]


class Expected:
    """``holo-tune search AGENT QUERY --runtime serve [ARGS] --json`` in-process: the same
    parsing, workspace (serve's view of the catalog) and functions as the command, read as what
    the search returns, in its order."""

    def __init__(self, agent: Path | str, *args: str) -> None:
        argv = ["search", str(agent), "query", "--runtime", "serve", *args, "--json"]
        self.args: argparse.Namespace = parse_args(argv)
        self.workspace = open_command_workspace(self.args, agent_warnings=False)
        runtime = runtime_of(self.args, self.workspace.agent)
        ranker = runtime.plugin.search_ranker(
            self.workspace, SearchFlags.of(vars(self.args)), lambda line: None
        )
        assert ranker is not None, "serve searches with its own engine"
        self.ranker = ranker

    def json(self, query: str) -> dict[str, Any]:
        """``search --json``'s object for ``query``."""
        return ranked_json(self.workspace, self.ranker(query), None)

    def __call__(self, query: str) -> list[str]:
        selected: list[str] = self.json(query)["selected"]
        return selected


def sample_queries(dataset: Path, count: int) -> list[str]:
    """``count`` of a data set's case queries, evenly spread over the file."""
    lines = (dataset / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    step = max(1, len(lines) // count)
    return [json.loads(line)["query"] for line in lines[::step][:count]]


#: The headers of a request of the stateless protocol: no ``initialize`` before it and no
#: ``Mcp-Session-Id`` (the streamable-HTTP transport answers JSON or an event stream).
STATELESS_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def stateless(url: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One JSON-RPC request POSTed on its own (no session): its response's ``result``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    answer = httpx2.post(url, json=body, headers=STATELESS_HEADERS, timeout=30.0)
    assert answer.status_code == 200, answer.text
    assert "mcp-session-id" not in answer.headers
    text = answer.text
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        text = "".join(
            line.removeprefix("data:").strip()
            for line in text.splitlines()
            if line.startswith("data:")
        )
    message: dict[str, Any] = json.loads(text)
    assert "error" not in message, message
    result: dict[str, Any] = message["result"]
    return result


def stateless_search(url: str, query: str) -> list[str]:
    """``search_tools``' names for ``query``, asked with one stateless request."""
    result = stateless(url, "tools/call", {"name": "search_tools", "arguments": {"query": query}})
    assert not result.get("isError"), result
    return [tool["name"] for tool in result["structuredContent"]["result"]]
