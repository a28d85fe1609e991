"""``check --runtime argus`` with cases: the tools find_tool never finds, and Argus description
overrides built from the words of the queries that missed them, measured held-out and written by
``--write-fixes`` into ``argus/config.yaml``.

Real parts: the metatool data set (tests/data/datasets: 199 tools with short descriptions, many
queries per tool), the real tokenizer, the lab's argus engine, and argus-mcp 0.8.6's own
``ArgusConfig`` and ``ToolIndex`` from its sdist (tests/oracle/argus.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from oracle.argus import SDIST, Argus, argus_mcp
from provided import require

from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import Catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.evaluate.cases import CaseSet, load_cases, resolve_cases
from workbench.evaluate.catalog_findings import unreached_by
from workbench.evaluate.deferred_tune import DeferredSetting, measure
from workbench.evaluate.metrics import CaseResult
from workbench.evaluate.tuner import fold_assignment
from workbench.runtimes import get_runtime
from workbench.runtimes.argus import argus_names
from workbench.runtimes.argus.overrides import (
    LEAD,
    MAX_ADDED,
    MAX_WORDS,
    described,
    measure_overrides,
    propose,
    query_words,
    with_overrides,
)
from workbench.search.strategies.argus import ArgusParams, ArgusStrategy
from workbench.search.strategies.base import source_description
from workbench.tokens import TokenTable, token_table

METATOOL = Path(__file__).resolve().parent / "data" / "datasets" / "metatool"
#: The first cases of the data set: enough for the gain to lie outside the error bars.
CASES = 600
#: What check measures: the config's keep_tools (none here), Argus's default limit and scorer.
SETTING = DeferredSetting("overlap", 5, ())
AGENT = """\
name: metatool-agent
model:
  provider: openai
  name: gpt-4o
instructions:
  inline: You are a helpful assistant.
tools:
  - name: plugins
    type: mcp
    description: the metatool plugins
    command: npx
    args: ["-y", "plugins-server"]
"""
EXISTING = """\
# the team's gateway
version: "1"
backends:
  plugins:
    type: stdio
    command: npx   # started by Argus
    args: ["-y", "plugins-server"]
    tool_overrides:
      MemeTool:
        name: meme_maker   # our name for it
optimizer:
  enabled: true
  keep_tools: []
