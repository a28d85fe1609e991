"""The ``pizzapi`` runtime: PizzaPi's tool search tuned with the lab's engine, held-out, and
its ``config.json`` printed or merged (other keys, their order and unicode kept; diff, backup,
atomic; a bad file refused in one line). The research agent's snapshot and cases, the real
tokenizer."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_values import VALUES

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.config.writeback.files import apply_plan
from workbench.errors import ConfigError, WriteBackError
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.evaluate.metrics import aggregate
from workbench.runtimes import get_runtime
from workbench.runtimes.compare import runtime_row
from workbench.runtimes.pizzapi.config import KNOBS, check_config, plan_config, server_entry
from workbench.runtimes.pizzapi.tune import (
    PizzaSetting,
    expressed,
    loaded_servers,
    mcp_servers,
    measure,
    tune_pizzapi,
)
from workbench.search.strategies.pizzapi import PizzaPiStrategy
from workbench.workspace import Workspace, build_workspace

SAMPLES = Path(__file__).resolve().parents[1] / "sample_configs"
AGENT = SAMPLES / "research-agent.yaml"
CATALOG = SAMPLES / "research-agent.catalog.json"
CASES = SAMPLES / "research-agent.cases.yaml"
ENTRIES = [
    {
        "name": "brave_search",
        "type": "mcp",
        "command": "npx",
        "args": ["-y", "@brave/brave-search-mcp-server"],
        "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
    },
    {"name": "memory", "type": "mcp", "command": "npx", "args": ["-y", "server-memory"]},
]
SERVERS = ["brave_search", "memory"]


@pytest.fixture(scope="module")
def ws() -> Workspace:
    agent = load_agent(AGENT, environ={"BRAVE_API_KEY": "x"})
    catalog = load_catalog(agent, catalog_file=CATALOG, view=get_runtime("pizzapi").catalog_view)
    return build_workspace(agent, catalog, embedder_spec="none")


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")


def _tune(*extra: str) -> list[str]:
    return [
        "tune",
        str(AGENT),
        "--runtime",
        "pizzapi",
        "--catalog",
        str(CATALOG),
        "--cases",
        str(CASES),
        "--embedder",
        "none",
        *extra,
    ]


# ------------------------------------------------------------------------------------- tuner


def test_every_set_of_loaded_servers_is_written_as_the_engine_reads_it(ws: Workspace) -> None:
    """Whatever threshold a setting is written with, the engine built from it defers exactly
    the servers not kept loaded, on either side of the catalog's total."""
    servers = mcp_servers(ws.catalog)
    assert servers == SERVERS
    for total in (0, 999, 10_000, 36_737, 10**6):
        for size in range(len(servers) + 1):
            for kept in combinations(servers, size):
                setting = expressed(frozenset(kept), 3, servers, total)
                deferred = setting.token_threshold < total
                rest = len(servers) - len(kept)
                fewest = min(len(kept), rest) if total > 0 else rest  # no threshold is under 0
                assert len(setting.defer_loading) == fewest
                assert all(v != deferred for _, v in setting.defer_loading)
    real = PizzaPiStrategy(ws.catalog, ws.tokens).total_chars
    for size in range(len(servers) + 1):
        for kept in combinations(servers, size):
            setting = expressed(frozenset(kept), 3, servers, real)
            engine = PizzaPiStrategy(ws.catalog, ws.tokens, setting.params)
            assert loaded_servers(engine, ws.catalog) == list(kept)


