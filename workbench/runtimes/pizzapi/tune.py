"""PizzaPi's tool search, tuned: ``maxResults``, ``tokenThreshold`` and per-server
``deferLoading`` chosen from the cases against a budget, k-fold held-out.

Everything is measured with the strategy lab's ``pizzapi`` engine
(:mod:`workbench.search.strategies.pizzapi`, PizzaPi's ``tool-search.ts`` reproduced), billed
per task in tool tokens: the first request carries the tools not deferred, ``search_tools`` and
its prompt text; a task whose expected tools are all among them ends there, else the model
searches and a second request carries those tools, the tools the search loaded and the text
``search_tools`` returned (the engine's own bill of the request after the search).

What decides a request is which MCP servers are deferred: PizzaPi defers every server once the
MCP tools' characters exceed ``tokenThreshold``, but a server's ``deferLoading`` forces it either
way. The tuner grows the set of servers kept loaded greedily (:func:`greedy_path`: the server
that saves the most tokens per task, else the most recall per token added, within the cap;
only a server enough training cases expect: :class:`~workbench.evaluate.tuner.Recurrence`),
with the steps taken at PizzaPi's default ``maxResults``; every setting on the path is then
measured at ``maxResults`` 1 to 10 and the budget picks one (:func:`~workbench.evaluate.
deferred_tune.pick`: the fewest tokens reaching ``--min-hit``, else the knee within
``--max-tokens``); with ``--max-tokens`` a point's tokens are those of the costliest third of
the cases (an inner 3-fold), so the budget holds on new cases, not only on the average of the
cases the choice was made on. A chosen set is written with
the fewest ``deferLoading`` overrides: a threshold the catalog exceeds plus ``false`` on the
servers kept loaded, or one it does not exceed plus ``true`` on the deferred ones (ties: the
threshold nearest PizzaPi's 10,000). ``keepLoadedTools`` stays PizzaPi's default (true): a
case is one message, and it only matters from a session's second turn. The rule is measured
k-fold held-out (each fold's setting chosen on the other folds, as every tuner folds:
:func:`~workbench.evaluate.folds.cross_fit`) and the proposal is chosen on every case.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from workbench.catalog.models import Catalog
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.compare import case_result
from workbench.evaluate.deferred_tune import INNER_FOLDS, covered, pick
from workbench.evaluate.folds import Fold, folds_of
from workbench.evaluate.generalise import Rule, SetReport, generalising, held_out_rule
from workbench.evaluate.metrics import CaseResult, Metrics, aggregate
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import AT_LEAST_MIN, Recurrence
from workbench.search.strategies.base import TokenBill, request_tokens
from workbench.search.strategies.pizzapi import GRID_MAX_RESULTS, PizzaPiParams, PizzaPiStrategy

#: PizzaPi's defaults (``toolSearch`` with nothing set but ``enabled``).
DEFAULT = PizzaPiParams()
#: The thresholds a setting may be written with (plus the catalog's total, rounded up).
THRESHOLDS: tuple[int, ...] = (0, 2_500, 5_000, 10_000, 20_000, 50_000)
#: The ``maxResults`` the greedy's steps are taken at (PizzaPi's default).
STEP_RESULTS = DEFAULT.max_results


@dataclass(frozen=True)
class PizzaSetting:
    """One ``toolSearch`` setting with the ``deferLoading`` overrides of the agent's servers."""

    max_results: int = DEFAULT.max_results
    token_threshold: int = DEFAULT.token_threshold
    keep_loaded_tools: bool = DEFAULT.keep_loaded_tools
    defer_loading: tuple[tuple[str, bool], ...] = ()

    @property
    def params(self) -> PizzaPiParams:
        return PizzaPiParams(
            token_threshold=self.token_threshold,
            max_results=self.max_results,
            keep_loaded_tools=self.keep_loaded_tools,
            defer_loading=dict(self.defer_loading),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "maxResults": self.max_results,
            "tokenThreshold": self.token_threshold,
            "keepLoadedTools": self.keep_loaded_tools,
            "deferLoading": dict(self.defer_loading),
        }


