"""The deferred tuner's greedy (:func:`workbench.evaluate.deferred_tune.greedy_path`) against an
oracle: the plain greedy, which re-scores every unit against every case it touches at every
step. The tuner re-scores only the units a step can have changed; the two must walk exactly the
same path (same loaded sets, same figures to the last bit) on the data sets and on random small
catalogs, for every kind of search (a loaded tool skipped, or still taking a result's place) and
every kind of unit (single tools, whole servers)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.catalog.enumerate import load_catalog
from workbench.config import load_agent
from workbench.evaluate.cases import Case, ResolvedCase, load_cases, resolve_cases
from workbench.evaluate.deferred_tune import (
    USAGE_WEIGHT,
    DeferredSetting,
    PathPoint,
    _better,
    _Proxy,
    greedy_path,
    recurs,
)
from workbench.evaluate.tuner import AT_LEAST_MIN, Recurrence
from workbench.runtimes import get_runtime
from workbench.tokens import token_table

DATA = Path(__file__).resolve().parent / "data"

Mask = np.ndarray[Any, np.dtype[np.bool_]]


# ------------------------------------------------------------------------------------ the oracle


def _covered(case: ResolvedCase, loaded: Mask) -> bool:
    return all(any(loaded[i] for i in group) for group in case.groups)


def _state(
    proxy: _Proxy, case: ResolvedCase, order: Any, loaded: Mask, k: int
) -> tuple[list[int], float, float, bool]:
    if _covered(case, loaded):
        return [], 1.0, 0.0, False
    if proxy.holds_loaded:
        found = [i for i in order[:k].tolist() if not loaded[i]]
    else:
        found = []
        for i in order.tolist():
            if not loaded[i]:
                found.append(i)
                if len(found) == k:
                    break
    there = set(found)
    sent = [any(loaded[i] or i in there for i in g) for g in case.groups]
    costs = proxy.per_tool if proxy.found_tokens is None else proxy.found_tokens
    return found, sum(sent) / len(sent), float(costs[found].sum()), True


def oracle_path(
    proxy: _Proxy,
    items: Sequence[ResolvedCase],
    case_ids: Sequence[int],
    units_: Sequence[tuple[int, ...]],
    variant: str,
    k: int,
    cap: float,
    usage: Any = None,
    extra: int = 0,
    recurrence: Recurrence = AT_LEAST_MIN,
) -> list[PathPoint]:
    """Every step scores every recurring unit not yet loaded on every case it touches."""
    size = proxy.per_tool.shape[0]
    loaded = np.zeros(size, dtype=np.bool_)
    cases = [items[c] for c in case_ids]
    orders = [proxy.orders[c] for c in case_ids]
    n = max(len(cases), 1)
    state = [_state(proxy, c, o, loaded, k) for c, o in zip(cases, orders, strict=True)]
    found = [s[0] for s in state]
    recall = [s[1] for s in state]
    ftok = [s[2] for s in state]
    searches = [s[3] for s in state]
    weight = np.zeros(size)
    if usage is not None and usage.sum() > 0:
        weight = USAGE_WEIGHT * usage / usage.sum()
    expects: dict[int, set[int]] = {}
    for c, case in enumerate(cases):
        for group in case.groups:
            for i in group:
                expects.setdefault(i, set()).add(c)
    need = recurrence.need(len(cases))
    hot = [u for u in units_ if recurs(u, expects, weight, need)]
    base = proxy.fixed + extra
    loaded_tok = 0.0

    def task_tokens(loaded_tok: float, searched: float, found_tok: float) -> float:
        return (base + loaded_tok) * (1.0 + searched / n) + found_tok / n

    def point() -> PathPoint:
        setting = DeferredSetting(variant, k, tuple(np.flatnonzero(loaded).tolist()))
        mean_tok = task_tokens(loaded_tok, sum(searches), sum(ftok))
        return PathPoint(setting, sum(r > 0 for r in recall) / n, sum(recall) / n, mean_tok)

    path = [point()]
    while True:
        shown: dict[int, set[int]] = {}
        for c, f in enumerate(found):
            for i in f:
                shown.setdefault(i, set()).add(c)
        best: Any = None
        now = path[-1].tokens
        for u_index, unit in enumerate(hot):
            if loaded[list(unit)].all():
                continue
            trial = loaded.copy()
            trial[list(unit)] = True
            touched: set[int] = set()
            for i in unit:
                touched |= expects.get(i, set()) | shown.get(i, set())
            changes = {}
            d_recall = d_tok = d_search = 0.0
            for c in touched:
                change = _state(proxy, cases[c], orders[c], trial, k)
                changes[c] = change
                d_recall += change[1] - recall[c]
                d_tok += change[2] - ftok[c]
                d_search += change[3] - searches[c]
            new = [i for i in unit if not loaded[i]]
            after = task_tokens(
                loaded_tok + float(proxy.per_tool[new].sum()),
                sum(searches) + d_search,
                sum(ftok) + d_tok,
            )
            cost = after - now
            gain = d_recall / n + float(weight[new].sum())
            if (cost > 1e-9 and after > cap + 1e-9) or (gain <= 1e-12 and cost >= -1e-9):
                continue
            score = (1, gain, -cost) if cost <= 1e-9 else (0, gain / max(cost, 1.0), 0.0)
            if best is None or _better(score, best[0]):
                best = (score, u_index, changes)
        if best is None:
            return path
        unit = hot[best[1]]
        loaded_tok += float(proxy.per_tool[[i for i in unit if not loaded[i]]].sum())
        loaded[list(unit)] = True
        weight[list(unit)] = 0.0
        for c, (f, r, t, searched) in best[2].items():
            found[c], recall[c], ftok[c], searches[c] = f, r, t, searched
        path.append(point())


# ------------------------------------------------------------------------------------ the tests


def _data_set(name: str) -> tuple[Any, Any, list[ResolvedCase]]:
    root = DATA / name
    agent = load_agent(root / "agent.yaml")
    catalog = load_catalog(agent, catalog_file=root / "catalog.json")
    cases = resolve_cases(load_cases(root / "cases.jsonl"), catalog)
    return catalog, token_table(catalog, "anthropic", "claude-sonnet-4-5"), list(cases.cases)


@pytest.mark.parametrize("runtime", ["anthropic", "claude-code", "fastmcp", "serve"])
def test_the_greedy_walks_the_oracles_path_on_a_data_set(runtime: str) -> None:
    catalog, bill, items = _data_set("livemcpbench_slice")
    variant = "bm25"
    proxy = _Proxy.build(catalog, bill, items, variant, runtime=get_runtime(runtime))
    units_ = get_runtime(runtime).units(catalog)
    every = list(range(len(items)))
    train = every[: len(every) * 4 // 5]
    usage = np.zeros(len(catalog), dtype=np.int64)
    usage[::7] = 3
    tokens_all = float(bill.all)
    for case_ids, k, cap, use, bar in [
        (every, 5, tokens_all, None, AT_LEAST_MIN),
        (train, 3, 6000.0, None, Recurrence.of(len(train), 5, per_training=3)),
        (train, 10, tokens_all, usage, AT_LEAST_MIN),
        (every, 1, 2500.0, None, AT_LEAST_MIN),
    ]:
        args = (proxy, items, case_ids, units_, variant, k, cap, use, 17, bar)
        got, want = greedy_path(*args), oracle_path(*args)
        assert len(want) > 2  # the path grows: the comparison is not of two empty walks
        assert got == want


@st.composite
def _instances(draw: st.DrawFn) -> dict[str, Any]:
    n_tools = draw(st.integers(4, 14))
    n_cases = draw(st.integers(2, 12))
    tool = st.integers(0, n_tools - 1)
    group = st.lists(tool, min_size=1, max_size=2, unique=True)
    cases = draw(
        st.lists(st.lists(group, min_size=1, max_size=3), min_size=n_cases, max_size=n_cases)
    )
    perms = st.permutations(list(range(n_tools)))
    orders = [np.array(draw(perms)[: draw(st.integers(1, n_tools))]) for _ in cases]
    per_tool = draw(st.lists(st.integers(1, 400), min_size=n_tools, max_size=n_tools))
    servers = draw(st.integers(1, n_tools))
    return {
        "cases": cases,
        "orders": orders,
        "per_tool": np.array(per_tool, dtype=np.float64),
        "found": draw(st.booleans()),
        "holds": draw(st.booleans()),
        "server_of": [i % servers for i in range(n_tools)],
        "whole": draw(st.booleans()),
        "k": draw(st.integers(1, 4)),
        "cap": draw(st.sampled_from([300.0, 900.0, 1e9])),
        "share": draw(st.sampled_from([0.0, 0.2, 0.4])),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_instances())
def test_the_greedy_walks_the_oracles_path_on_random_catalogs(inst: dict[str, Any]) -> None:
    items = [
        ResolvedCase(Case(f"q{c}", ("x",) * len(g)), ("x",) * len(g), tuple(tuple(x) for x in g))
        for c, g in enumerate(inst["cases"])
    ]
    per_tool = inst["per_tool"]
    found = per_tool * 0.5 + 3 if inst["found"] else None
    proxy = _Proxy(list(inst["orders"]), per_tool, 40.0, inst["holds"], found)
    if inst["whole"]:
        by: dict[int, list[int]] = {}
        for i, s in enumerate(inst["server_of"]):
            by.setdefault(s, []).append(i)
        units_ = [tuple(v) for v in by.values()]
    else:
        units_ = [(i,) for i in range(len(per_tool))]
    bar = Recurrence(share=inst["share"])
    args = (proxy, items, list(range(len(items))), units_, "bm25", inst["k"], inst["cap"])
    assert greedy_path(*args, None, 5, bar) == oracle_path(*args, None, 5, bar)


# ------------------------------------------------------------------------- the walks kept per proxy


def test_the_walks_kept_on_a_proxy_are_the_greedy_at_every_cap() -> None:
    """``_Proxy.path`` answers every cap from the walks it keeps (one tree per set of arguments):
    asked for caps up and down in turn, each path is the oracle's at that cap."""
    catalog, bill, items = _data_set("livemcpbench_slice")
    every = list(range(len(items)))
    train = every[: len(every) * 4 // 5]
    tokens_all = float(bill.all)
    caps = [tokens_all, 2500.0, 6000.0, 1200.0, tokens_all, 4000.0, 0.0, 2500.0, 1e9]
    for runtime in ("anthropic", "claude-code"):
        proxy = _Proxy.build(catalog, bill, items, "bm25", runtime=get_runtime(runtime))
        units_ = get_runtime(runtime).units(catalog)
        paths = set()
        for case_ids in (every, train):
            for cap in caps:
                args = (items, case_ids, units_, "bm25", 5, cap)
                got = proxy.path(*args)
                assert got == oracle_path(proxy, *args)
                paths.add(tuple(got))
        assert len(paths) > 4  # the caps cut the walks at different steps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_instances(), st.lists(st.sampled_from([0.0, 150.0, 300.0, 600.0, 900.0, 1e9]), max_size=6))
def test_the_walks_kept_answer_random_caps_as_the_oracle(
    inst: dict[str, Any], caps: list[float]
) -> None:
    items = [
        ResolvedCase(Case(f"q{c}", ("x",) * len(g)), ("x",) * len(g), tuple(tuple(x) for x in g))
        for c, g in enumerate(inst["cases"])
    ]
    per_tool = inst["per_tool"]
    found = per_tool * 0.5 + 3 if inst["found"] else None
    proxy = _Proxy(list(inst["orders"]), per_tool, 40.0, inst["holds"], found)
    units_ = [(i,) for i in range(len(per_tool))]
    for cap in [inst["cap"], *caps]:
        args = (items, list(range(len(items))), units_, "bm25", inst["k"], cap)
        assert proxy.path(*args) == oracle_path(proxy, *args)
