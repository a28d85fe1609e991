"""holo-tune's catalog, ``holodeck`` engine and selection against HoloDeck 0.6.40's own code.

The oracle is the runtime's module itself (``holodeck.lib.tool_filter``, fetched by ``make test``
into .cache/holodeck), fed the kernel HoloDeck builds from the same raw catalog (the servers'
tools/list: a snapshot or a data set's catalog.json) through its own conversion and Semantic
Kernel 1.45's (:mod:`oracle.conversion`, whose docstring lists exactly what is stood in), and the
same embeddings. Compared: every tool's full name in index order and the text the index searches
and embeds (name, plugin, description, parameters), every tool's rank (tie order included), every
score (within 1e-9; BM25 bit for bit), and the selected set under settings that exercise each step
of ``filter_tools``.

One data set, bfcl, cannot be loaded by the runtime at all (Semantic Kernel refuses a function
name with a dot and a parameter name outside A-Za-z0-9_-): that refusal is checked, and its
rankings are compared on the kernel SK would build if it accepted those names (``lenient_names``,
the one change made to the published code).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracle.catalogs import (
    DATASET_NAMES,
    agent_tools,
    dataset_kernel,
    dataset_path,
    load_cases,
    load_dataset_catalog,
)
from oracle.conversion import plugin_attributes, runtime_kernel, snapshot_servers
from oracle.embedders import Failing, HashedBagEmbedder, Memo, minilm
from oracle.runner import OracleRun, run_oracle
from oracle.stubs import ORACLE_PACKAGE, holodeck_tool_filter
from oracle.wheels import HOLODECK_WHEEL, SK_WHEEL
from provided import LOCAL_EXTRA

from workbench.catalog.build import SK_PLUGIN_ATTRIBUTES, mcp_tools
from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import Catalog
from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering
from workbench.search.engine import HoloDeckEngine
from workbench.search.selection import ranked, select
from workbench.search.types import Embedder
from workbench.search.usage import usage_array

METHODS = ("bm25", "semantic", "hybrid")
CASES_PER_SET = 40
TOLERANCE = 1e-9

pytestmark = pytest.mark.provided(
    "HoloDeck 0.6.40's tool filter and the Semantic Kernel 1.45.0 wheel",
    files=[
        *(ORACLE_PACKAGE / name for name in ("index.py", "manager.py")),
        HOLODECK_WHEEL,
        SK_WHEEL,
    ],
)


@pytest.fixture(scope="module")
def tf() -> Iterator[Any]:
    with holodeck_tool_filter() as module:
        yield module


def settings_for(catalog: Catalog) -> list[ToolFiltering]:
    """Settings that exercise each step of filter_tools on this catalog."""
    names = catalog.names()
    bare = catalog.tools[len(names) // 2].name  # a bare function name (suffix match)
    full = names[-1]
    return [
        ToolFiltering(top_k=5, similarity_threshold=0.3, always_include_top_n_used=0),
        ToolFiltering(top_k=5, similarity_threshold=0.3),  # HoloDeck's defaults: cold top-3 used
        ToolFiltering(
            top_k=4,
            similarity_threshold=0.0,
            always_include=(bare, full, "no-such-tool"),
            always_include_top_n_used=2,
            search_method="bm25",
        ),
        ToolFiltering(top_k=10, similarity_threshold=0.5, search_method="hybrid"),
        ToolFiltering(top_k=12, similarity_threshold=0.9, search_method="hybrid"),
        ToolFiltering(top_k=2, similarity_threshold=0.1, always_include_top_n_used=5),
        ToolFiltering(top_k=50, similarity_threshold=0.05, always_include_top_n_used=1),
        ToolFiltering(top_k=1, similarity_threshold=0.0, always_include=(bare,)),
        ToolFiltering(top_k=7, similarity_threshold=0.2, always_include_top_n_used=4),
    ]


def usage_for(catalog: Catalog) -> dict[str, int]:
    """A warmed-up runtime: some tools used, with ties."""
    return {tool.full_name: (i * 7) % 5 for i, tool in enumerate(catalog.tools) if i % 11 == 3}


def assert_documents_match(catalog: Catalog, run: OracleRun) -> None:
    """Full names in the index's order, and each tool's searchable (and embedded) text."""
    assert [tool.full_name for tool in catalog.tools] == list(run.documents)
    for tool in catalog.tools:
        assert tool.search_text == run.documents[tool.full_name], tool.full_name


def assert_rankings_match(
    engine: HoloDeckEngine, catalog: Catalog, run: OracleRun, *, exact: Sequence[str] = ()
) -> int:
    """Order equal, scores within 1e-9 (bit-equal for the methods in ``exact``)."""
    checked = 0
    for (query, method), expected in run.rankings.items():
        ours = ranked(engine.rank(query, method), catalog)
        context = f"{method} {query!r}"
        assert [n for n, _ in ours] == [n for n, _ in expected], context
        got = np.array([s for _, s in ours])
        want = np.array([s for _, s in expected], dtype=np.float64)
        assert np.max(np.abs(got - want), initial=0.0) <= TOLERANCE, context
        if method in exact:
            assert np.array_equal(got, want), context
        checked += 1
    return checked


def assert_selections_match(
    engine: HoloDeckEngine,
    catalog: Catalog,
    run: OracleRun,
    settings: Sequence[ToolFiltering],
    usage: dict[str, int] | None = None,
) -> None:
    counts = usage_array(dict(usage), catalog, source="test") if usage else None
    for (query, number), expected in run.selections.items():
        setting = settings[number]
        selection = select(engine.rank(query, setting.search_method), setting, catalog, counts)
        got = {catalog.tools[i].full_name for i in selection.indices}
        assert got == expected, f"setting {number} {setting.block()} {query!r}"
        assert len(selection.indices) == len(got)


def compare(
    tf: Any,
    catalog: Catalog,
    kernel: Any,
    queries: Sequence[str],
    embedder: Embedder | None,
    *,
    usage: dict[str, int] | None = None,
    settings_per_query: int | None = 3,
    exact: Sequence[str] = ("bm25",),
) -> None:
    queries = list(dict.fromkeys(queries))
    settings = settings_for(catalog)
    run = run_oracle(tf, kernel, embedder, queries, METHODS, settings, usage, settings_per_query)
    assert_documents_match(catalog, run)
    engine = HoloDeckEngine(catalog, embedder)
    checked = assert_rankings_match(engine, catalog, run, exact=exact)
    assert checked == len(queries) * len(METHODS)
    assert_selections_match(engine, catalog, run, settings, usage)


@pytest.mark.parametrize("dataset", DATASET_NAMES)
def test_datasets_match_holodeck(tf: Any, dataset: str) -> None:
    """bm25, semantic and hybrid with a unit-test embedder, and selections under many settings."""
    catalog = load_dataset_catalog(dataset)
    cases = load_cases(dataset)
    stride = max(1, len(cases) // CASES_PER_SET)
    queries = [case["query"] for case in cases[::stride][:CASES_PER_SET]]
    queries += ["", "!!!", "the the the tool tool", queries[0].upper() + " " + queries[0]]
    per_query = 2 if len(catalog) > 1000 else 3
    kernel = dataset_kernel(dataset)
    compare(
        tf,
        catalog,
        kernel,
        queries,
        Memo(HashedBagEmbedder()),
        settings_per_query=per_query,
        exact=METHODS,
    )


SAMPLE_QUERIES = [
    "find papers on transformers on the web",
    "remember that Vaswani wrote the transformer paper",
    "what time is it in Tokyo",
    "show the git log of the repository",
    "fetch https://example.com and read it",
    "list the files in the data directory",
    "search news about MCP",
    "",
]


@pytest.mark.parametrize("agent", ["research-agent", "python-servers"])
def test_sample_agents_match_holodeck(tf: Any, agent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample agents' snapshot catalogs (vectorstore tool included), with their own block."""
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")  # HoloDeck substitutes ${BRAVE_API_KEY}
    folder = Path(__file__).resolve().parents[1] / "sample_configs"
    snapshot = folder / f"{agent}.catalog.json"
    assert snapshot.is_file()
    config = load_agent(folder / f"{agent}.yaml", missing_env="warn")
    catalog = load_catalog(config, catalog_file=snapshot)
    assert len(catalog) > 5
    kernel = runtime_kernel(snapshot_servers(snapshot), agent_tools(folder / f"{agent}.yaml"))
    compare(tf, catalog, kernel, SAMPLE_QUERIES, Memo(HashedBagEmbedder()), exact=METHODS)
    block = config.filtering or ToolFiltering()
    run = run_oracle(tf, kernel, None, SAMPLE_QUERIES, ["bm25"], [block])
    assert_selections_match(HoloDeckEngine(catalog, None), catalog, run, [block])