def mcp_servers(catalog: Catalog) -> list[str]:
    """The catalog's MCP servers, in catalog order (what ``deferLoading`` is set on)."""
    return list(dict.fromkeys(t.plugin for t in catalog.tools if t.kind == "mcp"))


def expressed(
    loaded: frozenset[str], max_results: int, servers: Sequence[str], total: int
) -> PizzaSetting:
    """The setting that keeps ``loaded`` servers' tools loaded and defers the others' (``total``:
    the MCP tools' characters), with the fewest ``deferLoading`` overrides."""
    rounded = max(1_000, math.ceil(total / 1_000) * 1_000)
    best: tuple[tuple[int, int], PizzaSetting] | None = None
    for threshold in sorted({*THRESHOLDS, rounded}):
        if total > threshold:
            overrides = tuple((s, False) for s in servers if s in loaded)
        else:
            overrides = tuple((s, True) for s in servers if s not in loaded)
        key = (len(overrides), abs(threshold - DEFAULT.token_threshold))
        if best is None or key < best[0]:
            best = (key, PizzaSetting(max_results, threshold, defer_loading=overrides))
    assert best is not None
    return best[1]


def loaded_servers(engine: PizzaPiStrategy, catalog: Catalog) -> list[str]:
    """The MCP servers the engine's setting keeps loaded (never deferred), catalog order."""
    deferred = {catalog.tools[i].plugin for i in engine.initially_deferred}
    return [s for s in mcp_servers(catalog) if s not in deferred]


# ------------------------------------------------------------------------------- the figures


def run_cases(
    engine: PizzaPiStrategy,
    bill: TokenBill,
    items: Sequence[ResolvedCase],
    queries: SearchQueries,
    limits: Sequence[int],
    scores: Sequence[Any] | None = None,
) -> list[list[CaseResult]]:
    """Each case through ``engine`` at each ``maxResults`` of ``limits`` (``out[limit][case]``),
    billed per task (module doc). ``scores``: each case's query scores, when already made."""
    loaded = np.ones(engine.size, dtype=np.bool_)
    loaded[list(engine.initially_deferred)] = False
    sent = tuple(np.flatnonzero(loaded).tolist())
    first = request_tokens(bill, sent, engine.meta_tokens)
    out: list[list[CaseResult]] = [[] for _ in limits]
    for c, case in enumerate(items):
        if covered(case, loaded):  # its tools are loaded: no search, one request
            done = CaseResult(case, sent, (True,) * len(case.groups), True, 1, first)
            for row in out:
                row.append(done)
            continue
        query = queries.query(case.query, "bm25")
        every = None if scores is None else scores[c]
        order, ranked = engine.search(query, engine.initially_deferred, every)
        for row, limit in zip(out, limits, strict=True):
            result = case_result(case, engine.first_turn(query, order, ranked, limit))
            row.append(dataclasses.replace(result, tokens=first + result.tokens))
    return out


def measure(
    setting: PizzaSetting,
    catalog: Catalog,
    bill: TokenBill,
    items: Sequence[ResolvedCase],
    queries: SearchQueries = MESSAGE,
    scores: Sequence[Any] | None = None,
) -> list[CaseResult]:
    """Each case at ``setting``, through the engine built with it (``scores``: each case's
    query scores, when already made: :meth:`Sets.scores`)."""
    engine = PizzaPiStrategy(catalog, bill, setting.params)
    return run_cases(engine, bill, items, queries, [setting.max_results], scores)[0]


@dataclass(frozen=True)
class Point:
    """A setting with its mean figures over some cases."""

    setting: PizzaSetting
    hit: float
    recall: float
    tokens: float


