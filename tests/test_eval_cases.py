"""Labelled cases: YAML, JSON Lines and the agent's test_cases; names resolved against a catalog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.catalog.build import mcp_tools
from workbench.catalog.models import Catalog
from workbench.config import load_agent
from workbench.errors import CasesError
from workbench.evaluate.cases import Case, cases_from_agent, load_cases, resolve_cases


def _catalog(servers: dict[str, list[str]]) -> Catalog:
    tools = []
    for server, names in servers.items():
        listing: list[dict[str, Any]] = [{"name": n, "description": f"{n} tool"} for n in names]
        tools += mcp_tools(server, listing)[0]
    return Catalog(tools=tools, servers=[])


CATALOG = _catalog(
    {"brave": ["brave_web_search", "brave_news_search"], "memory": ["search_nodes", "read_graph"]}
)


def test_jsonl_cases_with_category(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [
        {"query": "news about mars", "expected": ["brave-brave_news_search"], "category": "web"},
        {"query": "what do I know", "expected": ["read_graph"]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    cases = load_cases(path)
    assert [c.query for c in cases] == ["news about mars", "what do I know"]
    assert cases[0].category == "web" and cases[1].category is None
    assert cases[1].source == f"{path}:2"


def test_yaml_cases_keep_their_lines(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(
        "# labelled\ncases:\n  - query: find news\n    expected: [brave_news_search]\n"
        "  - query: graph\n    expected:\n      - name: read_graph\n"
    )
    cases = load_cases(path)
    assert [c.expected for c in cases] == [("brave_news_search",), ("read_graph",)]
    assert [c.source for c in cases] == [f"{path}:3", f"{path}:5"]


@pytest.mark.parametrize(
    ("name", "text", "line", "needle"),
    [
        (
            "bad.jsonl",
            '{"query": "a", "expected": ["x"]}\n{"query": "b", "expected": [}\n',
            2,
            "JSON",
        ),
        ("bad.jsonl", '{"query": "", "expected": ["x"]}\n', 1, "query"),
        ("bad.jsonl", '{"query": "a", "expected": {}}\n', 1, "expected"),
        ("bad.jsonl", '{"query": "a"}\n', 1, "expected"),
        ("bad.jsonl", '{"query": "a", "expected": [3]}\n', 1, "expected"),
        ("bad.jsonl", '["a"]\n', 1, "object"),
        ("bad.yaml", "cases:\n  - query: a\n    expected: [x\n", 4, "YAML"),
        ("bad.yaml", "cases:\n  - query: a\n  - query: b\n    expected: [x]\n", 2, "expected"),
    ],
)
def test_bad_files_name_file_and_line(
    tmp_path: Path, name: str, text: str, line: int, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CasesError) as err:
        load_cases(path)
    assert err.value.file == str(path) and err.value.line == line
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_an_empty_expected_list_is_a_query_no_tool_answers(tmp_path: Path) -> None:
    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text(
        '{"query": "news about mars", "expected": ["brave_news_search"]}\n'
        '{"query": "bake me a cake", "expected": []}\n'
    )
    yaml_file = tmp_path / "cases.yaml"
    yaml_file.write_text(
        "cases:\n  - query: news about mars\n    expected: [brave_news_search]\n"
        "  - query: bake me a cake\n    expected: []\n"
    )
    for path in (jsonl, yaml_file):
        cases = load_cases(path)
        assert [c.expected for c in cases] == [("brave_news_search",), ()]
        resolved = resolve_cases(cases, CATALOG)
        assert [c.query for c in resolved.cases] == ["news about mars"]
        assert [c.query for c in resolved.no_answer] == ["bake me a cake"]
        assert not resolved.skipped and not resolved.unknown
        assert resolved.warnings() == [
            "1 case expects no tool (expected: []): left out of hit and recall"
        ]
        assert resolved.subset([0]).no_answer == resolved.no_answer


def test_no_answer_cases_leave_every_other_figure_as_it_was(tmp_path: Path) -> None:
    from workbench.config.filtering import ToolFiltering
    from workbench.evaluate.metrics import evaluate
    from workbench.search.engine import HoloDeckEngine
    from workbench.tokens import token_table

    rows = [
        '{"query": "latest news about mars", "expected": ["brave_news_search"]}',
        '{"query": "what is in my memory graph", "expected": ["read_graph"]}',
    ]
    with_none = tmp_path / "with.jsonl"
    with_none.write_text("\n".join([*rows, '{"query": "bake a cake", "expected": []}']) + "\n")
    without = tmp_path / "without.jsonl"
    without.write_text("\n".join(rows) + "\n")
    engine = HoloDeckEngine(CATALOG, None)
    tokens = token_table(CATALOG, "openai", "gpt-4o")
    setting = ToolFiltering(enabled=True, search_method="bm25", top_k=1)
    reports = [
        evaluate(engine, CATALOG, tokens, resolve_cases(load_cases(p), CATALOG), setting)
        for p in (with_none, without)
    ]
    assert reports[0].metrics == reports[1].metrics
    assert reports[0].metrics.cases == 2
    assert reports[0].ci95() == reports[1].ci95()


def test_missing_or_empty_file(tmp_path: Path) -> None:
    with pytest.raises(CasesError, match="no such file"):
        load_cases(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CasesError, match="no cases"):
        load_cases(tmp_path / "empty.jsonl")


def test_full_and_bare_names_resolve_to_catalog_indices() -> None:
    cases = [
        Case("q1", ("brave-brave_web_search",)),
        Case("q2", ("search_nodes", "brave_news_search")),
    ]
    resolved = resolve_cases(cases, CATALOG)
    brave_web = CATALOG.position("brave-brave_web_search")
    assert resolved.cases[0].groups == ((brave_web,),)
    assert resolved.cases[1].groups == (
        (CATALOG.position("memory-search_nodes"),),
        (CATALOG.position("brave-brave_news_search"),),
    )
    assert not resolved.unknown and not resolved.skipped


def test_a_bare_name_on_several_servers_is_one_group() -> None:
    catalog = _catalog({"a": ["search"], "b": ["search", "other"]})
    resolved = resolve_cases([Case("q", ("search",))], catalog)
    assert resolved.cases[0].groups == ((0, 2),)  # b-other sorts before b-search


def test_unknown_names_are_reported_and_empty_cases_skipped() -> None:
    cases = [
        Case("q1", ("brave-brave_web_search", "nope"), source="c.jsonl:1"),
        Case("q2", ("gone",), source="c.jsonl:2"),
    ]
    resolved = resolve_cases(cases, CATALOG)
    assert len(resolved) == 1 and resolved.cases[0].names == ("brave-brave_web_search",)
    assert [(u.name, u.source) for u in resolved.unknown] == [
        ("nope", "c.jsonl:1"),
        ("gone", "c.jsonl:2"),
    ]
    assert [c.query for c in resolved.skipped] == ["q2"]
    warnings = resolved.warnings()
    assert "c.jsonl:1: unknown expected tool 'nope'" in warnings
    assert warnings[-1] == (
        "1 of 2 cases kept; 1 dropped: none of their expected tools is in the catalog (c.jsonl:2)"
    )


def test_substring_only_for_holodeck_test_cases() -> None:
    as_file = resolve_cases([Case("q", ("news",))], CATALOG)
    assert not as_file.cases
    as_test_case = resolve_cases([Case("q", ("news",), substring=True)], CATALOG)
    assert as_test_case.cases[0].groups == ((CATALOG.position("brave-brave_news_search"),),)
    # a full name still wins over a substring match
    exact = resolve_cases([Case("q", ("brave-brave_web_search",), substring=True)], CATALOG)
    assert exact.cases[0].groups == ((CATALOG.position("brave-brave_web_search"),),)


def test_agent_test_cases_strings_objects_and_turns(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
        "test_cases:\n"
        "  - name: one\n    input: latest news\n    expected_tools: [news]\n"
        "  - name: no-tools\n    input: hello\n"
        "  - name: obj\n    input: my graph\n    expected_tools:\n      - name: read_graph\n"
        "  - name: multi\n    turns:\n      - input: first\n      - input: look it up\n"
        "        expected_tools: [web_search]\n"
    )
    cases = cases_from_agent(load_agent(agent))
    assert [(c.query, c.expected) for c in cases] == [
        ("latest news", ("news",)),
        ("my graph", ("read_graph",)),
        ("look it up", ("web_search",)),
    ]
    assert all(c.substring for c in cases)
    assert cases[0].source == f"{agent}:8"
    assert cases[2].source == f"{agent}:20"
    resolved = resolve_cases(cases, CATALOG)
    assert len(resolved) == 3 and not resolved.unknown


def test_agent_test_cases_file_is_read_with_its_own_lines(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text(
        "# the agent's cases live here\n"
        "- name: one\n  input: latest news\n  expected_tools: [news]\n"
        "- name: two\n  input: my graph\n  expected_tools: [read_graph]\n"
    )
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
        "test_cases_file: cases.yaml\n"
    )
    cases = cases_from_agent(load_agent(agent))
    assert [(c.query, c.expected) for c in cases] == [
        ("latest news", ("news",)),
        ("my graph", ("read_graph",)),
    ]
    assert [c.source for c in cases] == [
        f"{tmp_path / 'cases.yaml'}:2",
        f"{tmp_path / 'cases.yaml'}:5",
    ]


def test_names_as_the_server_lists_them() -> None:
    listing: list[dict[str, Any]] = [
        {"name": "PDF&URL", "description": "pdf"},
        {"name": "read?file", "description": "kept"},
        {"name": "read/file", "description": "skipped: its name collides"},
    ]
    catalog = Catalog(tools=mcp_tools("p", listing)[0], servers=[])
    assert catalog.names() == ["p-PDF-URL", "p-read-file"]
    resolved = resolve_cases(
        [Case("a", ("p-PDF&URL",)), Case("b", ("PDF&URL", "read?file")), Case("c", ("read/file",))],
        catalog,
    )
    assert [c.groups for c in resolved.cases] == [((0,),), ((0,), (1,))]
    assert [u.name for u in resolved.unknown] == ["read/file"]


def test_crlf_and_a_byte_order_mark_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    row = json.dumps({"query": "q", "expected": ["read_graph"]})
    path.write_bytes(("\ufeff" + row + "\r\n" + row + "\r\n").encode("utf-8"))
    assert [c.source for c in load_cases(path)] == [f"{path}:1", f"{path}:2"]


def test_an_unknown_expected_name_is_reported_at_its_own_line(tmp_path: Path) -> None:
    """Not at the case's ``- query`` line: at the entry, or at ``expected:`` for a lone name."""
    path = tmp_path / "cases.yaml"
    path.write_text(
        "cases:\n"
        "  - query: latest news\n"
        "    expected:\n"
        "      - brave_news_search\n"
        "      - no_such_tool\n"
        "  - query: my graph\n"
        "    expected: [read_graph, also_missing]\n"
        "  - query: alone\n"
        "\n"
        "    expected: gone\n"
    )
    resolved = resolve_cases(load_cases(path), CATALOG)
    assert resolved.warnings() == [
        f"{path}:5: unknown expected tool 'no_such_tool'",
        f"{path}:7: unknown expected tool 'also_missing'",
        f"{path}:10: unknown expected tool 'gone'",
        f"2 of 3 cases kept; 1 dropped: none of their expected tools is in the catalog ({path}:8)",
    ]