@pytest.mark.parametrize("dataset", ["stackone", "livemcpbench"])
def test_bm25_fallbacks_match_holodeck(tf: Any, dataset: str) -> None:
    """No embedding service: semantic is BM25 and hybrid fuses BM25 with itself."""
    catalog = load_dataset_catalog(dataset)
    queries = [case["query"] for case in load_cases(dataset, limit=15)]
    compare(tf, catalog, dataset_kernel(dataset), queries, None, exact=METHODS)


def test_warm_usage_matches_holodeck(tf: Any) -> None:
    """always_include_top_n_used with a usage history (stable sort by count)."""
    catalog = load_dataset_catalog("azure_mcp")
    queries = [case["query"] for case in load_cases("azure_mcp", limit=20, stride=7)]
    kernel = dataset_kernel("azure_mcp")
    compare(tf, catalog, kernel, queries, Memo(HashedBagEmbedder()), usage=usage_for(catalog))


def test_query_embedding_failure_matches_holodeck(tf: Any) -> None:
    """The query embedding fails: the runtime falls back to normalised BM25 for that query."""
    catalog = load_dataset_catalog("stackone")
    queries = [case["query"] for case in load_cases("stackone", limit=10, stride=5)]
    embedder = Failing(Memo(HashedBagEmbedder()), queries=True)
    compare(tf, catalog, dataset_kernel("stackone"), queries, embedder, settings_per_query=2)
    ranking = HoloDeckEngine(catalog, embedder).rank(queries[0], "semantic")
    assert ranking.method == "bm25" and ranking.fallback and "query embedding" in ranking.fallback


