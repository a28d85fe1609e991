"""``holo-tune search``: docs/json.md's JSON, the human table, the loud BM25 line, bad input.

The JSON of a data set's agent is checked against HoloDeck's own filter (the oracle) on the kernel
HoloDeck's own conversion builds from the data set's raw catalog: what the command prints is what
the runtime would select and rank, under the names the runtime gives the tools.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from oracle.catalogs import dataset_kernel, dataset_path, load_cases
from oracle.runner import run_oracle
from oracle.stubs import ORACLE_PACKAGE, holodeck_tool_filter
from oracle.wheels import HOLODECK_WHEEL, SK_WHEEL
from provided import require

from workbench.cli import main
from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering

REPO = Path(__file__).resolve().parents[1]
STACKONE = dataset_path("stackone")
AGENT = str(STACKONE / "agent.yaml")
CATALOG = str(STACKONE / "catalog.json")


def search(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the command in-process; the query (if any) goes first, right after AGENT.yaml."""
    code = main(["search", AGENT, *args, "--catalog", CATALOG])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def tf() -> Iterator[Any]:
    require(
        "HoloDeck 0.6.40's tool filter and the Semantic Kernel 1.45.0 wheel",
        files=[ORACLE_PACKAGE / "index.py", HOLODECK_WHEEL, SK_WHEEL],
    )
    with holodeck_tool_filter() as module:
        yield module


