"""The catalog grows as servers answer: real stdio servers, one held back until the test says so.

The slow server answers ``tools/list`` only once a file exists, and the test creates that file
from the ``on_partial`` callback, after it has seen the fast server's tools: so the partial
catalog provably arrived while the slow server was still connecting (no timing involved).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import numpy as np

from workbench.catalog import Catalog, aload_catalog
from workbench.catalog.enumerate import alist_agent_tools
from workbench.catalog.specs import specs_from_agent
from workbench.config import AgentConfig, load_agent
from workbench.search.embedders import ToolEmbeddingCache
from workbench.search.embedders.resolve import EmbedderChoice
from workbench.search.types import FloatArray
from workbench.workspace import build_workspace

TOOLSERVER = Path(__file__).resolve().parent / "servers" / "toolserver.py"
ProcessFinder = Callable[[str], list[int]]


def write_agent(folder: Path, release: Path, tag: str) -> Path:
    """An agent whose config order is: a vectorstore tool, ``slow`` (3 tools, answers once
    ``release`` exists), ``fast`` (2 tools), then a function tool."""
    py = json.dumps(sys.executable)
    server = json.dumps(str(TOOLSERVER))
    path = folder / "agent.yaml"
    path.write_text(
        "name: partial-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n"
        "  - name: search_docs\n    type: vectorstore\n    description: Search the docs\n"
        "    source: docs.md\n"
        "  - name: slow\n    type: mcp\n    description: answers late\n"
        f"    command: {py}\n"
        f"    args: [{server}, '--tools', '3', '--wait-file', {json.dumps(str(release))},"
        f" '--tag', '{tag}']\n"
        "  - name: fast\n    type: mcp\n    description: answers at once\n"
        f"    command: {py}\n"
        f"    args: [{server}, '--tools', '2', '--tag', '{tag}']\n"
        "  - name: add\n    type: function\n    description: Add two numbers\n"
        "    file: tools.py\n    function: add\n"
    )
    (folder / "tools.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    return path


def load(agent: AgentConfig, **kw: object) -> Catalog:
    async def main() -> Catalog:
        return await aload_catalog(agent, timeout=60, log_dir=agent.path.parent, **kw)  # type: ignore[arg-type]

    return anyio.run(main)


def states(catalog: Catalog) -> dict[str, str]:
    return {s.name: s.state for s in catalog.servers}


def test_the_fast_servers_tools_arrive_before_the_slow_one_answers(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    release = tmp_path / "release"
    agent = load_agent(write_agent(tmp_path, release, tag))
    partials: list[Catalog] = []

    def on_partial(catalog: Catalog) -> None:
        partials.append(catalog)
        if any(t.plugin == "fast" for t in catalog.tools):
            release.touch()  # only now may the slow server answer

    final = load(agent, on_partial=on_partial)

    # Before any server answered: the local tools, in their places; both servers not done.
    first = partials[0]
    assert first.names() == ["vectorstore-search_docs", "function_tools-add"]
    assert states(first)["slow"] in ("pending", "connecting")
    assert states(first)["fast"] in ("pending", "connecting")
    # The fast server answered while the slow one was still connecting: its tools in the
    # runtime's order (config order of the entries, not the order of the answers).
    grown = partials[-1]
    assert len(partials) == 2
    assert grown.names() == [
        "vectorstore-search_docs",
        "fast-tool_00",
        "fast-tool_01",
        "function_tools-add",
    ]
    assert states(grown) == {
        "vectorstore": "local",
        "slow": "connecting",
        "fast": "ok",
        "function_tools": "local",
    }
    assert [s.name for s in grown.servers] == ["vectorstore", "slow", "fast", "function_tools"]
    assert grown.server("fast").tools == 2  # type: ignore[union-attr]
    assert grown.server("slow").tools == 0  # type: ignore[union-attr]
    # A catalog handed out is a snapshot: the slow server answering later does not change it.
    assert states(first)["slow"] in ("pending", "connecting")
    # Then everything, the slow server's tools before the fast one's.
    assert final.names() == [
        "vectorstore-search_docs",
        "slow-tool_00",
        "slow-tool_01",
        "slow-tool_02",
        "fast-tool_00",
        "fast-tool_01",
        "function_tools-add",
    ]
    assert states(final)["slow"] == "ok"
    assert find_processes(tag) == []


def test_the_final_catalog_is_the_one_without_partials(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    release = tmp_path / "release"
    release.touch()  # no holding back: both answer as they come
    agent = load_agent(write_agent(tmp_path, release, tag))
    seen: list[Catalog] = []
    grown = load(agent, on_partial=seen.append)
    plain = load(agent)
    assert seen  # at least the catalog before any server answered
    assert grown.tools == plain.tools
    assert [t.definition for t in grown.tools] == [t.definition for t in plain.tools]
    assert grown.listings == plain.listings
    assert grown.notes == plain.notes
    assert [(s.name, s.transport, s.state, s.error, s.tools) for s in grown.servers] == [
        (s.name, s.transport, s.state, s.error, s.tools) for s in plain.servers
    ]
    assert all(len(c.tools) < len(grown.tools) for c in seen)  # every partial is incomplete
    assert find_processes(tag) == []


def test_replayed_servers_are_in_the_first_catalog(tmp_path: Path) -> None:
    """The dashboard lists one server again this way: the others stand in with what they listed
    (a snapshot that is not ``--catalog``, which starts nothing: test_catalog_snapshot)."""
    tools = [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}]
    release = tmp_path / "release"
    agent = load_agent(write_agent(tmp_path, release, "unused"))
    # ``slow`` is replayed; ``fast`` is started, and being the last to answer it makes the
    # returned catalog (no partial of its own).
    seen: list[Catalog] = []

    async def listing() -> Catalog:
        return await alist_agent_tools(
            specs_from_agent(agent),
            snapshot={"slow": tools},
            timeout=60,
            log_dir=tmp_path,
            on_partial=seen.append,
        )

    final = anyio.run(listing)
    assert len(seen) == 1 and "slow-t" in seen[0].names()
    assert "fast-tool_00" not in seen[0].names()
    assert final.names()[1:4] == ["slow-t", "fast-tool_00", "fast-tool_01"]


class CountingEmbedder:
    """Remembers the texts it is asked to embed (a deterministic stand-in for a model)."""

    spec = "test:counting"
    model_id = "counting-test-model"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> FloatArray:
        self.texts += texts
        rows = [[len(t), t.count("o") + 1.0, 1.0] for t in texts]
        return np.array(rows, dtype=np.float64)


def test_a_grown_catalog_embeds_only_its_new_tools(tmp_path: Path, tag: str) -> None:
    """The dashboard rebuilds the workspace for each catalog so far, keeping the embedder:
    each tool is embedded once in all."""
    release = tmp_path / "release"
    agent = load_agent(write_agent(tmp_path, release, tag))
    partials: list[Catalog] = []

    def on_partial(catalog: Catalog) -> None:
        partials.append(catalog)
        if any(t.plugin == "fast" for t in catalog.tools):
            release.touch()

    final = load(agent, on_partial=on_partial)
    embedder = CountingEmbedder()
    choice = EmbedderChoice(
        embedder=embedder,
        spec="test",
        model_id=embedder.model_id,
        runtime="test",
        cache=ToolEmbeddingCache(tmp_path / "embeddings"),
    )
    workspace = None
    for catalog in [*partials, final]:
        workspace = build_workspace(agent, catalog, embedder=choice)
        workspace.engine.prepare()
        assert workspace.embedder is choice
    assert workspace is not None
    sent = embedder.texts
    assert len(partials) == 2
    assert sorted(sent) == sorted(t.search_text for t in final.tools)
    ranking = workspace.engine.rank("tool number 2", "semantic")
    assert ranking.method == "semantic" and ranking.fallback is None
