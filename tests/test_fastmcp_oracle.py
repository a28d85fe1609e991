"""The ``fastmcp`` engine against FastMCP's own search transforms, tool for tool, in order.

The oracle is the ``fastmcp`` package (the ``serve`` extra, 4.1.6): its ``BM25SearchTransform``
and ``RegexSearchTransform`` search the tools a proxy of the data set's servers lists
(``ProxyTool.from_mcp_tool`` of each ``tools/list`` entry, renamed ``<server>_<tool>`` as mounting
does when there are several servers), through the transform's own ``_get_visible_tools`` (the
pinned tools left out) and ``_search``, as its ``search_tools`` does. holo-tune's side opens the
same data set as a user does (agent + catalog snapshot through the workspace) and asks the engine.

Every case of every data set in tests/data is searched with the full ranking (``max_results`` as
large as the catalog); the other settings (1, FastMCP's default 5, pinned tools, the regex
variant on a set of patterns) run on a sample of at most about ``SAMPLE`` cases, evenly spread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from fastmcp.server.providers.proxy import ProxyTool
from fastmcp.server.transforms.search import (
    BM25SearchTransform,
    RegexSearchTransform,
    bm25,
)
from fastmcp.tools.base import Tool as FastTool
from mcp import types as mcp_types

from workbench.evaluate.cases import load_cases
from workbench.search.strategies import FastMCPParams, FastMCPStrategy
from workbench.workspace import Workspace, open_workspace

pytestmark = pytest.mark.slow  # whole data sets: about 35 s of CPU, most of it bfcl's oracle

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
#: (name, agent, catalog snapshot, cases): the data sets and the sample agents' snapshots.
SETS: tuple[tuple[str, Path, Path, Path], ...] = (
    *(
        (name, DATA / "datasets" / name / "agent.yaml", DATA / "datasets" / name / "catalog.json",
         DATA / "datasets" / name / "cases.jsonl")
        for name in ("azure_mcp", "bfcl", "livemcpbench", "metatool", "stackone")
    ),
    ("livemcpbench_slice", DATA / "livemcpbench_slice" / "agent.yaml",
     DATA / "livemcpbench_slice" / "catalog.json", DATA / "livemcpbench_slice" / "cases.jsonl"),
    *(
        (name, REPO / "sample_configs" / f"{name}.yaml",
         REPO / "sample_configs" / f"{name}.catalog.json",
         REPO / "sample_configs" / f"{name}.cases.yaml")
        for name in ("research-agent", "python-servers")
    ),
)  # fmt: skip
#: The other settings run on about this many cases of a set (every case of a small one).
SAMPLE = 200
#: Regex patterns every set is searched with, besides words of its queries: plain words,
#: alternation, anchors, classes, a Unicode word, and patterns FastMCP refuses (a lookaround, a
#: backreference, broken syntax, one over 1,000 characters) or that match everything.
PATTERNS = (
    "search", "file|directory", "^get", "list.*(user|employee)", r"\bcreate\b", "[0-9]{2,}",
    "WEATHER", "天气", "(?<=a)b", r"(a)\1", "(unclosed", "x" * 1001, "", ".",
)  # fmt: skip


@dataclass
class Oracle:
    """FastMCP's side: the proxy's tools and the transform answering ``search_tools``."""

    tools: list[FastTool]

    def search(self, transform: Any, queries: Sequence[str]) -> list[list[str]]:
        """``search_tools``'s body for each query: the visible tools, then ``_search``."""

        class Server:  # what ``get_tool_catalog`` asks of ``ctx.fastmcp``
            async def list_tools(self, run_middleware: bool = True) -> list[FastTool]:
                return list(tools)

        class Context:
            fastmcp = Server()

        tools = self.tools

        async def run() -> list[list[str]]:
            # The catalog is the same for every query: its visible tools are read once, and
            # the BM25 transform's staleness hash of them (a SHA-256 of every tool's text, made
            # on each search) is made once; the index is still built and searched by _search.
            visible = await transform._get_visible_tools(Context())
            hashed = bm25._catalog_hash(visible)
            out = []
            with mock.patch.object(bm25, "_catalog_hash", lambda _tools: hashed):
                for query in queries:
                    out.append([t.name for t in await transform._search(visible, query)])
            return out

        return asyncio.run(run())