def test_an_unknown_expected_tool_of_the_agents_test_cases_has_its_line(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
        "test_cases:\n"
        "  - name: one\n    input: latest news\n    expected_tools:\n"
        "      - news\n      - zzz_missing\n"
    )
    resolved = resolve_cases(cases_from_agent(load_agent(agent)), CATALOG)
    assert resolved.warnings()[0] == f"{agent}:12: unknown expected tool 'zzz_missing'"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "cases.yaml",
            "cases:\n  - qeury: find papers\n    expected: [a]\n",
            ":2: query: must be a non-empty string (is 'qeury' it, misspelled?)",
        ),
        (
            "cases.yaml",
            "cases:\n  - query: find papers\n    expectd: [a]\n",
            ":2: expected: required key is missing (is 'expectd' it, misspelled?)",
        ),
        (
            "cases.jsonl",
            '{"query": "find papers", "expeced": ["a"]}\n',
            ":1: expected: required key is missing (is 'expeced' it, misspelled?)",
        ),
    ],
)
def test_a_misspelled_key_in_a_case_is_named(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CasesError) as caught:
        load_cases(path)
    assert str(caught.value) == f"{path}{message}"


def test_a_missing_key_with_nothing_like_it_says_no_more(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n  - query: find papers\n    category: x\n")
    with pytest.raises(CasesError) as caught:
        load_cases(path)
    assert "misspelled" not in str(caught.value)


def test_a_misspelled_name_gets_the_closest_catalog_name() -> None:
    cases = [
        Case("q1", ("brave_nws_search",), source="c.jsonl:1"),  # bare
        Case("q2", ("memory-read_grph", "search_nodes"), source="c.jsonl:2"),  # full
        Case("q3", ("zzzzzz",), source="c.jsonl:3"),  # nothing close
    ]
    resolved = resolve_cases(cases, CATALOG)
    assert resolved.warnings() == [
        "c.jsonl:1: unknown expected tool 'brave_nws_search' (did you mean 'brave_news_search'?)",
        "c.jsonl:2: unknown expected tool 'memory-read_grph' (did you mean 'memory-read_graph'?)",
        "c.jsonl:3: unknown expected tool 'zzzzzz'",
        "1 of 3 cases kept; 2 dropped: none of their expected tools is in the catalog "
        "(c.jsonl:1, c.jsonl:3)",
    ]


def test_the_count_is_said_when_no_case_is_dropped() -> None:
    resolved = resolve_cases([Case("q", ("read_graph", "read_grap"), source="c:1")], CATALOG)
    assert resolved.warnings()[-1] == (
        "1 of 1 cases kept; the unknown names are left out of their cases' recall"
    )
    assert resolve_cases([Case("q", ("read_graph",))], CATALOG).warnings() == []


NAMES = [t.full_name for t in CATALOG.tools] + [t.name for t in CATALOG.tools]


@st.composite
def expected_name(draw: st.DrawFn) -> tuple[str, bool]:
    """A name a user writes: one of the catalog's (full or bare), the same with one letter
    dropped (a typo), or something else; and whether it should resolve."""
    name = draw(st.sampled_from(NAMES))
    kind = draw(st.sampled_from(["exact", "typo", "other"]))
    if kind == "exact":
        return name, True
    if kind == "typo":
        at = draw(st.integers(0, len(name) - 1))
        return name[:at] + name[at + 1 :], False
    return draw(st.text(alphabet="qxzjk_", min_size=1, max_size=12)), False


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(expected_name(), min_size=1, max_size=3), min_size=1, max_size=8))
def test_a_cases_file_counts_what_it_keeps_and_drops(
    tmp_path: Path, rows: list[list[tuple[str, bool]]]
) -> None:
    """Any cases file of right, misspelled and made-up names: every case is kept or dropped
    (kept: one of its names resolves), every unknown name is reported with a catalog name or
    none, a one-letter typo of a long name gets a suggestion, and the count line adds up."""
    path = tmp_path / "cases.jsonl"
    lines = [
        json.dumps({"query": f"q{i}", "expected": [name for name, _ in row]})
        for i, row in enumerate(rows)
    ]
    path.write_text("\n".join(lines) + "\n")
    resolved = resolve_cases(load_cases(path), CATALOG)
    assert len(resolved) + len(resolved.skipped) == len(rows)
    keeps = [any(resolve_cases([Case("q", (n,))], CATALOG).cases for n, _ in row) for row in rows]
    assert len(resolved) == sum(keeps)
    assert [c.query for c in resolved.skipped] == [f"q{i}" for i, k in enumerate(keeps) if not k]
    for row in rows:
        for name, exact in row:
            assert not exact or resolve_cases([Case("q", (name,))], CATALOG).cases
    for unknown in resolved.unknown:
        assert unknown.suggestion is None or unknown.suggestion in NAMES
    for row in rows:
        for name, _ in row:
            typo_of = [n for n in NAMES if len(n) >= 10 and _one_letter_dropped(n, name)]
            found = [u for u in resolved.unknown if u.name == name]
            if typo_of and found:
                assert found[0].suggestion is not None
    warnings = resolved.warnings()
    if resolved.unknown or resolved.skipped:
        assert warnings[-1].startswith(f"{len(resolved)} of {len(rows)} cases kept")
        assert len(warnings) == len(resolved.unknown) + 1
    else:
        assert warnings == []


def _one_letter_dropped(name: str, typo: str) -> bool:
    return len(typo) == len(name) - 1 and any(
        name[:i] + name[i + 1 :] == typo for i in range(len(name))
    )