def test_tune_reports_held_out_in_sample_gap_and_the_default(ws: Workspace) -> None:
    cases = resolve_cases(load_cases(CASES), ws.catalog)
    tokens_all = int(ws.tokens.all)
    report = tune_pizzapi(ws.catalog, ws.tokens, cases, Budget(), tokens_all=tokens_all)
    assert report.heldout.cases == report.insample.cases == len(cases) == 35
    assert report.gap == pytest.approx(report.insample.recall - report.heldout.recall)
    assert len(report.fold_settings) == report.folds == 5
    # The held-out figures are each fold's setting, measured by the engine on that fold alone.
    assert aggregate(report.heldout_cases, tokens_all) == report.heldout
    items = cases.cases
    again = [
        r
        for fold, setting in enumerate(report.fold_settings)
        for r in measure(
            setting, ws.catalog, ws.tokens, [items[c] for c in _fold(len(items), fold)]
        )
    ]
    assert [(r.case.query, r.hit, r.tokens) for r in again] == [
        (r.case.query, r.hit, r.tokens) for r in report.heldout_cases
    ]
    default = aggregate(measure(PizzaSetting(), ws.catalog, ws.tokens, items), tokens_all)
    assert report.default == default
    # The sample's MCP tools are 36,737 characters, over PizzaPi's 10,000: by default all are
    # deferred and every task searches, which the tuned setting beats on tokens per task.
    assert report.total_chars > 10_000
    assert report.insample.tokens_selected_mean < report.default.tokens_selected_mean
    assert 0 < report.heldout.tokens_selected_mean < tokens_all


def _fold(cases: int, fold: int) -> list[int]:
    from workbench.evaluate.tuner import fold_assignment

    return [c for c, f in enumerate(fold_assignment(cases, 5)) if f == fold]


def test_the_budget_is_honoured_or_said(ws: Workspace) -> None:
    cases = resolve_cases(load_cases(CASES), ws.catalog)
    tokens_all = int(ws.tokens.all)
    hit = tune_pizzapi(ws.catalog, ws.tokens, cases, Budget(min_hit=0.9), tokens_all=tokens_all)
    assert hit.within_budget and hit.insample.hit >= 0.9
    cheap = tune_pizzapi(
        ws.catalog, ws.tokens, cases, Budget(max_tokens=2_000), tokens_all=tokens_all
    )
    assert cheap.within_budget == (cheap.insample.tokens_selected_mean <= 2_000)
    assert cheap.insample.tokens_selected_mean <= hit.insample.tokens_selected_mean
    impossible = tune_pizzapi(
        ws.catalog, ws.tokens, cases, Budget(max_tokens=10), tokens_all=tokens_all
    )
    assert not impossible.within_budget


@pytest.mark.parametrize("max_tokens", [3_000, 5_000, 9_000])
def test_a_choice_within_the_budget_is_within_it_held_out(ws: Workspace, max_tokens: int) -> None:
    """The budget holds each setting's tokens on the costliest third of the cases, so the mean
    of the cases each fold's choice never saw stays within it too."""
    cases = resolve_cases(load_cases(CASES), ws.catalog)
    tokens_all = int(ws.tokens.all)
    budget = Budget(max_tokens=max_tokens)
    report = tune_pizzapi(ws.catalog, ws.tokens, cases, budget, tokens_all=tokens_all)
    if report.within_budget:
        assert report.insample.tokens_selected_mean <= max_tokens
        assert report.heldout.tokens_selected_mean <= max_tokens