class Sets:
    """Every case's figures for a set of servers kept loaded, at every ``maxResults``, made
    once per set (the folds share them)."""

    def __init__(
        self, catalog: Catalog, bill: TokenBill, cases: CaseSet, queries: SearchQueries
    ) -> None:
        self.catalog, self.bill, self.items, self.queries = catalog, bill, cases.cases, queries
        self.servers = mcp_servers(catalog)
        self._base = PizzaPiStrategy(catalog, bill)
        self.total = self._base.total_chars
        self._scores: list[Any] | None = None
        self._made: dict[tuple[frozenset[str], int], list[CaseResult]] = {}

    def scores(self) -> list[Any]:
        """Each case's query scores: the same at every setting, so made once (on a large
        catalog they are most of a measurement's time)."""
        if self._scores is None:
            self._scores = [
                self._base.query_scores(self.queries.query(c.query, "bm25")) for c in self.items
            ]
        return self._scores

    def results(self, loaded: frozenset[str], limits: Sequence[int]) -> dict[int, list[CaseResult]]:
        missing = [k for k in limits if (loaded, k) not in self._made]
        if missing:
            setting = expressed(loaded, missing[0], self.servers, self.total)
            engine = self._base.with_params(setting.params)
            rows = run_cases(engine, self.bill, self.items, self.queries, missing, self.scores())
            for k, row in zip(missing, rows, strict=True):
                self._made[(loaded, k)] = row
        return {k: self._made[(loaded, k)] for k in limits}

    def point(self, loaded: frozenset[str], k: int, case_ids: Sequence[int]) -> Point:
        row = self.results(loaded, [k])[k]
        picked = [row[c] for c in case_ids]
        n = max(len(picked), 1)
        return Point(
            expressed(loaded, k, self.servers, self.total),
            sum(r.hit for r in picked) / n,
            sum(r.recall for r in picked) / n,
            sum(r.tokens for r in picked) / n,
        )


#: The most servers the greedy tries to keep loaded (the most recurring ones).
MAX_CANDIDATES = 6


def greedy_path(
    sets: Sets, case_ids: Sequence[int], cap: float, recurrence: Recurrence = AT_LEAST_MIN
) -> list[frozenset[str]]:
    """Sets of servers kept loaded, from none upwards (module doc), at ``STEP_RESULTS``; only
    servers as many of ``case_ids`` expect as ``recurrence`` asks are tried."""
    expecting: dict[str, set[int]] = {}
    for c in case_ids:
        for group in sets.items[c].groups:
            for i in group:
                expecting.setdefault(sets.catalog.tools[i].plugin, set()).add(c)
    # a server only the training cases' one-offs need is not kept loaded (it would not recur)
    need = recurrence.need(len(case_ids))
    recurring = [s for s in sets.servers if len(expecting.get(s, ())) >= need]
    # the most recurring first, at most MAX_CANDIDATES: each trial runs every case through the
    # engine, and a server few cases need rarely pays for its tokens on every request
    recurring.sort(key=lambda s: -len(expecting[s]))
    candidates = recurring[:MAX_CANDIDATES]
    loaded: frozenset[str] = frozenset()
    path = [loaded]
    now = sets.point(loaded, STEP_RESULTS, case_ids)
    while True:
        best: tuple[tuple[int, float, float], frozenset[str], Point] | None = None
        for server in candidates:
            if server in loaded:
                continue
            trial = loaded | {server}
            after = sets.point(trial, STEP_RESULTS, case_ids)
            cost, gain = after.tokens - now.tokens, after.recall - now.recall
            if (cost > 1e-9 and after.tokens > cap + 1e-9) or (gain <= 1e-12 and cost >= -1e-9):
                continue  # past the cap, or neither more recall nor fewer tokens
            score = (1, gain, -cost) if cost <= 1e-9 else (0, gain / max(cost, 1.0), 0.0)
            if best is None or score > best[0]:
                best = (score, trial, after)
        if best is None:
            return path
        loaded, now = best[1], best[2]
        path.append(loaded)


def choose(
    sets: Sets,
    case_ids: Sequence[int],
    budget: Budget,
    tokens_all: int,
    recurrence: Recurrence = AT_LEAST_MIN,
) -> PizzaSetting:
    """The setting the budget asks for on ``case_ids``: every set on the greedy path at every
    ``maxResults``, picked by the budget's rule on their figures; with ``--max-tokens`` a
    point's tokens are the most any third of the cases costs on average (:func:`costliest`): a
    server kept loaded costs every request and whether a case searches varies from one set of
    cases to the next, so a choice just within the budget on its cases is often above it on new
    ones."""
    cap = float(budget.max_tokens) if budget.max_tokens is not None else float(tokens_all)
    grid = [
        (loaded, k)
        for loaded in greedy_path(sets, case_ids, cap, recurrence)
        for k in GRID_MAX_RESULTS
    ]
    points = [sets.point(loaded, k, case_ids) for loaded, k in grid]
    if budget.max_tokens is None:
        return points[pick(points, budget, tokens_all)].setting
    held = [
        dataclasses.replace(point, tokens=costliest(sets, loaded, k, case_ids))
        for point, (loaded, k) in zip(points, grid, strict=True)
    ]
    return points[pick(held, budget, tokens_all)].setting


