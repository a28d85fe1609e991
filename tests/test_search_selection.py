"""Selection: HoloDeck's ``filter_tools`` steps on hand-made rankings, and usage files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.cli import main
from workbench.config.filtering import ToolFiltering
from workbench.errors import InputError
from workbench.search.selection import (
    SearchCut,
    match_always_include,
    ranked,
    score_decimals,
    search_cut,
    select,
    threshold_decimals,
    top_n_used,
)
from workbench.search.types import Ranking
from workbench.search.usage import load_usage


def catalog_of(*full_names: str) -> Catalog:
    tools = []
    for full in full_names:
        plugin, name = full.split("-", 1)
        tools.append(Tool(full, plugin, name, f"{name} tool", (), "mcp"))
    plugins = dict.fromkeys(t.plugin for t in tools)
    return Catalog(tools=tools, servers=[ServerStatus(p, "snapshot", "snapshot") for p in plugins])


CATALOG = catalog_of("a-one", "a-two", "b-three", "b-four", "c-five", "c-six")


def ranking_of(scores: list[float]) -> Ranking:
    values = np.array(scores, dtype=np.float64)
    order = np.argsort(-values, kind="stable").astype(np.int64)
    return Ranking("q", "bm25", "bm25", values, order)


#            a-one a-two b-three b-four c-five c-six
SCORES = [0.10, 0.90, 1.00, 0.40, 0.90, 0.20]  # order: 2, 1, 4, 3, 5, 0


def setting(**changes: object) -> ToolFiltering:
    return ToolFiltering(always_include_top_n_used=0, **changes)  # type: ignore[arg-type]


def names(selection_indices: tuple[int, ...]) -> list[str]:
    return [CATALOG.tools[i].full_name for i in selection_indices]


def test_search_fill_in_rank_order_with_threshold() -> None:
    chosen = select(ranking_of(SCORES), setting(top_k=5, similarity_threshold=0.3), CATALOG)
    assert names(chosen.indices) == ["b-three", "a-two", "c-five", "b-four"]
    assert set(chosen.reasons.values()) == {"search"}
    assert chosen.passing == 4


def test_threshold_is_inclusive() -> None:
    chosen = select(ranking_of(SCORES), setting(top_k=3, similarity_threshold=0.9), CATALOG)
    assert names(chosen.indices) == ["b-three", "a-two", "c-five"]


def test_always_include_first_then_search_skips_them() -> None:
    chosen = select(
        ranking_of(SCORES),
        setting(top_k=3, similarity_threshold=0.0, always_include=("five", "a-one")),
        CATALOG,
    )
    assert names(chosen.indices) == ["c-five", "a-one", "b-three"]
    assert [chosen.reasons[i] for i in chosen.indices] == ["always_include"] * 2 + ["search"]


def test_over_fetch_window_is_remaining_plus_included() -> None:
    # top_k 3, one always-included tool ranked 2nd: the runtime fetches 2 + 1 = 3 ranked tools
    # (b-three, a-two, c-five), skips a-two, and takes b-three and c-five.
    chosen = select(
        ranking_of(SCORES),
        setting(top_k=3, similarity_threshold=0.0, always_include=("two",)),
        CATALOG,
    )
    assert names(chosen.indices) == ["a-two", "b-three", "c-five"]


def test_over_fetch_window_covers_the_included_tools() -> None:
    # Always-included tools ranked 1st and 2nd, top_k 4: fetch 2 + 2 = 4 ranked tools:
    # b-three, a-two (both in), c-five, b-four -> 4 tools.  With top_k 3: fetch 1 + 2 = 3:
    # b-three, a-two, c-five -> c-five only.
    base = setting(similarity_threshold=0.0, always_include=("three", "two"))
    four = select(ranking_of(SCORES), base.with_(top_k=4), CATALOG)
    assert names(four.indices) == ["b-three", "a-two", "c-five", "b-four"]
    three = select(ranking_of(SCORES), base.with_(top_k=3), CATALOG)
    assert names(three.indices) == ["b-three", "a-two", "c-five"]


def test_top_k_below_the_included_tools_adds_no_search_but_keeps_them_all() -> None:
    chosen = select(
        ranking_of(SCORES),
        ToolFiltering(top_k=2, always_include=("six",), always_include_top_n_used=3),
        CATALOG,
    )
    assert names(chosen.indices) == ["c-six", "a-one", "a-two", "b-three"]
    assert chosen.reasons[5] == "always_include" and chosen.reasons[0] == "top_n_used"


def test_cold_top_n_used_is_the_first_catalog_tools() -> None:
    chosen = select(ranking_of(SCORES), ToolFiltering(top_k=5, similarity_threshold=0.95), CATALOG)
    assert names(chosen.indices) == ["a-one", "a-two", "b-three"]  # b-three is already in
    assert [chosen.reasons[i] for i in chosen.indices] == ["top_n_used"] * 3


def test_warm_top_n_used_by_count_ties_in_catalog_order() -> None:
    usage = np.array([0, 2, 0, 5, 2, 0], dtype=np.int64)
    assert top_n_used(3, 6, usage) == [3, 1, 4]
    assert top_n_used(2, 6, None) == [0, 1]
    assert top_n_used(10, 3, None) == [0, 1, 2]
    assert top_n_used(0, 6, usage) == []


def test_always_include_matching_is_the_runtimes() -> None:
    catalog = catalog_of("x-a-b", "a-b", "y-b", "z-search_nodes")
    assert match_always_include(catalog, "a-b") == 0  # x-a-b ends with -a-b and comes first
    assert match_always_include(catalog, "b") == 0
    assert match_always_include(catalog, "search_nodes") == 3
    assert match_always_include(catalog, "nodes") is None  # ends with -nodes? no: _nodes
    assert match_always_include(catalog, "z-search_nodes") == 3
    assert match_always_include(catalog, "search") is None


def test_ranked_list_and_limit() -> None:
    ranking = ranking_of(SCORES)
    assert ranked(ranking, CATALOG, 3) == [("b-three", 1.0), ("a-two", 0.9), ("c-five", 0.9)]
    assert len(ranked(ranking, CATALOG)) == 6
    assert ranked(ranking, CATALOG, 0) == []


def test_search_cut_marks_where_the_search_stopped() -> None:
    ranking = ranking_of(SCORES)
    by_top_k = select(ranking, setting(top_k=2, similarity_threshold=0.0), CATALOG)
    assert search_cut(ranking, by_top_k) == SearchCut(top_k=2, threshold=6)
    by_threshold = select(ranking, setting(top_k=5, similarity_threshold=0.5), CATALOG)
    cut = search_cut(ranking, by_threshold)
    assert cut == SearchCut(top_k=None, threshold=3) and cut.threshold == by_threshold.passing
    assert (cut.rule, cut.position) == ("threshold", 3)
    only_the_best = select(ranking, setting(top_k=5, similarity_threshold=1.0), CATALOG)
    assert search_cut(ranking, only_the_best) == SearchCut(top_k=None, threshold=1)


# Ranking order of SCORES: b-three 1.0, a-two 0.9, c-five 0.9, b-four 0.4, c-six 0.2, a-one 0.1
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # threshold cuts first: 3 pass, 5 slots: every passing tool is sent
        ({"top_k": 5, "similarity_threshold": 0.5}, (None, 3)),
        # top_k cuts first: 4 pass, 2 slots: c-five (3rd) is the first passing tool left out
        ({"top_k": 2, "similarity_threshold": 0.3}, (2, 4)),
        # top_k larger than what passes
        ({"top_k": 10, "similarity_threshold": 0.3}, (None, 4)),
        # always_include takes a slot far down: 2 slots left, c-five is left out
        ({"top_k": 3, "similarity_threshold": 0.3, "always_include": ["one"]}, (2, 4)),
        # always_include brings a passing tool the search skips: the search ends at
        # b-three, a-two but top_k stops nothing (c-five is in): only the threshold cuts
        ({"top_k": 4, "similarity_threshold": 0.5, "always_include": ["five"]}, (None, 3)),
        # always_include takes every slot: the search adds nothing, c-five is the first left out
        ({"top_k": 2, "similarity_threshold": 0.3, "always_include": ["three", "two"]}, (2, 4)),
        # ... and with the two ranked last: top_k stops the search before the first tool
        ({"top_k": 2, "similarity_threshold": 0.3, "always_include": ["one", "six"]}, (0, 4)),
        # top_n_used (a cold runtime: a-one, a-two) takes slots: 1 left, for b-three
        ({"top_k": 3, "similarity_threshold": 0.3, "always_include_top_n_used": 2}, (2, 4)),
        # top_n_used brings a-two, which passes: the search takes b-three and c-five around it
        ({"top_k": 4, "similarity_threshold": 0.85, "always_include_top_n_used": 2}, (None, 3)),
    ],
)
def test_search_cut_is_where_the_runtime_stops_and_why(
    changes: dict[str, object], expected: tuple[int | None, int]
) -> None:
    ranking = ranking_of(SCORES)
    chosen = select(ranking, setting().with_(**changes), CATALOG)
    cut = search_cut(ranking, chosen)
    assert (cut.top_k, cut.threshold) == expected
    assert cut.rule == ("threshold" if expected[0] is None else "top_k")
    # The runtime's facts behind the line: every passing tool above the top_k line is sent,
    # the tool right under it passes and is not; with no top_k line every passing tool is sent.
    passing = [int(i) for i in ranking.order[: cut.threshold]]
    if cut.top_k is None:
        assert all(i in chosen for i in passing)
    else:
        assert all(i in chosen for i in passing[: cut.top_k])
        assert passing[cut.top_k] not in chosen


def test_search_cut_when_nothing_passes() -> None:
    ranking = ranking_of([0.1, 0.2, 0.3, 0.2, 0.1, 0.05])
    for changes in ({}, {"always_include": ["one"]}, {"top_k": 1, "always_include": ["three"]}):
        chosen = select(ranking, setting(similarity_threshold=0.9, **changes), CATALOG)
        assert search_cut(ranking, chosen) == SearchCut(top_k=None, threshold=0)


def test_threshold_decimals_draw_the_threshold_as_it_is() -> None:
    assert threshold_decimals(0.3) == 2
    assert threshold_decimals(0.5) == 2
    assert threshold_decimals(0.375) == 3
    assert threshold_decimals(0.1 + 0.2) == 2  # 0.30000000000000004: float noise is not drawn
    assert threshold_decimals(0.3, minimum=0) == 1


@pytest.mark.parametrize(
    ("scores", "threshold", "minimum", "digits"),
    [
        ([1.0, 0.4978, 0.2], 0.5, 2, 3),  # 0.4978 is 0.50 with 2: under the line, shown as it
        ([1.0, 0.4978, 0.2], 0.5, 3, 3),  # 0.498 < 0.5
        ([0.49996, 0.6], 0.5, 3, 5),  # 0.500 and 0.5000 would look like the threshold
        ([0.5, 0.50001], 0.5, 3, 3),  # at or over it never rounds under it
        ([0.3749, 0.38], 0.375, 3, 4),  # the threshold's own 3 decimals are not enough
        ([0.4978], 0.5, 4, 4),
        ([], 0.5, 3, 3),
    ],
)
def test_score_decimals_never_round_a_score_across_the_threshold(
    scores: list[float], threshold: float, minimum: int, digits: int
) -> None:
    assert score_decimals(scores, threshold, minimum) == digits
    for score in scores:
        shown = float(f"{score:.{digits}f}")
        assert (shown >= threshold) == (score >= threshold)


def test_load_usage(tmp_path: Path) -> None:
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"b-four": 3, "a-two": 1}))
    assert load_usage(path, CATALOG).tolist() == [0, 1, 0, 3, 0, 0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"a-seven": 1}', "a-seven: no such tool in the catalog"),
        ('{"a-one": -1}', "a-one: count must be a whole number >= 0"),
        ('{"a-one": 1.5}', "a-one: count must be a whole number >= 0"),
        ("[1, 2]", "expected a JSON object"),
        ('{\n "a-one": 1,\n}', ":3: not JSON"),
    ],
)
def test_load_usage_errors_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "usage.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        load_usage(path, CATALOG)
    assert str(path) in str(err.value) and message in str(err.value)


def test_load_usage_takes_a_bare_name_one_tool_has(tmp_path: Path) -> None:
    """As cases files name tools: ``four`` is ``b-four``; a name two servers share is refused."""
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"four": 3, "a-two": 1}))
    assert load_usage(path, CATALOG).tolist() == [0, 1, 0, 3, 0, 0]
    path.write_text(json.dumps({"one": 2}))
    catalog = catalog_of("a-one", "b-one", "b-two")
    with pytest.raises(InputError, match=r"one: names 2 tools \(a-one, b-one\): give the full"):
        load_usage(path, catalog)


def test_load_usage_refuses_two_names_for_one_tool_and_skips_unknown_ones_when_partial(
    tmp_path: Path,
) -> None:
    path = tmp_path / "usage.json"
    path.write_text(json.dumps({"b-four": 5, "four": 2}))
    with pytest.raises(InputError, match=r"four: names the same tool as 'b-four'"):
        load_usage(path, CATALOG)
    # While servers are still listing (or one failed), a name the catalog lacks waits.
    path.write_text(json.dumps({"b-four": 5, "z-later": 2}))
    assert load_usage(path, CATALOG, partial=True).tolist() == [0, 0, 0, 5, 0, 0]
    with pytest.raises(InputError, match=r"z-later: no such tool"):
        load_usage(path, CATALOG)


def test_tune_reads_the_usage_file_even_without_what_ifs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, --no-what-if left the file unread: a broken one passed with exit 0."""
    samples = Path(__file__).resolve().parents[1] / "sample_configs"
    usage = tmp_path / "usage.json"
    usage.write_text(json.dumps({"memory-read_graph": -5}))
    base = ["tune", str(samples / "research-agent.yaml"), "--no-what-if", "--embedder", "none"]
    base += ["--catalog", str(samples / "research-agent.catalog.json")]
    assert main([*base, "--usage", str(usage)]) == 2
    assert "count must be a whole number >= 0" in capsys.readouterr().err
    usage.write_text(json.dumps({"memory-read_graph": 5}))
    assert main([*base, "--usage", str(usage)]) == 0
    assert "--usage feeds the warm-runtime what-if" in capsys.readouterr().err


def test_load_usage_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"absent\.json: no such file"):
        load_usage(tmp_path / "absent.json", CATALOG)