"""


@pytest.fixture(scope="module")
def world() -> tuple[Catalog, TokenTable, CaseSet]:
    agent = load_agent(METATOOL / "agent.yaml", environ={})
    catalog = load_catalog(agent, catalog_file=METATOOL / "catalog.json")
    cases = resolve_cases(load_cases(METATOOL / "cases.jsonl")[:CASES], catalog)
    return catalog, token_table(catalog, "openai", "gpt-4o"), cases


def run(catalog: Catalog, bill: TokenTable, items: Any) -> list[CaseResult]:
    return measure(SETTING, catalog, bill, items, runtime=get_runtime("argus"))


@pytest.fixture(scope="module")
def argus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Argus]:
    require("argus-mcp's sdist", files=[SDIST])
    with argus_mcp(tmp_path_factory.mktemp("argus-sdist")) as loaded:
        yield loaded


@pytest.fixture()
def agent_dir(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "agent.yaml").write_text(AGENT)
    lines = (METATOOL / "cases.jsonl").read_text().splitlines()[:CASES]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def _check(agent_dir: Path, *more: str) -> list[str]:
    return [
        "check", str(agent_dir / "agent.yaml"), "--runtime", "argus",
        "--catalog", str(METATOOL / "catalog.json"), "--embedder", "none",
        "--cases", str(agent_dir / "cases.jsonl"), *more,
    ]  # fmt: skip


def _finding(report: dict[str, Any], code: str) -> dict[str, Any]:
    return next(f for f in report["findings"] if f["code"] == code)


# ------------------------------------------------------------------------------- the overrides


def test_a_description_keeps_its_words_and_gains_a_bounded_keywords_line() -> None:
    assert query_words("Can you find the best Pizza places in Austin, Texas?") == [
        "best", "pizza", "places", "austin", "texas",
    ]  # fmt: skip
    assert described("Create memes.", ["meme", "funny"]) == "Create memes.\nKeywords: meme funny"
    assert described("", ["meme"]) == "Keywords: meme"
    again = described("Create memes.\nKeywords: meme funny", ["funny", "witty"])
    assert again == "Create memes.\nKeywords: meme funny witty"


def test_an_override_adds_only_distinctive_words_its_text_lacks(
    world: tuple[Catalog, TokenTable, CaseSet],
) -> None:
    catalog, table, cases = world
    base = run(catalog, table, cases.cases)
    names = argus_names(catalog)
    proposal = propose(catalog, names, base)
    assert proposal
    missed = unreached_by(base)
    assert set(proposal) <= set(missed)
    for tool, override in proposal.items():
        old = source_description(catalog.tools[tool])
        assert override.description.startswith(old.rstrip())  # kept whole
        assert override.description.endswith(LEAD + " ".join(override.words))
        assert len(override.words) <= MAX_WORDS and len(" ".join(override.words)) <= MAX_ADDED
        said = f"{names[tool]} {old}".lower()
        queries = [r.case.query.lower() for r in missed[tool]]
        for word in override.words:
            assert word not in query_words(said)
            assert sum(word in query_words(q) for q in queries) >= min(2, len(queries))


def test_the_overrides_gain_held_out_on_metatool(
    world: tuple[Catalog, TokenTable, CaseSet],
) -> None:
    catalog, table, cases = world
    report = measure_overrides(catalog, table, cases.cases, run, argus_names(catalog))
    assert report.significant and report.interval[0] > 0.0
    assert report.gain == pytest.approx(report.heldout.recall - report.baseline.recall)
    assert report.gain > 0.02 and report.hit_gain > 0.0
    assert len(report.per_fold) == 5 and all(report.per_fold)
    overridden = {o.tool for o in report.proposal}
    grown = table.per_tool[list(overridden)]
    _, after = with_overrides(catalog, table, {o.tool: o.description for o in report.proposal})
    assert (after.per_tool[list(overridden)] > grown).all()  # the longer descriptions cost more
    assert report.heldout.tokens_selected_mean > 0


def test_the_measurement_never_reads_the_held_out_queries(
    world: tuple[Catalog, TokenTable, CaseSet],
) -> None:
    """Each unreachable tool is expected by one case only: in the round that holds that case
    out, no training query names the tool, so no override is built for it and the case still
    misses it; overrides built from every query (the test fold's too) do reach it for most of
    these cases, so a measurement that read them would show it."""
    catalog, table, cases = world
    base = run(catalog, table, cases.cases)
    names = argus_names(catalog)
    only = {tool: results[0].case.query for tool, results in unreached_by(base).items()}
    reached = [c for c, r in zip(cases.cases, base, strict=True) if r.recall == 1.0][:100]
    items = [c for c in cases.cases if c.query in only.values()] + reached
    assert len(only) > 10
    report = measure_overrides(catalog, table, items, run, names)
    assert report.gain <= 0.0 and not report.significant
    assert report.proposal  # built on every case, each from its tool's one query
    leaked = run(
        *with_overrides(catalog, table, {o.tool: o.description for o in report.proposal}), items
    )
    by_query = {r.case.query: r for r in report.heldout_cases}
    gained_if_leaked = 0
    for tool, query in only.items():
        assert tool not in by_query[query].selected
        gained_if_leaked += any(r.case.query == query and tool in r.selected for r in leaked)
    assert gained_if_leaked >= len(only) // 2


@pytest.mark.provided("argus-mcp's sdist", files=[SDIST])
def test_argus_own_index_ranks_the_tool_higher_for_a_held_out_query(
    argus: Argus,
    world: tuple[Catalog, TokenTable, CaseSet],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Overrides built from the training folds: argus-mcp's own ToolIndex (its plain install:
    the word-overlap scorer), given the overridden descriptions as Argus's registry lists them,
    finds the tool within the limit for held-out queries it missed before, and ranks as the lab's
    engine does over the same descriptions."""
    catalog, table, cases = world
    base = run(catalog, table, cases.cases)
    names = argus_names(catalog)
    fold_of = fold_assignment(len(cases), 5)
    train = [r for r, fold in zip(base, fold_of, strict=True) if fold != 0]
    proposal = propose(catalog, names, train)
    new = {t: o.description for t, o in proposal.items()}
    changed, bill = with_overrides(catalog, table, new)
    search = sys.modules[argus.ToolIndex.__module__]
    monkeypatch.setattr(search, "_HAS_SKLEARN", False)

    def index(of: Catalog) -> Any:
        built = argus.ToolIndex()
        built.store_sync(
            [
                {"name": n, "description": source_description(t)}
                for n, t in zip(names, of.tools, strict=True)
            ]
        )
        return built

    before, after = index(catalog), index(changed)
    engine = ArgusStrategy(changed, bill, ArgusParams(scorer="overlap"), names=names)
    trained = {r.case.query for r in train}
    higher = lower = moved_in = 0
    for case, fold in zip(cases.cases, fold_of, strict=True):
        tools = [g[0] for g in case.groups if len(g) == 1 and g[0] in proposal]
        if fold != 0 or not tools:
            continue
        assert case.query not in trained
        old = [h["name"] for h in before.search(case.query, limit=len(catalog))]
        now = [h["name"] for h in after.search(case.query, limit=len(catalog))]
        assert now == [names[i] for i in engine.ranking(case.query)[0].tolist()]
        for tool in tools:
            was, is_ = (
                r.index(names[tool]) if names[tool] in r else len(catalog) for r in (old, now)
            )
            higher += is_ < was
            lower += is_ > was  # (other tools' overrides may pass it)
            moved_in += was >= 5 > is_  # into find_tool's default limit
    print(f"held-out: the tool higher for {higher}, lower {lower}, into the limit {moved_in}")
    assert higher >= 5 and higher > 2 * lower and moved_in >= 1


# --------------------------------------------------------------------------------- check itself


def test_check_lists_the_overrides_measured_held_out_in_text_and_json(
    agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_check(agent_dir, "--json")) == 0
    report = json.loads(capsys.readouterr().out)
    unreachable = _finding(report, "unreachable-tools")
    assert unreachable["evidence"]["setting"] == {"keep_tools": [], "limit": 5, "scorer": "overlap"}
    assert (
        "optimizer.keep_tools" in unreachable["fix"] and "always_include" not in unreachable["fix"]
    )
    # The fix names the tool as keep_tools takes it (Argus's name), not holo-tune's full name.
    first = unreachable["evidence"]["tools"][0]["tool"]
    server, tool = first.split("-", 1)
    assert f"(e.g. {first}:" not in unreachable["fix"]
    assert f"(e.g. {tool}:" in unreachable["fix"] or f"(e.g. {server}_{tool}:" in unreachable["fix"]
    found = _finding(report, "what-if-description-overrides")
    evidence = found["evidence"]
    low, high = evidence["ci95"]
    assert 0.0 < low <= evidence["gain"] <= high
    rows = evidence["overrides"]
    assert rows and {r["backend"] for r in rows} == {"plugins"}
    assert evidence["tool_overrides"]["plugins"][rows[0]["name"]] == {
        "description": rows[0]["description"]
    }
    assert all(r["tokens_added"] > 0 and r["words"] for r in rows)
    assert main(_check(agent_dir)) == 0
    text = capsys.readouterr().out
    line = f"info    what-if-description-overrides: {found['message']}"
    assert line in text and "95% CI" in line and "tokens per task" in line
    assert f"{rows[0]['tool']}: + {' '.join(rows[0]['words'])}" in text
    assert "check --write-fixes" in text
    assert not (agent_dir / "argus").exists()  # nothing written unless asked


@pytest.mark.provided("argus-mcp's sdist", files=[SDIST])
def test_write_fixes_merges_the_overrides_into_the_users_config(
    argus: Argus, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (agent_dir / "argus").mkdir()
    path = agent_dir / "argus" / "config.yaml"
    path.write_text(EXISTING)
    assert main(_check(agent_dir, "--json", "--write-fixes")) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    rows = _finding(report, "what-if-description-overrides")["evidence"]["overrides"]
    assert "description overrides of" in captured.err and "written" in captured.err
    assert (agent_dir / "argus" / "config.yaml.bak").read_text() == EXISTING
    text = path.read_text()
    for kept in ("# the team's gateway", "command: npx   # started by Argus", "# our name for it"):
        assert kept in text
    config = argus.ArgusConfig.model_validate(argus.expand_env_vars(yaml.safe_load(text)))
    overrides = config.backends["plugins"].tool_overrides
    for row in rows:
        assert overrides[row["name"]].description == row["description"]
    assert overrides["MemeTool"].name == "meme_maker"  # the user's rename kept
    assert "      MemeTool:\n        name: meme_maker   # our name for it\n" in text
    assert "description: |-\n          Create memes.\n          Keywords: meme" in text
    assert config.optimizer.enabled is True and config.optimizer.keep_tools == []
    # check reads the written descriptions back: the tools they reach are no longer unreachable
    before = {t["tool"] for t in _finding(report, "unreachable-tools")["evidence"]["tools"]}
    assert main(_check(agent_dir, "--json", "--no-what-if")) == 0
    again = json.loads(capsys.readouterr().out)
    after = {t["tool"] for t in _finding(again, "unreachable-tools")["evidence"]["tools"]}
    assert after < before


def test_a_runtime_without_fixes_of_its_own_says_nothing_is_written(
    agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _check(agent_dir, "--no-what-if", "--write-fixes")
    args[args.index("argus")] = "anthropic"
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "nothing written for anthropic: it writes no fix of its own" in err
    assert not (agent_dir / "argus").exists()
