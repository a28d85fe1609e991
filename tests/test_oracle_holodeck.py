"""holo-tune's ``holodeck`` engine and selection against HoloDeck 0.6.40's own tool filter.

The oracle is the runtime's module itself (``holodeck.lib.tool_filter``, fetched by ``make test``
into .cache/holodeck), fed the same catalog and the same embeddings. Compared: every tool's rank
(tie order included), every score (within 1e-9; BM25 bit for bit), and the selected set under
settings that exercise each step of ``filter_tools``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from oracle.catalogs import DATASET_NAMES, load_cases, load_dataset_catalog
from oracle.embedders import Failing, HashedBagEmbedder, Memo, minilm
from oracle.runner import OracleRun, run_oracle
from oracle.stubs import ORACLE_PACKAGE, holodeck_tool_filter
from provided import LOCAL_EXTRA

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
    "HoloDeck 0.6.40's tool filter",
    files=[ORACLE_PACKAGE / name for name in ("index.py", "manager.py")],
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
    queries: Sequence[str],
    embedder: Embedder | None,
    *,
    usage: dict[str, int] | None = None,
    settings_per_query: int | None = 3,
    exact: Sequence[str] = ("bm25",),
) -> None:
    queries = list(dict.fromkeys(queries))
    settings = settings_for(catalog)
    run = run_oracle(tf, catalog, embedder, queries, METHODS, settings, usage, settings_per_query)
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
    compare(
        tf, catalog, queries, Memo(HashedBagEmbedder()), settings_per_query=per_query, exact=METHODS
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
def test_sample_agents_match_holodeck(tf: Any, agent: str) -> None:
    """The sample agents' snapshot catalogs (vectorstore tool included), with their own block."""
    folder = Path(__file__).resolve().parents[1] / "sample_configs"
    snapshot = folder / f"{agent}.catalog.json"
    config = load_agent(folder / f"{agent}.yaml", missing_env="warn")
    catalog = load_catalog(config, catalog_file=snapshot)
    assert len(catalog) > 5
    compare(tf, catalog, SAMPLE_QUERIES, Memo(HashedBagEmbedder()), exact=METHODS)
    block = config.filtering or ToolFiltering()
    run = run_oracle(tf, catalog, None, SAMPLE_QUERIES, ["bm25"], [block])
    assert_selections_match(HoloDeckEngine(catalog, None), catalog, run, [block])


@pytest.mark.parametrize("dataset", ["stackone", "livemcpbench"])
def test_bm25_fallbacks_match_holodeck(tf: Any, dataset: str) -> None:
    """No embedding service: semantic is BM25 and hybrid fuses BM25 with itself."""
    catalog = load_dataset_catalog(dataset)
    queries = [case["query"] for case in load_cases(dataset, limit=15)]
    compare(tf, catalog, queries, None, exact=METHODS)


def test_warm_usage_matches_holodeck(tf: Any) -> None:
    """always_include_top_n_used with a usage history (stable sort by count)."""
    catalog = load_dataset_catalog("azure_mcp")
    queries = [case["query"] for case in load_cases("azure_mcp", limit=20, stride=7)]
    compare(tf, catalog, queries, Memo(HashedBagEmbedder()), usage=usage_for(catalog))


def test_query_embedding_failure_matches_holodeck(tf: Any) -> None:
    """The query embedding fails: the runtime falls back to normalised BM25 for that query."""
    catalog = load_dataset_catalog("stackone")
    queries = [case["query"] for case in load_cases("stackone", limit=10, stride=5)]
    embedder = Failing(Memo(HashedBagEmbedder()), queries=True)
    compare(tf, catalog, queries, embedder, settings_per_query=2)
    ranking = HoloDeckEngine(catalog, embedder).rank(queries[0], "semantic")
    assert ranking.method == "bm25" and ranking.fallback and "query embedding" in ranking.fallback


def test_tool_embedding_failure_matches_holodeck(tf: Any) -> None:
    """The tools' batch fails at start: every tool then scores its raw, un-normalised BM25."""
    catalog = load_dataset_catalog("stackone")
    queries = [case["query"] for case in load_cases("stackone", limit=10, stride=5)]
    embedder = Failing(Memo(HashedBagEmbedder()), tools=True)
    compare(tf, catalog, queries, embedder, settings_per_query=2)
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
    embedder = Memo(minilm())
    compare(tf, catalog, queries, embedder, exact=METHODS)
    ranking = HoloDeckEngine(catalog, embedder).rank(queries[0], "semantic")
    assert ranking.method == "semantic" and ranking.fallback is None
    assert ranking.model_id == embedder.model_id
    assert ranking.scores.min() >= -1.0 and ranking.scores.max() < 1.0  # raw cosine