def test_tune_json_and_the_compare_row_are_the_same_held_out_figures(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_tune("--json")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runtime"]["name"] == "pizzapi"
    for key in ("heldout", "insample", "default", "gap", "within_budget", "setting", "config"):
        assert key in report
    assert set(report["setting"]) == {
        "maxResults",
        "tokenThreshold",
        "keepLoadedTools",
        "deferLoading",
    }
    assert report["config"]["toolSearch"]["maxResults"] == report["setting"]["maxResults"]
    assert check_config(report["config"]) is None
    assert "no test runs PizzaPi" in report["approximation"]
    cases = resolve_cases(load_cases(CASES), ws.catalog)
    row = runtime_row(get_runtime("pizzapi"), ws, cases)
    assert row.recall == pytest.approx(report["heldout"]["recall"], abs=1e-9)
    assert row.hit == pytest.approx(report["heldout"]["hit"], abs=1e-9)
    assert row.params == report["setting"]


def test_its_compare_row_stands_at_what_the_verdict_keeps(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the verdict keeps the current setting (the proposal measured worse beyond the error
    bar), PizzaPi's row is the current setting's, as every runtime's is (``kept_or``). Before,
    it stood at the proposal. The current setting here keeps every server loaded (nothing
    deferred: every tool in the request, so every expected tool is there), which the knee's
    proposal, deferring to save tokens, misses on these 20 cases beyond the error bar."""
    import workbench.runtimes.pizzapi.tune as pizza

    now = pizza.PizzaSetting(token_threshold=10**9)
    tuned = pizza.tune_pizzapi

    def with_current(*args: Any, **kwargs: Any) -> pizza.PizzaReport:
        report = tuned(*args, **kwargs)
        found = measure(now, ws.catalog, ws.tokens, report_cases)
        return dataclasses.replace(report, current=now, current_cases=tuple(found))

    monkeypatch.setattr(pizza, "tune_pizzapi", with_current)
    report_cases = resolve_cases(load_cases(CASES), ws.catalog).cases[:20]
    cases = CaseSet(report_cases)
    row = runtime_row(get_runtime("pizzapi"), ws, cases, folds=5)
    assert row.kept is not None and "beyond the error bar" in row.kept
    assert (
        row.setting
        == "current kept: maxResults 5, threshold 1,000,000,000, brave_search, memory loaded"
    )
    expected = measure(now, ws.catalog, ws.tokens, report_cases)
    assert row.recall == pytest.approx(sum(r.recall for r in expected) / len(expected))
    assert row.params["kept"] is True and row.params["proposal"]["tokenThreshold"] == 10_000


def test_tune_text_says_what_it_stands_on(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_tune()) == 0
    out = capsys.readouterr().out
    for part in ("held-out", "in-sample", "gap", "default   PizzaPi's", "maxResults", "engine"):
        assert part in out
    assert "--pizzapi-config PATH" in out


# ------------------------------------------------------------------------------------ export


def test_export_prints_the_fragment_with_the_kept_servers_never_deferred(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        [
            "export",
            str(AGENT),
            "--runtime",
            "pizzapi",
            "--catalog",
            str(CATALOG),
            "--keep",
            "memory-read_graph",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    assert check_config(doc) is None
    assert doc["toolSearch"] == {
        "enabled": True,
        "tokenThreshold": 10_000,
        "maxResults": 5,
        "keepLoadedTools": True,
    }
    assert doc["mcpServers"]["memory"]["deferLoading"] is False
    assert "deferLoading" not in doc["mcpServers"]["brave_search"]  # deferred by the threshold
    # A variable passed through is PizzaPi's own environment's: not written, and said.
    assert "env" not in doc["mcpServers"]["brave_search"]
    assert "BRAVE_API_KEY left out" in err


def test_entries_as_pizzapi_names_their_fields() -> None:
    http, notes = server_entry(
        {"name": "h", "transport": "http", "url": "https://x/mcp", "headers": {"A": "b"}}
    )
    assert http == {"url": "https://x/mcp", "transport": "streamable", "headers": {"A": "b"}}
    assert notes == []
    sse, notes = server_entry({"name": "s", "transport": "sse", "url": "https://x/sse"})
    assert sse is None and "PizzaPi has no SSE client" in notes[0]
    stdio, notes = server_entry(
        {"name": "t", "command": "run", "args": ["${HOME}/x"], "env": {"K": "${OTHER}", "L": "1"}}
    )
    assert stdio == {"command": "run", "args": ["${HOME}/x"], "env": {"K": "${OTHER}", "L": "1"}}
    assert any("does not expand ${VAR}" in n for n in notes)


# ------------------------------------------------------------------------------------- merge

REALISTIC = """{
    "apiKey": "sk-🍕-ключ",
    "relayUrl": "wss://relay.example/ws",
    "providerSettings": {"anthropic": {"models": ["claude-x", "claude-y"], "retry": {"max": 3}}},
    "toolSearch": {"enabled": false, "maxResults": 3, "note": "état"},
    "mcpServers": {
        "memory": {"command": "mem", "deferLoading": true, "env": {"A": "ä"}, "cwd": "@HOME@"},
        "github": {"command": "gh-mcp", "deferLoading": true}
    },
    "mcp": {"servers": [{"name": "brave_search", "transport": "stdio", "command": "brave"}]},
    "hooks": {"PreToolUse": [{"matcher": "bash", "command": "echo ✓"}]},
    "sandbox": {"mode": "full", "network": {"allowedDomains": ["a.example", "b.example"]}}
}
"""


def test_the_merge_keeps_every_other_key_in_its_place(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(REALISTIC, encoding="utf-8")
    os.chmod(path, 0o600)
    before = json.loads(REALISTIC)
    setting = PizzaSetting(
        max_results=2, token_threshold=10_000, defer_loading=(("memory", False),)
    )
    plan, notes = plan_config(path, ENTRIES, SERVERS, setting)
    assert "--- " in plan.diff and "+++ " in plan.diff
    assert any("github" in n for n in notes)  # another server counts towards the threshold
    saved = apply_plan(plan)
    assert saved == tmp_path / "config.json.bak" and saved.read_text(encoding="utf-8") == REALISTIC
    after = json.loads(path.read_text(encoding="utf-8"))
    assert list(after) == list(before)
    for key in ("apiKey", "relayUrl", "providerSettings", "hooks", "sandbox"):
        assert after[key] == before[key]
    assert after["toolSearch"] == {
        "enabled": True,
        "maxResults": 2,
        "note": "état",
        "tokenThreshold": 10_000,
        "keepLoadedTools": True,
    }
    assert after["mcpServers"] == {
        "memory": {"command": "mem", "deferLoading": False, "env": {"A": "ä"}, "cwd": "@HOME@"},
        "github": {"command": "gh-mcp", "deferLoading": True},  # not the agent's: untouched
    }
    # The agent's brave_search is in the mcp.servers[] form: changed there, not added twice.
    assert after["mcp"] == before["mcp"]
    assert "sk-🍕-ключ" in path.read_text(encoding="utf-8")  # unicode kept as it is
    assert path.read_text(encoding="utf-8").startswith('{\n    "apiKey"')  # the file's indent
    assert os.stat(path).st_mode & 0o777 == 0o600
    again, _ = plan_config(path, ENTRIES, SERVERS, setting)
    assert not again.changed  # a second merge changes nothing


def test_a_link_is_written_through_and_keep_loaded_tools_is_the_files(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "pizzapi.json"
    target.parent.mkdir()
    target.write_text('{"toolSearch": {"keepLoadedTools": false}}\n')
    link = tmp_path / "config.json"
    link.symlink_to(target)
    plan, _ = plan_config(link, ENTRIES, SERVERS, PizzaSetting(max_results=4))
    apply_plan(plan)
    assert link.is_symlink() and link.resolve() == target.resolve()
    search = json.loads(target.read_text())["toolSearch"]
    assert search["maxResults"] == 4 and search["keepLoadedTools"] is False


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('{"toolSearch": {"keepLoadedTools": ["search"]}}', "toolSearch.keepLoadedTools"),
        ('{"toolSearch": {"tokenThreshold": "12000"}}', "toolSearch.tokenThreshold"),
        ('{"toolSearch": {"maxResults": 0}}', "toolSearch.maxResults"),
        (
            '{"mcpServers": {"memory": {"command": "npx", "deferLoading": "yes"}}}',
            "mcpServers.memory.deferLoading",
        ),
    ],
)
def test_a_value_pizzapi_would_refuse_is_an_error_not_replaced(
    tmp_path: Path, text: str, field: str
) -> None:
    path = tmp_path / "config.json"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as caught:
        plan_config(path, ENTRIES, SERVERS, PizzaSetting(max_results=4))
    assert caught.value.field == field and "nothing written" in str(caught.value)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert path.read_text() == text + "\n"


def test_a_new_file_is_the_fragment(tmp_path: Path) -> None:
    path = tmp_path / "home" / ".pizzapi" / "config.json"
    setting = PizzaSetting(defer_loading=(("memory", False),))
    plan, _ = plan_config(path, ENTRIES, SERVERS, setting)
    assert apply_plan(plan) is None
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert check_config(doc) is None
    assert list(doc["mcpServers"]) == SERVERS
    assert doc["mcpServers"]["memory"]["deferLoading"] is False


def test_a_file_changed_since_it_was_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"a": 1}\n')
    plan, _ = plan_config(path, ENTRIES, SERVERS, PizzaSetting())
    path.write_text('{"a": 2}\n')
    with pytest.raises(WriteBackError, match="changed on disk"):
        apply_plan(plan)
    assert path.read_text() == '{"a": 2}\n' and not (tmp_path / "config.json.bak").exists()


@pytest.mark.parametrize(
    "text",
    ['{"toolSearch": {"enabled": true,}}', "[1, 2]", '{"toolSearch": 3}', '{"mcpServers": []}'],
)
def test_a_bad_file_is_refused_in_one_line(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.json"
    path.write_text(text)
    assert main(_tune("--apply", "--pizzapi-config", str(path))) == 2
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if not line.startswith("holo-tune: cases:")]
    assert len(lines) == 1 and str(path) in lines[0] and lines[0].startswith("holo-tune: error:")
    assert out == ""
    assert path.read_text() == text and not (tmp_path / "config.json.bak").exists()


def test_tune_apply_writes_the_reported_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    by_env = tmp_path / "env.json"
    by_flag = tmp_path / "flag.json"
    monkeypatch.setenv("PIZZAPI_CONFIG", str(by_env))
    assert main(_tune("--apply", "--json")) == 0
    report = json.loads(capsys.readouterr().out)
    written = json.loads(by_env.read_text(encoding="utf-8"))
    knobs = report["setting"]
    assert written["toolSearch"] == {
        "enabled": True,
        "tokenThreshold": knobs["tokenThreshold"],
        "maxResults": knobs["maxResults"],
        "keepLoadedTools": knobs["keepLoadedTools"],
    }
    for name, defer in knobs["deferLoading"].items():
        assert written["mcpServers"][name]["deferLoading"] is defer
    assert main(_tune("--apply", "--pizzapi-config", str(by_flag))) == 0  # the flag wins
    _, err = capsys.readouterr()
    assert by_flag.exists() and "a new file" in err
    assert json.loads(by_flag.read_text(encoding="utf-8")) == written


# ------------------------------------------------------------------------- the merge, any file

_names = st.sampled_from(["brave_search", "memory", "github", "ünï"])
_entry = st.dictionaries(
    st.sampled_from(["command", "args", "deferLoading", "env", "url", "x"]), VALUES, max_size=4
)
_document = st.fixed_dictionaries(
    {},
    optional={
        "toolSearch": st.dictionaries(st.sampled_from([*KNOBS, "other"]), VALUES, max_size=4)
        | VALUES,
        "mcpServers": st.dictionaries(_names, _entry, min_size=1, max_size=4)
        | st.dictionaries(_names, VALUES, max_size=2)
        | VALUES,
        "mcp": st.fixed_dictionaries(
            {"servers": st.lists(st.fixed_dictionaries({"name": _names}, optional={"y": VALUES}))}
        )
        | VALUES,
        "other": VALUES,
        "ключ": VALUES,
    },
)
_setting = st.builds(
    PizzaSetting,
    max_results=st.integers(1, 10),
    token_threshold=st.sampled_from([0, 10_000, 37_000]),
    defer_loading=st.lists(st.tuples(st.sampled_from(SERVERS), st.booleans()), max_size=2).map(
        lambda pairs: tuple(dict(pairs).items())
    ),
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every leaf (and empty list) with its path, outside what the merge may change (an empty
    object may gain keys: :func:`_orders` checks it is still there)."""
    if _changeable(path):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path, value


def _changeable(path: tuple[Any, ...]) -> bool:
    """Whether the merge may change what is at ``path``: a knob, or a server's deferLoading."""
    if len(path) == 2 and path[0] == "toolSearch":
        return path[1] in KNOBS
    if len(path) == 3 and path[0] == "mcpServers":
        return path[2] == "deferLoading"
    return len(path) == 4 and path[:2] == ("mcp", "servers") and path[3] == "deferLoading"


def _orders(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], list[str]]]:
    if _changeable(path):
        return
    if isinstance(value, dict):
        yield path, list(value)
        for key, item in value.items():
            yield from _orders(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _orders(item, (*path, index))


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _refusable(doc: dict[str, Any]) -> bool:
    """Whether the merge must refuse ``doc``: a part it writes into is not an object, or a value
    it reads or keeps breaks PizzaPi's rules (a flag that is not a boolean, a count that is not
    a whole number within bounds)."""
    servers = doc.get("mcpServers")
    search = doc.get("toolSearch")
    if "toolSearch" in doc and not isinstance(search, dict):
        return True
    if "mcpServers" in doc and not isinstance(servers, dict):
        return True
    if isinstance(search, dict):
        flags = [search[k] for k in ("enabled", "keepLoadedTools") if k in search]
        counts = [
            (search[k], low) for k, low in (("tokenThreshold", 0), ("maxResults", 1)) if k in search
        ]
        if any(not isinstance(v, bool) for v in flags) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < low for v, low in counts
        ):
            return True
    if isinstance(servers, dict) and any(
        isinstance(e, dict) and "deferLoading" in e and not isinstance(e["deferLoading"], bool)
        for e in servers.values()
    ):
        return True
    return isinstance(servers, dict) and any(
        not isinstance(servers[s], dict) for s in SERVERS if s in servers
    )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=_document, setting=_setting)
