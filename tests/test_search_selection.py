"""Selection: HoloDeck's ``filter_tools`` steps on hand-made rankings, and usage files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.config.filtering import ToolFiltering
from workbench.errors import InputError
from workbench.search.selection import match_always_include, ranked, search_cut, select, top_n_used
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
    assert search_cut(ranking, by_top_k) == 2
    by_threshold = select(ranking, setting(top_k=5, similarity_threshold=0.5), CATALOG)
    assert search_cut(ranking, by_threshold) == 3 == by_threshold.passing
    nothing = select(ranking, setting(top_k=5, similarity_threshold=1.0), CATALOG)
    assert search_cut(ranking, nothing) == 1


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


def test_load_usage_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the usage file"):
        load_usage(tmp_path / "absent.json", CATALOG)