def costliest(sets: Sets, loaded: frozenset[str], k: int, case_ids: Sequence[int]) -> float:
    """The most tokens per task ``loaded`` kept loaded at ``maxResults`` ``k`` costs on average
    over ``case_ids`` or any of their :data:`~workbench.evaluate.deferred_tune.INNER_FOLDS`
    folds (all of them below twice as many cases)."""
    every = sets.point(loaded, k, case_ids).tokens
    if len(case_ids) < 2 * INNER_FOLDS:
        return every
    parts = [[case_ids[j] for j in fold.test] for fold in folds_of(len(case_ids), INNER_FOLDS)]
    return max(every, *(sets.point(loaded, k, part).tokens for part in parts))


# ---------------------------------------------------------------------------------- the tuner


@dataclass(frozen=True, kw_only=True)
class PizzaReport(SetReport[PizzaSetting, Metrics]):
    """PizzaPi's tuner's report (:class:`~workbench.evaluate.generalise.SetReport`; ``default``
    and ``current`` are PizzaPi's defaults: tool search enabled, nothing else set): the MCP
    tools' characters (what ``tokenThreshold`` is compared with) and the servers kept loaded."""

    total_chars: int
    loaded: tuple[str, ...]


def tune_pizzapi(
    catalog: Catalog,
    bill: TokenBill,
    cases: CaseSet,
    budget: Budget,
    *,
    tokens_all: int,
    folds: int = 5,
    queries: SearchQueries = MESSAGE,
    cache: dict[Any, Any] | None = None,
) -> PizzaReport:
    """Choose on every case; measure the rule k-fold held-out (each fold chosen on the others).
    ``cache``: the figures kept between calls on the same cases (other budgets)."""
    items = cases.cases
    memo: dict[Any, Any] = {} if cache is None else cache
    if "pizzapi-sets" not in memo:
        memo["pizzapi-sets"] = Sets(catalog, bill, cases, queries)
    sets = cast("Sets", memo["pizzapi-sets"])

    def measured(setting: PizzaSetting, fold: Fold | None) -> list[CaseResult]:
        key = ("pizzapi-measure", setting, folds, None if fold is None else fold.index)
        if key not in memo:
            ids = range(len(items)) if fold is None else fold.test
            scores = sets.scores()
            on, made = [items[c] for c in ids], [scores[c] for c in ids]
            memo[key] = measure(setting, catalog, bill, on, queries, made)
        return cast("list[CaseResult]", memo[key])

    def at(recurrence: Recurrence, cap: float | None) -> Rule[PizzaSetting]:
        within = budget.capped(cap)
        return held_out_rule(
            lambda ids: choose(sets, ids, within, tokens_all, recurrence),
            measured,
            len(items),
            folds,
            tokens_all,
        )

    at_cost = None if budget.explicit else Rule.cost  # no budget: compared at equal cost
    rule, bars = generalising(at, Rule.figures, at_cost, len(items), folds)
    chosen, insample = rule.setting, rule.insample
    default = aggregate(measured(PizzaSetting(), None), tokens_all)
    within = budget.met_by(insample.tokens_selected_mean, insample.hit)
    return PizzaReport(
        setting=chosen,
        budget=budget,
        heldout=rule.heldout,
        insample=insample,
        default=default,
        folds=folds,
        within_budget=within,
        total_chars=sets.total,
        loaded=tuple(loaded_servers(PizzaPiStrategy(catalog, bill, chosen.params), catalog)),
        fold_settings=rule.fold_settings,
        heldout_cases=rule.pooled,
        queries=queries,
        bars=bars,
        current=PizzaSetting(),
        current_cases=tuple(measured(PizzaSetting(), None)),
    )