def test_any_config_keeps_every_key_but_the_knobs_and_defer_loading(
    tmp_path: Path, document: dict[str, Any], setting: PizzaSetting
) -> None:
    path = tmp_path / "config.json"
    text = json.dumps(document, ensure_ascii=False, indent=4)
    path.write_text(text, encoding="utf-8")
    try:
        plan, _ = plan_config(path, ENTRIES, SERVERS, setting)
    except ConfigError as err:
        assert _refusable(document), err.one_line()
        assert str(path) in err.one_line() and "\n" not in err.one_line()
        return
    assert not _refusable(document)
    new = json.loads(plan.new.decode("utf-8"))
    kept = dict(_leaves(new))
    for where, value in _leaves(document):
        assert where in kept and kept[where] == value, where
    for where, keys in _orders(document):
        now = list(_at(new, where))
        assert [k for k in now if k in keys] == [k for k in keys if k in now], where
    was = document.get("toolSearch", {}).get("keepLoadedTools")
    assert {k: new["toolSearch"][k] for k in KNOBS} == {
        "enabled": True,
        "tokenThreshold": setting.token_threshold,
        "maxResults": setting.max_results,
        "keepLoadedTools": was if isinstance(was, bool) else setting.keep_loaded_tools,
    }
    overrides = dict(setting.defer_loading)
    for name in SERVERS:
        servers = new.get("mcpServers", {})
        entry = servers[name] if name in servers else _listed(new, name)
        assert entry is not None and entry.get("deferLoading") == overrides.get(name)


def _listed(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The first ``mcp.servers[]`` entry called ``name``."""
    mcp = doc.get("mcp")
    listed = mcp.get("servers") if isinstance(mcp, dict) else None
    found = [e for e in listed or [] if isinstance(e, dict) and e.get("name") == name]
    return found[0] if isinstance(listed, list) and found else None
