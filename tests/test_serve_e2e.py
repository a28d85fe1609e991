"""End to end: ``holo-tune serve`` on the sample research agent with its real npm servers
(memory, brave_search; the paper index is the agent's own tool), reached with the ``mcp`` client
over stdio and over streamable HTTP on 127.0.0.1: the listing, a search (what ``holo-tune
search --json`` selects, in ranking order), the memory server's create_entities then read_graph
through ``call_tool``; when the client leaves or SIGTERM comes, no server is left.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from serve_client import (
    REPO,
    Expected,
    alive,
    descendants,
    free_port,
    http_session,
    search_names,
    serve_stdio,
    start_http,
    text_of,
)

pytestmark_fastmcp = pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])

pytestmark = [*[pytest.mark.npm, pytest.mark.slow], pytestmark_fastmcp]
ProcessFinder = Callable[[str], list[int]]
QUERIES = [
    "remember that Ada Lovelace wrote the first program",
    "search the web for news about transformers",
    "find papers about retrieval",
]
ENV = {"BRAVE_API_KEY": "placeholder-not-a-real-key"}


def research_agent(tmp_path: Path, tag: str) -> Path:
    """The sample agent, its memory server writing to a file of the test (and tagged)."""
    shutil.copytree(REPO / "sample_configs" / "data", tmp_path / "data")
    text = (REPO / "sample_configs" / "research-agent.yaml").read_text()
    memory = '    args: ["-y", "@modelcontextprotocol/server-memory"]\n'
    assert memory in text
    memory_file = json.dumps(str(tmp_path / "memory.jsonl"))
    text = text.replace(
        memory,
        f'    args: ["-y", "@modelcontextprotocol/server-memory", "{tag}"]\n'
        f"    env:\n      MEMORY_FILE_PATH: {memory_file}\n",
    )
    agent = tmp_path / "research-agent.yaml"
    agent.write_text(text)
    return agent


async def exercise(session: ClientSession, expected: Expected) -> None:
    listing = [tool.name for tool in (await session.list_tools()).tools]
    assert listing == ["search_tools", "call_tool"]
    for query in QUERIES:
        assert await search_names(session, query) == expected(query)
    entities = [{"name": "Ada", "entityType": "person", "observations": ["wrote a program"]}]
    created = await session.call_tool(
        "call_tool", {"name": "memory-create_entities", "arguments": {"entities": entities}}
    )
    assert not created.is_error, text_of(created)
    graph = await session.call_tool("call_tool", {"name": "memory-read_graph", "arguments": {}})
    assert not graph.is_error
    assert json.loads(text_of(graph))["entities"][0]["observations"] == ["wrote a program"]


def test_over_stdio(
    tmp_path: Path, tag: str, find_processes: ProcessFinder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", ENV["BRAVE_API_KEY"])
    agent = research_agent(tmp_path, tag)
    expected = Expected(agent, "--embedder", "none")
    assert "memory-create_entities" in expected.workspace.catalog.names()

    async def run() -> None:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio([str(agent), "--embedder", "none"], errlog, **ENV) as session:
                assert len(find_processes(tag)) >= 1  # the memory server runs
                await exercise(session, expected)

    anyio.run(run)
    assert find_processes(tag) == []  # the client left: serve stopped its servers


def test_over_http_then_sigterm(
    tmp_path: Path, tag: str, find_processes: ProcessFinder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", ENV["BRAVE_API_KEY"])
    agent = research_agent(tmp_path, tag)
    expected = Expected(agent, "--embedder", "none")
    port = free_port()
    proc = start_http([str(agent), "--embedder", "none"], port, tmp_path / "serve.err", **ENV)
    try:
        children = descendants(proc.pid)
        assert len(children) >= 2 and find_processes(tag)  # memory and brave_search

        async def run() -> None:
            async with http_session(f"http://127.0.0.1:{port}/mcp") as session:
                await exercise(session, expected)

        anyio.run(run)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert alive(children) == []
    assert find_processes(tag) == []
    log = (tmp_path / "serve.err").read_text()
    assert "serving on http://127.0.0.1:" in log and "SIGTERM: stopping" in log
