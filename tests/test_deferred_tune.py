"""``tune --runtime anthropic|claude-code|openai``: the loaded set, variant and results per
search chosen from cases, the bill, the held-out figures, and what ``--apply`` writes or prints.

Real parts: the stackone data set's catalog and cases (tests/data/datasets), the real tokenizer,
the strategy lab's anthropic engine; ``.mcp.json`` files on disk.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.config.writeback.mcp_json import plan_mcp_json
from workbench.deferred import check_anthropic, check_mcp_json, check_openai
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import Case, ResolvedCase, load_cases, resolve_cases
from workbench.evaluate.deferred_tune import (
    DeferredSetting,
    PathPoint,
    _fitting,
    _Proxy,
    extra_tokens,
    greedy_path,
    measure,
    tune_deferred,
)
from workbench.runtimes import get_runtime
from workbench.search.strategies.anthropic import search_tool_definition
from workbench.search.strategies.base import definitions_tokens
from workbench.tokens import token_table

STACKONE = Path(__file__).resolve().parent / "data" / "datasets" / "stackone"
SERVERS: list[str] = list(json.loads((STACKONE / "catalog.json").read_text())["servers"])


def _agent(tmp_path: Path, provider: str = "anthropic") -> Path:
    """The stackone data set as an agent with one stdio MCP entry per catalog server."""
    lines = [
        "name: stack",
        "model:",
        f"  provider: {provider}",
        "  name: claude-sonnet-4-5" if provider == "anthropic" else "  name: gpt-4o",
        "instructions:",
        "  inline: Help.",
        "tools:",
    ]
    for server in SERVERS:
        lines += [
            f"  - name: {server}",
            "    type: mcp",
            f"    description: the {server} server",
            "    command: npx",
            f'    args: ["-y", "{server}-server"]',
        ]
    path = tmp_path / "agent.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _tune(path: Path, runtime: str, *extra: str) -> list[str]:
    return [
        "tune",
        str(path),
        "--runtime",
        runtime,
        "--catalog",
        str(STACKONE / "catalog.json"),
        "--cases",
        str(STACKONE / "cases.jsonl"),
        *extra,
    ]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    assert main(argv) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


@pytest.mark.parametrize("runtime", ["anthropic", "openai"])
def test_tune_json_says_the_engine_is_an_approximation_and_fits_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    path = _agent(tmp_path)
    before = path.read_bytes()
    data = _json(capsys, _tune(path, runtime, "--max-tokens", "1500", "--json"))
    assert data["runtime"] == {"name": runtime, "reason": "--runtime", "source": "flag"}
    assert "approximation" in data["approximation"] and "not publish" in data["approximation"]
    assert data["tokens"].startswith("per task: the search round trip included")
    assert "anthropic engine" in data["engine"] and "ranker is not published" in data["engine"]
    if runtime == "openai":
        assert "OpenAI" in data["engine"] and data["setting"]["variant"] == "bm25"
    assert data["insample"]["tokens_selected_mean"] <= 1500
    assert 3 <= data["setting"]["max_results"] <= 5
    assert data["setting"]["loaded"], "hot tools fit in 1,500 tokens"
    # Loading hot tools beats the provider's default (nothing loaded) on these cases.
    assert data["insample"]["recall"] > data["default"]["recall"]
    assert 0 < data["heldout"]["hit"] <= 1 and len(data["folds"]) == 5
    assert f"--runtime {runtime}" in data["export"]
    assert path.read_bytes() == before


def test_tune_min_hit_is_the_cheapest_path_point_reaching_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _agent(tmp_path)
    low = _json(capsys, _tune(path, "anthropic", "--min-hit", "0.85", "--json"))
    high = _json(capsys, _tune(path, "anthropic", "--min-hit", "0.99", "--json"))
    assert low["insample"]["hit"] >= 0.85 and high["insample"]["hit"] >= 0.99
    assert low["insample"]["tokens_selected_mean"] < high["insample"]["tokens_selected_mean"]
    assert len(low["setting"]["loaded"]) < len(high["setting"]["loaded"])


def test_the_bill_is_per_task_with_the_search_round_trip(tmp_path: Path) -> None:
    """A case the loaded tools do not cover costs two requests: the search's (loaded tools +
    search tool) and the next (the same + the tools found)."""
    agent = load_agent(_agent(tmp_path, "openai"))
    catalog = load_catalog(agent, catalog_file=STACKONE / "catalog.json")
    tokens = token_table(catalog, "openai", "gpt-4o")
    cases = resolve_cases(load_cases(STACKONE / "cases.jsonl"), catalog)
    loaded = (0, 5)
    setting = DeferredSetting("bm25", 4, loaded)
    search = definitions_tokens(tokens, [search_tool_definition("bm25")])
    per_tool = np.asarray(tokens.per_tool)
    first = int(per_tool[list(loaded)].sum()) + search + tokens.overhead
    searched = 0
    for case, result in zip(
        cases.cases[:20], measure(setting, catalog, tokens, cases.cases[:20]), strict=True
    ):
        assert not any(i in loaded for g in case.groups for i in g), "none of these is covered"
        assert set(loaded) <= set(result.selected)
        assert len(result.selected) <= len(loaded) + 4
        definitions = int(per_tool[list(result.selected)].sum())
        assert result.tokens == first + definitions + search + tokens.overhead
        searched += 1
    assert searched == 20
    # OpenAI's model also reads each namespace's name and description, in both requests.
    described = {s: f"the {s} server" for s in SERVERS}
    extra = extra_tokens(get_runtime("openai"), catalog, tokens, described)
    assert extra > 0 and extra_tokens(get_runtime("anthropic"), catalog, tokens, described) == 0
    plain = measure(setting, catalog, tokens, cases.cases[:3])
    billed = measure(setting, catalog, tokens, cases.cases[:3], extra)
    assert [b.tokens - p.tokens for p, b in zip(plain, billed, strict=True)] == [2 * extra] * 3


def test_a_case_its_loaded_tools_cover_costs_one_request_and_no_search(tmp_path: Path) -> None:
    agent = load_agent(_agent(tmp_path, "anthropic"))
    catalog = load_catalog(agent, catalog_file=STACKONE / "catalog.json")
    tokens = token_table(catalog, "anthropic", "claude-sonnet-4-5")
    cases = resolve_cases(load_cases(STACKONE / "cases.jsonl"), catalog)
    case = cases.cases[0]
    loaded = tuple(sorted({group[0] for group in case.groups} | {0}))
    setting = DeferredSetting("bm25", 5, loaded)
    [result] = measure(setting, catalog, tokens, [case])
    search = definitions_tokens(tokens, [search_tool_definition("bm25")])
    one_request = int(np.asarray(tokens.per_tool)[list(loaded)].sum()) + search + tokens.overhead
    assert result.tokens == one_request
    assert result.selected == loaded and result.recall == 1.0 and result.hit
    assert result.top1 and result.rank_of_first == 1  # the loaded tools are first to hand


def test_a_budget_below_searching_everything_is_reached_by_loading() -> None:
    """Two kinds of task (two cases each, so their tools can recur), each needing a small tool
    the search ranks below a large decoy: searching costs two requests and the decoy; loading
    both small tools costs one request and fits a budget that nothing loaded does not (the path
    must not stop at its first point)."""
    per_tool = np.array([10.0, 10.0, 1000.0, 1000.0])
    orders = [np.array([2, 0, 1, 3]), np.array([3, 1, 0, 2])] * 2
    proxy = _Proxy(orders, per_tool, fixed=50.0)
    items = [
        ResolvedCase(Case("q0", ("t0",)), ("t0",), ((0,),)),
        ResolvedCase(Case("q1", ("t1",)), ("t1",), ((1,),)),
    ] * 2
    units_ = [(0,), (1,), (2,), (3,)]
    free = greedy_path(proxy, items, [0, 1, 2, 3], units_, "bm25", 1, float("inf"))
    capped = greedy_path(proxy, items, [0, 1, 2, 3], units_, "bm25", 1, 100.0)
    assert [p.setting.loaded for p in free] == [p.setting.loaded for p in capped]
    assert capped[0].tokens == 2 * 50 + 1000 and capped[-1].setting.loaded == (0, 1)
    assert capped[-1].tokens == 50 + 20 and capped[-1].recall == 1.0
    once = greedy_path(proxy, items, [0, 1], units_, "bm25", 1, 100.0)
    assert [p.setting.loaded for p in once] == [()], "a tool one case needs is not kept loaded"


def test_the_tuner_keeps_a_tool_every_task_needs_loaded(tmp_path: Path) -> None:
    """Searching for it would cost each task a second request: loading it is cheaper."""
    agent = load_agent(_agent(tmp_path, "anthropic"))
    catalog = load_catalog(agent, catalog_file=STACKONE / "catalog.json")
    tokens = token_table(catalog, "anthropic", "claude-sonnet-4-5")
    cases = resolve_cases(load_cases(STACKONE / "cases.jsonl"), catalog)
    # Single-tool cases whose tool the search already finds with nothing loaded: loading it
    # adds no recall, only its definition; what it saves is each task's second request.
    searched = measure(DeferredSetting("bm25", 5, ()), catalog, tokens, cases.cases)
    found = [r for r in searched if len(r.case.groups) == 1 and r.top1]
    by_tool: dict[int, list[int]] = {}
    for r in found:
        by_tool.setdefault(r.case.groups[0][0], []).append(cases.cases.index(r.case))
    target, chosen = max(by_tool.items(), key=lambda kv: len(kv[1]))
    assert len(chosen) >= 3
    report = tune_deferred(
        get_runtime(
            "openai"
        ),  # bm25 only (Anthropic's regex variant finds nothing here, which is cheaper)
        catalog,
        tokens,
        cases.subset(chosen),
        Budget(),
        tokens_all=int(tokens.all),
        folds=2,
    )
    assert report.setting.loaded == (target,)
    assert report.insample.hit == 1.0


def test_claude_code_keeps_whole_servers_loaded(tmp_path: Path) -> None:
    agent = load_agent(_agent(tmp_path))
    catalog = load_catalog(agent, catalog_file=STACKONE / "catalog.json")
    per_server = get_runtime("claude-code").units(catalog)
    assert len(per_server) == len(SERVERS)
    assert sorted(i for u in per_server for i in u) == list(range(len(catalog)))
    assert all(len(u) == 1 for u in get_runtime("anthropic").units(catalog))


def test_claude_code_keeps_only_mcp_servers_loaded() -> None:
    """The research agent's vectorstore is a HoloDeck tool, not an MCP server: Claude Code's
    alwaysLoad cannot name it (before, "1 tools loaded" could be that vectorstore)."""
    samples = Path(__file__).resolve().parents[1] / "sample_configs"
    agent = load_agent(samples / "research-agent.yaml", missing_env="warn")
    catalog = load_catalog(agent, catalog_file=samples / "research-agent.catalog.json")
    claude_code = get_runtime("claude-code")
    kinds = {catalog.tools[i].kind for unit in claude_code.units(catalog) for i in unit}
    assert kinds == {"mcp"} and any(t.kind != "mcp" for t in catalog.tools)


def test_claude_code_apply_writes_always_load_and_a_second_run_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _agent(tmp_path)
    mcp = tmp_path / ".mcp.json"
    mcp.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "mine": {"command": "x", "args": [], "alwaysLoad": True},
                    SERVERS[-1]: {"command": "keep-me", "args": ["a"], "alwaysLoad": True},
                },
                "other": 1,
            }
        )
    )
    data = _json(capsys, _tune(path, "claude-code", "--max-tokens", "3000", "--json", "--apply"))
    written = json.loads(mcp.read_text())
    assert check_mcp_json(written) is None
    servers = written["mcpServers"]
    assert set(servers) == {"mine", *SERVERS} and written["other"] == 1
    assert servers["mine"]["alwaysLoad"] is True  # not the agent's: untouched
    assert servers[SERVERS[-1]]["command"] == "keep-me"  # an existing entry keeps its fields
    loaded = {s for s in SERVERS if servers[s].get("alwaysLoad")}
    assert loaded == set(data["always_load"]) and loaded
    assert data["config"]["mcpServers"].keys() == set(SERVERS)
    assert (tmp_path / ".mcp.json.bak").is_file()
    assert main(_tune(path, "claude-code", "--max-tokens", "3000", "--json", "--apply")) == 0
    assert "no change" in capsys.readouterr().err


def test_claude_code_apply_refuses_a_broken_mcp_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _agent(tmp_path)
    mcp = tmp_path / ".mcp.json"
    mcp.write_text('{"mcpServers": [1, 2]}\n')
    assert main(_tune(path, "claude-code", "--apply")) == 2
    err = capsys.readouterr().err
    assert ".mcp.json" in err and "mcpServers" in err and "Traceback" not in err
    assert mcp.read_text() == '{"mcpServers": [1, 2]}\n'


@pytest.mark.parametrize("runtime", ["anthropic", "openai"])
def test_apply_for_an_api_prints_the_tools_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    path = _agent(tmp_path)
    before = path.read_bytes()
    assert main(_tune(path, runtime, "--max-tokens", "1500", "--apply")) == 0
    captured = capsys.readouterr()
    assert "nothing written" in captured.err
    tools = json.loads(captured.out[captured.out.index("\n[") + 1 :])
    assert (check_anthropic if runtime == "anthropic" else check_openai)(tools) is None
    assert path.read_bytes() == before and not (tmp_path / ".mcp.json").exists()
    report = captured.out[: captured.out.index("\n[")]
    assert "approximation" in report and "held-out" in report


_server = st.fixed_dictionaries(
    {"command": st.text(min_size=1, max_size=5), "args": st.lists(st.text(max_size=3))},
    optional={"alwaysLoad": st.booleans(), "env": st.dictionaries(st.text(max_size=3), st.text())},
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    existing=st.dictionaries(st.sampled_from(["a", "b", "c", "z"]), _server, max_size=4),
    keep=st.sets(st.sampled_from(["a", "b", "c"])),
    extra=st.dictionaries(st.sampled_from(["x", "y"]), st.integers()),
)
def test_any_mcp_json_keeps_everything_but_always_load_of_the_agent_servers(
    tmp_path: Path, existing: dict[str, Any], keep: set[str], extra: dict[str, int]
) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"mcpServers": existing, **extra}))
    rendered = {"mcpServers": {s: {"command": "npx", "args": [s]} for s in ("a", "b", "c")}}
    plan = plan_mcp_json(path, rendered, keep)
    new = json.loads(plan.new)
    assert {k: v for k, v in new.items() if k != "mcpServers"} == extra
    for name, server in new["mcpServers"].items():
        if name in ("a", "b", "c"):
            assert server.get("alwaysLoad", False) == (name in keep)
            before = existing.get(name, rendered["mcpServers"][name])
            rest = {k: v for k, v in server.items() if k != "alwaysLoad"}
            assert rest == {k: v for k, v in before.items() if k != "alwaysLoad"}
        else:
            assert server == existing[name]


@pytest.mark.parametrize("runtime", ["anthropic", "claude-code", "openai"])
def test_tune_text_says_one_thing_about_the_ranker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str
) -> None:
    """The engine line and the note agree: what the provider documents is deferred loading and
    its bill, not the ranker; the stand-in engine is named, and the figures an approximation."""
    path = _agent(tmp_path)
    assert main(_tune(path, runtime, "--max-tokens", "1500")) == 0
    out = capsys.readouterr().out
    engine = next(line for line in out.splitlines() if line.startswith("engine "))
    note = next(line for line in out.splitlines() if line.startswith("note "))
    assert "as documented" not in out
    assert "stand-in" in engine and "BM25 (bm25s" in engine
    assert "ranker is not published" in engine and "documented" in engine
    assert "deferred loading" in engine
    assert "approximation" in note and "does not publish its search's ranker" in note


def test_a_pick_the_engine_measures_over_the_budget_steps_back_to_one_it_does_not() -> None:
    """The greedy's tokens are an estimate; the engine's measure decides (serve on bfcl at 9,000
    was proposed at 9,184 measured). Stepping back skips any point still over, and ends at the
    path's first point when nothing fits."""
    path = [
        PathPoint(DeferredSetting("bm25", 5, tuple(range(n))), 0.5, 0.4, 1_000.0 * n)
        for n in range(5)
    ]
    measured = {0: 500.0, 1: 9_500.0, 2: 8_900.0, 3: 9_100.0, 4: 9_300.0}
    asked: list[int] = []

    def fits(setting: DeferredSetting, case_ids: Sequence[int]) -> bool:
        asked.append(len(setting.loaded))
        assert list(case_ids) == [0, 1, 2]
        return measured[len(setting.loaded)] <= 9_000

    assert _fitting(path, 4, [0, 1, 2], fits) is path[2]
    assert asked == [4, 3, 2]
    assert _fitting(path, 2, [0, 1, 2], fits) is path[2]
    assert _fitting(path, 1, [0, 1, 2], fits) is path[0]  # the first point is not asked
    assert _fitting(path, 4, [0, 1, 2], None) is path[4]  # no budget: nothing measured
    assert _fitting(path, 4, [0, 1, 2], lambda s, c: False) is path[0]


def test_serve_bills_a_found_tool_as_the_json_text_it_returns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Serve returns found tools as JSON text, which costs more than their definitions: billed
    as definitions, its greedy's estimate at top_k 2 was under 3,000 tokens on the research agent
    where the engine measured 3,397 (✗). Billed as serve sends them, the pick is within."""
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    root = Path(__file__).resolve().parents[1] / "sample_configs"
    args = ["tune", str(root / "research-agent.yaml"), "--runtime", "serve", "--json"]
    args += ["--catalog", str(root / "research-agent.catalog.json"), "--embedder", "none"]
    assert main([*args, "--max-tokens", "3000"]) == 0
    report = json.loads(capsys.readouterr().out)
    fixed = report["task_tokens_fixed"]  # the pins and the two tools, in both requests
    assert report["target"]["max_tokens"] == 3000 - fixed  # each search fills what is left
    assert fixed + report["fit"]["insample"]["tokens_mean"] <= 3000