def oracle_of(snapshot: Path) -> Oracle:
    """The tools FastMCP's proxy of the snapshot's servers lists, in its order and names."""
    servers = json.loads(snapshot.read_text(encoding="utf-8"))["servers"]
    several = len(servers) > 1
    tools: list[FastTool] = []
    for server, body in servers.items():
        for raw in body["tools"]:
            tool = ProxyTool.from_mcp_tool(lambda: None, mcp_types.Tool.model_validate(raw))
            if several:  # what mount(proxy, namespace=server) lists
                tool = tool.model_copy(update={"name": f"{server}_{tool.name}"})
            tools.append(tool)
    return Oracle(tools)


@dataclass
class Opened:
    name: str
    workspace: Workspace
    queries: list[str]
    oracle: Oracle

    @property
    def sample(self) -> list[str]:
        """Every n-th query, so that about ``SAMPLE`` remain."""
        return self.queries[:: max(1, len(self.queries) // SAMPLE)]

    def engine(self, **params: Any) -> FastMCPStrategy:
        ws = self.workspace
        return FastMCPStrategy(ws.catalog, ws.tokens, FastMCPParams(**params))


@pytest.fixture(scope="module", params=SETS, ids=[s[0] for s in SETS])
def opened(request: pytest.FixtureRequest) -> Opened:
    name, agent, snapshot, cases = request.param
    ws = open_workspace(agent, catalog_file=snapshot, embedder_spec="none")
    queries = [case.query for case in load_cases(cases)]
    return Opened(name, ws, queries, oracle_of(snapshot))


def mismatches(
    engine: FastMCPStrategy, queries: Sequence[str], expected: Sequence[Sequence[str]]
) -> list[tuple[str, list[str], list[str]]]:
    got = [engine.found_names(q) for q in queries]
    return [(q, g, list(e)) for q, g, e in zip(queries, got, expected, strict=True) if g != e]


def pins_of(opened: Opened) -> list[str]:
    """Three tools the first queries find (so pinning them moves the others' ranks and scores),
    one of them by holo-tune's full name: the engine takes either."""
    engine = opened.engine(max_results=3)
    names: list[str] = []
    for query in opened.queries:
        names += [n for n in engine.found_names(query) if n not in names]
        if len(names) >= 3:
            break
    return names[:3]


def test_bm25_full_ranking_matches_fastmcp_on_every_case(opened: Opened) -> None:
    """Every tool that scores, in FastMCP's order, for every case of the set."""
    size = len(opened.oracle.tools)
    assert size == len(opened.engine().proxied)
    expected = opened.oracle.search(BM25SearchTransform(max_results=size), opened.queries)
    wrong = mismatches(opened.engine(max_results=size), opened.queries, expected)
    print(f"{opened.name}: {len(opened.queries) - len(wrong)}/{len(opened.queries)} identical")
    assert sum(map(len, expected)) > len(opened.queries)  # the rankings are not empty
    assert wrong == []


@pytest.mark.parametrize("max_results", [1, 5])
def test_bm25_max_results_matches_fastmcp(opened: Opened, max_results: int) -> None:
    queries = opened.sample
    expected = opened.oracle.search(BM25SearchTransform(max_results=max_results), queries)
    assert mismatches(opened.engine(max_results=max_results), queries, expected) == []


def test_bm25_always_visible_matches_fastmcp(opened: Opened) -> None:
    """Pinned tools leave the index (its N, df and mean length change) and the results."""
    pins = pins_of(opened)
    queries = opened.sample
    expected = opened.oracle.search(
        BM25SearchTransform(max_results=10, always_visible=pins), queries
    )
    catalog = opened.workspace.catalog
    engine = opened.engine(max_results=10)
    first = next(t for t in engine.proxied if t.name == pins[0] and t.index is not None)
    as_typed = (catalog.tools[first.index].full_name, *pins[1:])  # type: ignore[index]
    pinned = opened.engine(max_results=10, always_visible=as_typed)
    assert [t.name for t in pinned.pinned] == [t.name for t in engine.proxied if t.name in pins]
    assert mismatches(pinned, queries, expected) == []
    assert not any(set(pins) & set(found) for found in expected)


def test_regex_matches_fastmcp(opened: Opened) -> None:
    """Fixed patterns and the longest word of sampled queries, at 3 and 10 results, with and
    without pinned tools."""
    words = [max(q.split(), key=len) for q in opened.sample[:50] if q.split()]
    patterns = [*PATTERNS, *words]
    pins = pins_of(opened)
    for max_results, always_visible in ((3, []), (10, pins)):
        transform = RegexSearchTransform(max_results=max_results, always_visible=always_visible)
        expected = opened.oracle.search(transform, patterns)
        engine = opened.engine(
            variant="regex", max_results=max_results, always_visible=tuple(always_visible)
        )
        assert mismatches(engine, patterns, expected) == []
        assert any(expected)
