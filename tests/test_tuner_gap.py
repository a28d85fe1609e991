"""The tuners' promise: what a proposal shows on the cases it was chosen on (in-sample) is close
to what the same rule gives on cases it never saw (held-out, k-fold), and a choice made within a
budget stays within it on the cases left out.

Real parts: the livemcpbench data set (tests/data/datasets: 94 cases, 527 tools, 70 servers) as
an agent with one MCP entry per catalog server, the real tokenizer, each runtime's own engine.
The bound is the issue's and docs/runtimes.md's (what the tuners keep, and the gap): 0.05, hit
and recall. On livemcpbench the search-tool tuners reach it by asking 3 cases of each training set
(at 2 their recall gap was 0.054-0.082); HoloDeck 0.7's allowlist on bfcl by ranking, where the
budget cuts, what more cases expect first (docs/which-runtime.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import Catalog
from workbench.config import load_agent
from workbench.evaluate.allowlist import tune_allowlist
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.evaluate.deferred_tune import entry_descriptions, tune_deferred
from workbench.evaluate.tuner import MIN_CASES, Recurrence
from workbench.runtimes import get_runtime
from workbench.runtimes.pizzapi.tune import tune_pizzapi
from workbench.workspace import Workspace, build_workspace

LIVE = Path(__file__).resolve().parent / "data" / "datasets" / "livemcpbench"
#: The largest gap (in-sample minus held-out, hit and recall) a tuner may show.
GAP = 0.05
BFCL = LIVE.parent / "bfcl"


def _agent(tmp_path_factory: pytest.TempPathFactory, data: Path = LIVE) -> Path:
    """A data set as an agent with one stdio MCP entry per catalog server."""
    servers = json.loads((data / "catalog.json").read_text())["servers"]
    lines = ["name: live", "model:", "  provider: openai", "  name: gpt-4o", "tools:"]
    for server in servers:
        lines += [
            f"  - name: {server}",
            "    type: mcp",
            f"    description: the {server} server",
            "    command: npx",
            f'    args: ["-y", "{server}"]',
        ]
    path = tmp_path_factory.mktemp(data.name) / "agent.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, CaseSet]:
    agent = load_agent(_agent(tmp_path_factory))
    catalog: Catalog = load_catalog(agent, catalog_file=LIVE / "catalog.json")
    ws = build_workspace(agent, catalog, embedder_spec="none")
    return ws, resolve_cases(load_cases(LIVE / "cases.jsonl"), catalog)


def test_the_bar_is_min_cases_in_every_training_set_and_its_share_of_all_cases() -> None:
    """94 cases in 5 folds: training sets of 75 and 76 cases need 2, all 94 need 3."""
    bar = Recurrence.of(94, 5)
    assert [bar.need(n) for n in (50, 75, 76, 94)] == [MIN_CASES, MIN_CASES, MIN_CASES, 3]
    assert Recurrence().need(10_000) == MIN_CASES
    for cases, folds in [(35, 5), (257, 5), (2351, 5), (94, 3), (10, 2)]:
        bar = Recurrence.of(cases, folds)
        train = cases - cases // folds
        assert bar.need(train) == MIN_CASES <= bar.need(cases)


@pytest.mark.parametrize("max_tokens", [9000, None])
def test_the_static_allowlist_gap_is_at_most_five_points(
    live: tuple[Workspace, CaseSet], max_tokens: int | None
) -> None:
    ws, cases = live
    report = tune_allowlist(ws.agent, ws.catalog, ws.tokens, cases, Budget(max_tokens))
    assert report.surface.candidate.any()
    assert report.insample.hit - report.heldout.hit <= GAP
    assert report.insample.recall - report.heldout.recall <= GAP
    # Held-out, the rule still exposes what recurs: better than exposing nothing.
    assert report.heldout.recall > 0.3


@pytest.mark.parametrize("runtime", ["anthropic", "openai", "serve"])
def test_the_search_tool_gap_stays_small(live: tuple[Workspace, CaseSet], runtime: str) -> None:
    ws, cases = live
    report = tune_deferred(
        get_runtime(runtime),
        ws.catalog,
        ws.tokens,
        cases,
        Budget(max_tokens=9000),
        tokens_all=int(ws.tokens.all),
        described=entry_descriptions(ws.agent.agent),
        ranker=ws.engine,
    )
    assert report.insample.hit - report.heldout.hit <= GAP
    assert report.insample.recall - report.heldout.recall <= GAP
    assert report.heldout.tokens_selected_mean <= 9000
    assert report.within_budget and report.insample.tokens_selected_mean <= 9000


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["claude-code", "argus", "fastmcp"])
def test_the_search_tool_gap_stays_small_slow(
    live: tuple[Workspace, CaseSet], runtime: str
) -> None:
    test_the_search_tool_gap_stays_small(live, runtime)


@pytest.mark.slow
@pytest.mark.parametrize("max_tokens", [2000, 9000])
def test_fastmcp_within_a_budget_is_within_it_held_out(
    live: tuple[Workspace, CaseSet], max_tokens: int
) -> None:
    """Its greedy bills a found tool as search_tools' JSON text, as the measurement does, so a
    path within the budget is within it measured (billed by definitions, at 2,000 it proposed
    2,124 tokens and said it could not get within). Held-out, the mean of the cases no fold
    chose on is within 9,000, and at 2,000 within 1 % of it (2,013: the inner folds' mean, which
    the cut reads, is not every fold's)."""
    ws, cases = live
    report = tune_deferred(
        get_runtime("fastmcp"),
        ws.catalog,
        ws.tokens,
        cases,
        Budget(max_tokens=max_tokens),
        tokens_all=int(ws.tokens.all),
    )
    assert report.within_budget
    assert report.insample.tokens_selected_mean <= max_tokens
    slack = 1.0 if max_tokens >= 9000 else 1.01
    assert report.heldout.tokens_selected_mean <= max_tokens * slack


def test_at_the_first_bar_the_anthropic_gap_is_over_and_the_tuner_asks_three_cases(
    live: tuple[Workspace, CaseSet],
) -> None:
    """The knee keeps what 3 cases of each training set expect, and says why: at 2 (what every
    tuner tries first) the proposal kept tools whose own cases voted them in, and its recall
    gap was over 0.05."""
    ws, cases = live
    report = tune_deferred(
        get_runtime("anthropic"),
        ws.catalog,
        ws.tokens,
        cases,
        Budget(),
        tokens_all=int(ws.tokens.all),
    )
    assert [t.bar for t in report.bars.tried] == [MIN_CASES, MIN_CASES + 1]
    assert report.bars.tried[0].recall > GAP >= report.bars.tried[1].worst
    assert report.bars.chosen == MIN_CASES + 1 and report.bars.held
    assert report.insample.recall - report.heldout.recall <= GAP
    assert "only what 3 cases of each training set expect" in report.bars.text()


@pytest.mark.slow
def test_the_allowlist_gap_on_bfcl_at_9000_is_at_most_five_points(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """bfcl: 2,351 cases, 1,287 tools of one server; 9,000 tokens keep about 80 tools, each
    expected by a handful of cases. Ranked on their whole gain, the tools kept at the cut were
    those their own cases' votes lifted over it (gap 0.066 hit, 0.064 recall)."""
    agent = load_agent(_agent(tmp_path_factory, BFCL))
    catalog = load_catalog(agent, catalog_file=BFCL / "catalog.json")
    ws = build_workspace(agent, catalog, embedder_spec="none")
    cases = resolve_cases(load_cases(BFCL / "cases.jsonl"), catalog)
    report = tune_allowlist(ws.agent, ws.catalog, ws.tokens, cases, Budget(9000))
    assert report.insample.hit - report.heldout.hit <= GAP
    assert report.insample.recall - report.heldout.recall <= GAP
    assert report.within_budget and report.heldout.tokens <= 9000
    assert report.heldout.hit > 0.39  # what it held out before: the ranking lost nothing


@pytest.mark.slow
def test_pizzapi_at_its_knee_keeps_what_five_cases_of_each_training_set_expect(
    live: tuple[Workspace, CaseSet],
) -> None:
    """PizzaPi keeps whole servers: the 5th and 6th most expected (6 and 5 cases of 94) swap
    from fold to fold, and the proposal kept the two its own cases voted in (recall gap 0.056
    at two and three cases per training set). At five the proposal keeps what every fold keeps:
    the same held-out figures, fewer tokens, and an honest in-sample."""
    ws, cases = live
    report = tune_pizzapi(ws.catalog, ws.tokens, cases, Budget(), tokens_all=int(ws.tokens.all))
    assert [t.bar for t in report.bars.tried] == [2, 3, 5]
    assert report.bars.tried[0].recall > GAP and report.bars.chosen == 5
    assert report.insample.hit - report.heldout.hit <= GAP
    assert report.insample.recall - report.heldout.recall <= GAP
    assert report.heldout.recall > 0.35


@pytest.mark.slow
def test_the_allowlist_at_bfcls_knee_keeps_what_five_cases_expect_a_tie_at_its_cost(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """bfcl with no budget: the first bar fills 30% of all tokens (238 tools, 0.589 held-out
    recall, gap 0.063); three cases still show 0.056. Five keep a set of about 9,000 tokens
    with no gap, and the first bar's rule within those tokens holds out no more: a held-out tie
    at its cost (workbench.evaluate.generalise), so it is proposed."""
    agent = load_agent(_agent(tmp_path_factory, BFCL))
    catalog = load_catalog(agent, catalog_file=BFCL / "catalog.json")
    ws = build_workspace(agent, catalog, embedder_spec="none")
    cases = resolve_cases(load_cases(BFCL / "cases.jsonl"), catalog)
    report = tune_allowlist(ws.agent, ws.catalog, ws.tokens, cases, Budget())
    assert [t.bar for t in report.bars.tried] == [2, 3, 5]
    assert report.bars.tried[0].worst > GAP and report.bars.chosen == 5 and report.bars.held
    assert report.insample.hit - report.heldout.hit <= GAP
    assert report.insample.recall - report.heldout.recall <= GAP
    against = report.bars.tried[-1].against
    assert against is not None and abs(against.tokens - report.heldout.tokens) < 100
    assert report.heldout.recall >= against.recall - GAP
