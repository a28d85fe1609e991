"""Catalog and query findings, each pinned on a small catalog made for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.evaluate.catalog_findings import (
    CONFUSABLE_SIMILARITY,
    bill_dominators,
    catalog_findings,
    confusable_tools,
    one_word_descriptions,
    similar_pairs,
)
from workbench.evaluate.query_findings import QueryReader, scripts
from workbench.search.tokenize import tokenize
from workbench.workspace import Workspace, open_workspace

AGENT = (
    "name: findings\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
    "tool_filtering:\n  enabled: true\n  top_k: 2\n  similarity_threshold: 0.3\n"
    "  search_method: bm25\n  always_include_top_n_used: 0\n"
)


def _tool(name: str, description: str, *params: str) -> dict[str, Any]:
    props = {p: {"type": "string"} for p in params}
    return {"name": name, "description": description, "inputSchema": {"properties": props}}


def _open(tmp_path: Path, servers: dict[str, list[dict[str, Any]]]) -> Workspace:
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT)
    snapshot = tmp_path / "catalog.json"
    snapshot.write_text(json.dumps({"holo_tune_catalog": 1, "servers": {
        name: {"tools": tools} for name, tools in servers.items()
    }}))  # fmt: skip
    return open_workspace(agent, catalog_file=snapshot, embedder_spec="none")


FILES = [
    _tool("read_file", "Read the contents of a file from the local disk", "path"),
    _tool("write_file", "Write text content into a file on the local disk", "path", "content"),
    _tool("ping", "Ping"),
    _tool("send_email", "Send an email message to one recipient", "to", "subject"),
    _tool("get_weather", "Get the weather forecast for a city", "city"),
]
MIRROR = [
    _tool("read_file", "Read the contents of a file from the local disk", "path"),
]


# ------------------------------------------------------------------------------- the catalog


def test_one_word_descriptions(tmp_path: Path) -> None:
    ws = _open(tmp_path, {"fs": FILES})
    (finding,) = one_word_descriptions(ws.catalog)
    assert finding.code == "one-word-description" and finding.severity == "warning"
    assert finding.evidence == {"tools": ["fs-ping"], "descriptions": {"fs-ping": "Ping"}}
    assert finding.fix and "description" in finding.fix


def test_confusable_tools_name_both_and_their_similarity(tmp_path: Path) -> None:
    ws = _open(tmp_path, {"fs": FILES, "mirror": MIRROR})
    (finding,) = confusable_tools(ws.catalog)
    pairs = finding.evidence["pairs"]
    assert [p["tools"] for p in pairs] == [["fs-read_file", "mirror-read_file"]]
    # the texts differ only by the server name: very similar, and the evidence says where
    assert CONFUSABLE_SIMILARITY <= pairs[0]["similarity"] < 1.0
    assert (pairs[0]["only_first"], pairs[0]["only_second"]) == (["fs"], ["mirror"])
    assert "fs-read_file ~ mirror-read_file" in finding.message
    # read_file and write_file share words but are not near twins
    assert confusable_tools(_open(tmp_path, {"fs": FILES}).catalog) == []


def test_similar_pairs_is_a_cosine_over_the_runtime_tokens() -> None:
    assert similar_pairs(["send mail", "send mail"], 0.99) == [(0, 1, pytest.approx(1.0))]
    assert similar_pairs(["send mail", "weather city"], 0.0) == []  # nothing shared: no pair
    same = similar_pairs(["Send-Mail", "send mail"], 0.99)  # the same tokens
    assert same == [(0, 1, pytest.approx(1.0))]
    assert similar_pairs(["日本", "😀"]) == []  # no token at all


def test_bill_dominators_with_their_share(tmp_path: Path) -> None:
    big = _tool("giant", "A tool with a huge schema", *[f"field_{n}" for n in range(120)])
    small = [_tool(f"t{n}", f"Small tool number {n}") for n in range(20)]
    ws = _open(tmp_path, {"kit": [*small, big]})
    (finding,) = bill_dominators(ws.catalog, ws.tokens)
    rows = finding.evidence["tools"]
    assert len(rows) == 5 and rows[0]["tool"] == "kit-giant"
    total = int(ws.tokens.per_tool.sum())
    assert rows[0]["tokens"] == int(ws.tokens.per_tool[ws.catalog.position("kit-giant")])
    assert rows[0]["share"] == pytest.approx(rows[0]["tokens"] / total)
    assert finding.evidence["share"] == pytest.approx(sum(r["share"] for r in rows))
    assert [r["tokens"] for r in rows] == sorted((r["tokens"] for r in rows), reverse=True)
    # tools of about the same size: nobody dominates
    even = _open(tmp_path, {"kit": small})
    assert bill_dominators(even.catalog, even.tokens) == []


def test_check_lists_unreachable_and_confusable_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _open(tmp_path, {"fs": FILES, "mirror": MIRROR})
    cases = tmp_path / "labels" / "cases.jsonl"  # not beside the agent: no default cases below
    cases.parent.mkdir()
    rows = [
        {"query": "read the file contents", "expected": ["fs-read_file"]},
        {"query": "what is the forecast in Paris", "expected": ["fs-get_weather"]},
        {"query": "mail my boss", "expected": ["fs-send_email"]},
        {"query": "tell the team by mail", "expected": ["fs-send_email"]},
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["check", str(ws.agent.path), "--catalog", str(tmp_path / "catalog.json")]
    assert main([*argv, "--cases", str(cases), "--json"]) == 0
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    unreachable = found["unreachable-tools"]
    assert [t["tool"] for t in unreachable["evidence"]["tools"]] == ["fs-send_email"]
    assert unreachable["evidence"]["tools"][0]["cases"] == 2
    assert unreachable["fix"] and "always_include" in unreachable["fix"]
    assert found["confusable-tools"]["evidence"]["count"] == 1
    assert found["one-word-description"]["evidence"]["tools"] == ["fs-ping"]
    assert not any(code.startswith("what-if") for code in found)  # 4 cases cannot fill 5 folds
    # text: each finding with its fix
    assert main([*argv, "--cases", str(cases)]) == 0
    out = capsys.readouterr().out
    assert "unreachable-tools" in out and "fix: always_include" in out
    # without cases: no unreachable tools (nothing expected), the catalog findings still
    assert main([*argv, "--json"]) == 0
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    assert "unreachable-tools" not in codes and "confusable-tools" in codes


def test_catalog_findings_is_the_catalog_tabs_data(tmp_path: Path) -> None:
    ws = _open(tmp_path, {"fs": FILES, "mirror": MIRROR})
    found = catalog_findings(ws.catalog, ws.tokens)
    assert {f.code for f in found} == {"one-word-description", "confusable-tools"}
    for f in found:
        assert set(f.to_json()) == {"severity", "code", "message", "evidence", "fix"}
        json.dumps(f.to_json())  # plain data


# --------------------------------------------------------------------------------- queries


@pytest.mark.parametrize(
    ("query", "script"),
    [
        ("ファイルを読んで", ["HIRAGANA"]),
        ("天气怎么样", ["CJK"]),
        ("прочитай файл", ["CYRILLIC"]),
        ("🔥🚀", ["emoji or symbols"]),
    ],
)
def test_a_query_bm25_cannot_read(tmp_path: Path, query: str, script: list[str]) -> None:
    reader = QueryReader(_open(tmp_path, {"fs": FILES}).catalog)
    (finding,) = reader.findings(query)
    assert finding.code == "query-unreadable" and finding.severity == "warning"
    assert set(script) <= set(finding.evidence["scripts"])
    assert finding.evidence["query"] == query and finding.evidence["tokens"] == []
    assert finding.fix and "embedding service" in finding.fix
    (seen,) = reader.findings(query, embeds=True)
    assert seen.severity == "info" and "semantic half" in seen.message


def test_queries_bm25_reads_have_no_finding(tmp_path: Path) -> None:
    reader = QueryReader(_open(tmp_path, {"fs": FILES}).catalog)
    assert reader.findings("read a file") == []
    assert reader.findings("   ") == []
    assert reader.findings("ファイル read") == []  # one ASCII word is enough


def test_a_query_that_meets_only_parameter_names(tmp_path: Path) -> None:
    reader = QueryReader(_open(tmp_path, {"fs": FILES}).catalog)
    (finding,) = reader.findings("subject and path")
    assert finding.code == "query-parameter-only"
    assert finding.evidence["matched"] == ["path", "subject"]
    assert finding.evidence["tools"] == ["fs-read_file", "fs-send_email", "fs-write_file"]
    assert reader.findings("path of the file") == []  # 'file' is in a description


def test_search_and_eval_show_query_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = _open(tmp_path, {"fs": FILES})
    argv = [str(ws.agent.path), "--catalog", str(tmp_path / "catalog.json")]
    assert main(["search", *argv, "天气", "--json"]) == 0
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["code"] == "query-unreadable" and finding["evidence"]["scripts"] == ["CJK"]
    assert main(["search", *argv, "天气"]) == 0
    assert "query-unreadable" in capsys.readouterr().out
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"query": "天气怎么样", "expected": ["get_weather"]},
        {"query": "read the file", "expected": ["read_file"]},
    ]
    cases.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert main(["eval", *argv, "--cases", str(cases), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["evidence"]["query"] for f in data["findings"]] == ["天气怎么样"]
    assert main(["eval", *argv, "--cases", str(cases)]) == 0
    assert "query-unreadable" in capsys.readouterr().out


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> QueryReader:
    return QueryReader(_open(tmp_path_factory.mktemp("reader"), {"fs": FILES}).catalog)


@settings(max_examples=60, deadline=None)
@given(query=st.text(max_size=40))
def test_unreadable_exactly_when_the_runtime_reads_no_token(
    reader: QueryReader, query: str
) -> None:
    codes = [f.code for f in reader.findings(query)]
    unreadable = bool(query.strip()) and not tokenize(query)
    assert ("query-unreadable" in codes) == unreadable
    if unreadable:
        assert all(s for s in scripts(query))
