"""The one least-recently-used map (``workbench.search.lru``) the caches share."""

from __future__ import annotations

from workbench.search.lru import LRU


def test_the_least_recently_used_goes_first_and_a_look_is_no_use() -> None:
    kept: LRU[str, int] = LRU(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert "a" in kept  # looking does not make "a" recent
    kept.put("c", 3)
    assert "a" not in kept and kept.get("b") == 2 and kept.get("c") == 3
    assert kept.get("b") == 2  # "b" is now the most recent
    kept.put("d", 4)
    assert "c" not in kept and "b" in kept and "d" in kept


def test_a_weight_budget_keeps_at_least_the_newest() -> None:
    kept: LRU[str, int] = LRU(10, len, 5)
    kept.put("abc", 1)
    kept.put("de", 2)
    assert kept.held == 5
    kept.put("fgh", 3)
    assert "abc" not in kept and "de" in kept and kept.held == 5
    kept.put("longer than the budget", 4)
    assert list(k for k in ("de", "fgh") if k in kept) == [] and kept.held == 22