def test_tool_embedding_failure_matches_holodeck(tf: Any) -> None:
    """The tools' batch fails at start: every tool then scores its raw, un-normalised BM25."""
    catalog = load_dataset_catalog("stackone")
    queries = [case["query"] for case in load_cases("stackone", limit=10, stride=5)]
    embedder = Failing(Memo(HashedBagEmbedder()), tools=True)
    compare(tf, catalog, dataset_kernel("stackone"), queries, embedder, settings_per_query=2)
    ranking = HoloDeckEngine(catalog, embedder).rank(queries[0], "semantic")
    assert ranking.scores.max() > 1.0  # raw BM25, as the runtime has it
    assert ranking.fallback and "raw BM25" in ranking.fallback


@LOCAL_EXTRA
def test_real_model_matches_holodeck(tf: Any) -> None:
    """all-MiniLM-L6-v2 embeddings (the same vectors to both): semantic and hybrid, selections.

    On the first servers of stackone (about 90 tools) to keep the model's CPU time short.
    """
    full = load_dataset_catalog("stackone")
    servers = [status.name for status in full.servers][:3]
    catalog = Catalog(
        tools=[tool for tool in full.tools if tool.plugin in servers],
        servers=[status for status in full.servers if status.name in servers],
    )
    queries = [case["query"] for case in load_cases("stackone", stride=23)][:10]
    raw = snapshot_servers(dataset_path("stackone") / "catalog.json")
    kernel = runtime_kernel({name: raw[name] for name in servers})
    embedder = Memo(minilm())
    compare(tf, catalog, kernel, queries, embedder, exact=METHODS)
    ranking = HoloDeckEngine(catalog, embedder).rank(queries[0], "semantic")
    assert ranking.method == "semantic" and ranking.fallback is None
    assert ranking.model_id == embedder.model_id
    assert ranking.scores.min() >= -1.0 and ranking.scores.max() < 1.0  # raw cosine


def test_names_the_runtime_refuses_are_said(tf: Any) -> None:
    """bfcl: SK refuses 'math.factorial' and 'año_vehiculo', so HoloDeck cannot load the server;
    holo-tune's catalog says so (and ``check`` reports it) instead of ranking in silence."""
    raw = snapshot_servers(dataset_path("bfcl") / "catalog.json")
    with pytest.raises(Exception) as refused:
        runtime_kernel(raw)
    assert type(refused.value).__name__ == "FunctionInitializationError"
    assert "Failed to create KernelFunctionMetadata" in str(refused.value)
    catalog = load_dataset_catalog("bfcl")
    said = [note for note in catalog.notes if "Semantic Kernel refuses" in note]
    assert len(said) == 1 and said[0].startswith("bfcl: ")
    assert "612 function name(s) with a '.'" in said[0] and "'AclApi.add_mapping'" in said[0]
    assert "1 parameter name(s) outside A-Za-z0-9_-: 'año_vehiculo'" in said[0]
    assert "HoloDeck fails to start an agent with this server" in said[0]
    # each name alone is enough: the runtime refuses either
    dotted = {"s": [{"name": "a.b", "inputSchema": {"type": "object"}}]}
    param = {"s": [{"name": "ab", "inputSchema": {"properties": {"año": {"type": "string"}}}}]}
    for servers in (dotted, param):
        with pytest.raises(Exception, match=r"failed to initialize|validation error"):
            runtime_kernel(servers)
    assert all("Semantic Kernel refuses" not in n for n in load_dataset_catalog("stackone").notes)


def test_names_of_the_plugins_own_attributes_are_skipped_as_the_runtime_does() -> None:
    """Semantic Kernel's MCP plugin skips a tool whose local name is one of its own attributes
    (``close``, ``connect``, ``name``, ...: it would overwrite them); holo-tune's catalog leaves
    the same tools out, says so, and its list of those names is SK 1.45's own."""
    reserved = ["close", "connect", "name", "session", "call_tool", "load_tools", "description"]
    kept = ["search", "close_tab", "get-prompt", "Name", "names"]
    listing = [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in reserved]
    listing += [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in kept]
    kernel = runtime_kernel({"s": listing})
    theirs = [f"s-{name}" for name in kernel.plugins["s"].functions]
    tools, notes = mcp_tools("s", listing)
    assert [tool.full_name for tool in tools] == theirs == sorted(f"s-{n}" for n in kept)
    for name in reserved:
        assert any(f"tool {name!r} is skipped" in note for note in notes), name
    assert plugin_attributes() == SK_PLUGIN_ATTRIBUTES