def test_json_is_what_holodeck_selects_and_ranks(
    tf: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    queries = [case["query"] for case in load_cases("stackone", limit=6, stride=31)]
    file = tmp_path / "queries.txt"
    file.write_text("\n".join(queries[:3]) + "\n\n" + "\n".join(queries[3:]) + "\n")
    flags = ["--method", "hybrid", "--top-k", "4", "--threshold", "0.6", "--top-n-used", "1"]
    code, out, _ = search(capsys, "--queries", str(file), "--json", *flags)
    assert code == 0
    objects = [json.loads(line) for line in out.splitlines()]
    assert [o["query"] for o in objects] == queries

    setting = ToolFiltering(
        top_k=4, similarity_threshold=0.6, always_include_top_n_used=1, search_method="hybrid"
    )
    oracle = run_oracle(tf, dataset_kernel("stackone"), None, queries, ["hybrid"], [setting])
    for obj in objects:
        assert obj["method"] == "hybrid" and obj["top_k"] == 4
        assert obj["similarity_threshold"] == 0.6
        assert obj["selected"] == sorted(oracle.selections[(obj["query"], 0)])
        expected = oracle.rankings[(obj["query"], "hybrid")]
        assert [(r["tool"], r["score"]) for r in obj["ranking"]] == expected
        tokens = obj["tokens"]
        assert tokens["encoding"] == "o200k_base" and tokens["exact"] is True
        assert 0 < tokens["selected"] < tokens["all"]


def test_single_query_json_uses_the_yaml_block_and_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = search(capsys, "list employees", "--json", "--limit", "3")
    assert code == 0
    obj = json.loads(out)
    block = load_agent(AGENT).filtering
    assert block is not None
    assert obj["method"] == block.search_method == "bm25"
    assert obj["top_k"] == block.top_k
    assert len(obj["ranking"]) == 3
    assert obj["ranking"][0]["score"] == 1.0
    assert obj["selected"] == sorted(obj["selected"]) and len(obj["selected"]) <= block.top_k
    assert obj["runtime"]["name"] == "holodeck-0.6"
    assert set(obj) == {
        "runtime", "query", "method", "top_k", "similarity_threshold", "selected", "ranking",
        "tokens", "findings",
    }  # fmt: skip
    assert obj["findings"] == []
    assert err == ""


def test_human_table_has_cut_line_bill_and_bm25_warning(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = search(
        capsys,
        "create a connect session",
        "--method",
        "semantic",
        "--limit",
        "8",
        "--threshold",
        "0",
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "create a connect session"
    assert any(
        line.startswith("⚠ semantic is BM25 at run time: no embedding service") for line in lines
    )
    assert any("top_k 5" in line and "─" in line for line in lines)
    assert (
        lines[-1].startswith("tokens all ")
        and "saved" in lines[-1]
        and "o200k_base (exact)" in lines[-1]
    )
    assert sum(line.rstrip().endswith("search") for line in lines) == 5


RESEARCH = REPO / "sample_configs" / "research-agent.yaml"
RESEARCH_CATALOG = REPO / "sample_configs" / "research-agent.catalog.json"


def research_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str
) -> list[str]:
    """The human table of the research sample agent (BM25: no embedder), as lines."""
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")
    monkeypatch.setenv("HOLO_TUNE_EMBEDDER", "none")
    code = main(["search", str(RESEARCH), *args, "--catalog", str(RESEARCH_CATALOG)])
    assert code == 0
    return capsys.readouterr().out.splitlines()


def _rows_and_cuts(lines: list[str]) -> list[str]:
    """The table as ``#rank`` and cut labels, in order."""
    table = lines[lines.index(next(line for line in lines if line.lstrip().startswith("#"))) + 1 :]
    out = []
    for line in table:
        if "─" in line:
            out.append(line.strip(" ─"))
        elif line.split() and line.split()[0].isdigit():
            out.append("#" + line.split()[0])
    return out


def test_cut_line_is_the_threshold_when_the_slots_are_not_what_stops(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # top_k 5, always search_papers and the first 3 tools: 2 slots left, but one tool passes
    # 0.5 (search_papers, already in): the threshold is the cut, under row 1, not top_k above it
    lines = research_table(capsys, monkeypatch, "find papers", "--limit", "2")
    assert _rows_and_cuts(lines) == ["#1", "threshold 0.5: 1 pass", "#2", "#3", "#4"]
    row2 = next(line for line in lines if line.split()[:1] == ["2"])
    assert "0.4978" in row2.split()  # under the line, never drawn as 0.50


@pytest.mark.parametrize("top_k", range(5, 13))
def test_no_top_k_line_when_every_passing_tool_is_sent(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, top_k: int
) -> None:
    # brave_llm_context (3rd, always and top_n_used) passes 0.37: the search stops after 2 tools
    # but leaves no passing tool out, so only the threshold cuts
    lines = research_table(
        capsys,
        monkeypatch,
        "remember that Alice wrote the paper",
        "--method", "bm25", "--threshold", "0.37", "--always-include", "brave_llm_context",
        "--top-k", str(top_k), "--limit", "5",
    )  # fmt: skip
    assert _rows_and_cuts(lines)[:6] == ["#1", "#2", "#3", "threshold 0.37: 3 pass", "#4", "#5"]


def test_top_k_and_threshold_lines_where_each_stops(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # top_k 6 with 3 tools always in (brave_llm_context ranked 3rd): 3 slots for the search,
    # then top_k stops tools that still pass 0.065; the threshold line lower down
    lines = research_table(
        capsys,
        monkeypatch,
        "remember that Alice wrote the paper",
        "--method", "bm25", "--threshold", "0.065", "--top-k", "6", "--limit", "12",
    )  # fmt: skip
    cuts = _rows_and_cuts(lines)
    assert cuts[:6] == ["#1", "#2", "#3", "#4", "top_k 6", "#5"]
    assert cuts[cuts.index("#8") + 1] == "threshold 0.065: 8 pass"


def test_usage_file_warms_top_n_used(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    usage = tmp_path / "usage.json"
    usage.write_text(json.dumps({"hris-hris_list_employees": 9, "ats-ats_list_jobs": 4}))
    code, out, _ = search(capsys, "zzz", "--json", "--top-n-used", "2", "--usage", str(usage))
    assert code == 0
    assert json.loads(out)["selected"] == ["ats-ats_list_jobs", "hris-hris_list_employees"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["q", "--limit", "-1"], "--limit: must be >= 0"),
        (["q", "--top-k", "0"], "--top-k"),
        (["--queries", "{missing}"], "missing.txt: no such file"),
        (["--queries", "{empty}"], "no queries in the file"),
        (["q", "--usage", "{bad_usage}"], "nobody-nothing: no such tool in the catalog"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "empty.txt").write_text("\n  \n")
    (tmp_path / "bad_usage.json").write_text('{"nobody-nothing": 1}')
    files = {
        "missing": tmp_path / "missing.txt",
        "empty": tmp_path / "empty.txt",
        "bad_usage": tmp_path / "bad_usage.json",
    }
    code, out, err = search(capsys, *[a.format(**files) for a in args])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_research_agent_without_key_says_scores_are_bm25_here(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HOLO_TUNE_EMBEDDER", raising=False)
    agent = REPO / "sample_configs" / "research-agent.yaml"
    snapshot = REPO / "sample_configs" / "research-agent.catalog.json"
    code = main(["search", str(agent), "find papers on transformers", "--catalog", str(snapshot)])
    out = capsys.readouterr().out
    assert code == 0
    assert "⚠ semantic is shown as BM25 here: semantic scores need OPENAI_API_KEY" in out
    assert "vectorstore-search_papers" in out and "always" in out


def test_an_always_include_name_that_matches_no_tool_is_warned(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = search(
        capsys,
        "list employees",
        "--embedder",
        "none",
        "--always-include",
        "no_such_tool",
        "--always-include",
        "hris_list_employees",
        "--json",
    )
    assert code == 0
    warned = [line for line in err.splitlines() if "always_include" in line]
    assert warned == [
        "holo-tune: warning: always_include entry 'no_such_tool' matches no tool: "
        "the runtime ignores it"
    ]
    assert json.loads(out)["query"] == "list employees"


def test_a_query_over_64_kib_is_refused_by_its_length(capsys: pytest.CaptureFixture[str]) -> None:
    """Over serve's query limit: one line naming the length and the limit, exit 2, and the
    query is never echoed (it is the user's whole message)."""
    query = "list employees " + "x" * (64 * 1024)
    code, out, err = search(capsys, query)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"holo-tune: error: QUERY: the query is {len(query):,} bytes long: holo-tune ranks "
        "queries of at most 65,536 bytes (64 KiB)"
    ]
    assert "list employees" not in err


def test_a_query_of_64_kib_exactly_is_ranked(capsys: pytest.CaptureFixture[str]) -> None:
    query = ("list employees " * 5000)[: 64 * 1024 - 2] + "é"  # 2 bytes: 65,536 in all
    code, out, _ = search(capsys, query, "--json", "--embedder", "none")
    assert code == 0 and json.loads(out)["ranking"][0]["tool"] == "hris-hris_list_employees"


def test_a_queries_file_line_over_64_kib_is_refused_with_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    file = tmp_path / "queries.txt"
    long = "é" * (32 * 1024 + 1)  # 32,769 characters, 65,538 bytes
    file.write_text(f"list employees\n\n{long}\nlist jobs\n", encoding="utf-8")
    code, out, err = search(capsys, "--queries", str(file), "--json")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"holo-tune: error: {file}:3: the query is 65,538 bytes long: holo-tune ranks queries "
        "of at most 65,536 bytes (64 KiB)"
    ]
