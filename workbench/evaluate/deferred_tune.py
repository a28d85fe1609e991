"""Search-tool runtimes (:mod:`workbench.runtimes.search_tool`): what stays loaded.

Every tool is deferred behind the provider's search tool except a few kept loaded. The knobs
are the loaded set, the search variant (``bm25`` / ``regex``, where the provider has both: only
Anthropic's API) and the results one search returns (3-5, as Anthropic documents; no provider
takes it as a setting, so it is the figures' assumption, reported with them).

The bill is per task (one user message), in tool tokens, search round trip included. Every
request sends the loaded tools and the search tool (+ for OpenAI the name and description of
every namespace, which the model still sees). When the loaded tools cover every tool the case
expects, the model calls them at once: one request. Otherwise it searches first: that request,
then a second one that sends the loaded tools and the search tool again with the tools the
search returned. This is why keeping a task's tools loaded pays beyond their own tokens (the
providers advise keeping the 3-5 most used ones loaded; a search round trip is reported to cost
27-40 % more on a first turn).

The hit estimate is the strategy lab's ``anthropic`` engine
(:class:`~workbench.search.strategies.anthropic.AnthropicStrategy`). What the providers document
is the deferred loading (what is sent, what a search returns, what is billed); none publishes its
search's ranker (Anthropic's tool search, Claude Code's MCP tool search, OpenAI's
``tool_search``), so the engine stands in for each: ``bm25s``'s Lucene BM25 (and for Anthropic
its regex variant) over the tools' names, descriptions and arguments. Every figure is therefore
an approximation of an unpublished ranker, and says so (:data:`ENGINE`, :func:`approximation`).
The query searched is the user's message, or with ``--llm`` the search call a model writes for
it (:mod:`workbench.evaluate.search_queries`).

:func:`tune_deferred` grows the loaded set greedily from the *hot* tools (those the cases expect,
and those ``--usage`` counts): each step loads the unit that saves the most tokens per task (the
round trips it spares cost more than it), else the one with the most recall gained per token
(a tool; for Claude Code a whole server, since ``.mcp.json``'s ``alwaysLoad`` is per server).
The steps are scored with one ranking per case over every tool, the loaded ones skipped (the
engine indexes only deferred tools, so its exact scores move a little with the set); the setting
picked on the path of every variant and result count is then measured with the engine itself.
The rule is measured k-fold held-out, like the other tuners, and the proposal is chosen on every
case.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, cast

import numpy as np

from workbench.catalog.models import Catalog
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.compare import case_result
from workbench.evaluate.compare import choose as knee_choose
from workbench.evaluate.folds import Fold, cross_fit, folds_of
from workbench.evaluate.generalise import Bars, Rule, generalising
from workbench.evaluate.metrics import CaseResult, Metrics, Ranker, aggregate
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import AT_LEAST_MIN, MIN_CASES, Recurrence
from workbench.evaluate.verdict import Verdict, judge
from workbench.runtimes import get_runtime
from workbench.runtimes.search_tool import SearchEngine, SearchToolRuntime
from workbench.search.strategies.anthropic import (
    MAX_RESULTS,
    AnthropicParams,
    AnthropicStrategy,
    Variant,
)
from workbench.search.strategies.base import TokenBill, request_tokens, text_tokens
from workbench.search.types import IntArray

APPROXIMATION = (
    "hit and recall are an approximation: the provider does not publish its search's ranker"
)


def approximation(queries: SearchQueries = MESSAGE) -> str:
    """What the figures stand on, in words (text and ``--json``)."""
    if queries.llm is None:
        return f"{APPROXIMATION}; the user's message is searched (a model writes its own query)"
    return f"{APPROXIMATION}; searched with the query {queries.llm} writes for each case"


#: How far down each case's ranking the greedy looks (loaded tools skipped).
WINDOW = 64
#: The usage file weighs as much as this many cases' recall.
USAGE_WEIGHT = 1.0
Mask = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass(frozen=True)
class DeferredSetting:
    """One configuration of a deferred-loading runtime (``variant``: one of the runtime's
    :attr:`~workbench.runtimes.search_tool.SearchToolRuntime.variants`)."""

    variant: str
    max_results: int
    loaded: tuple[int, ...]

    def params(self, catalog: Catalog) -> AnthropicParams:
        keep = {catalog.tools[i].full_name: False for i in self.loaded}
        variant = cast("Variant", self.variant)
        return AnthropicParams(variant=variant, max_results=self.max_results, tool_defer=keep)

    def names(self, catalog: Catalog) -> list[str]:
        return [catalog.tools[i].full_name for i in self.loaded]

    def to_json(self, catalog: Catalog) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "max_results": self.max_results,
            "loaded": self.names(catalog),
        }


def search_tool(runtime: str) -> SearchToolRuntime:
    """The search-tool runtime called ``runtime`` (what its tuner needs to know of it)."""
    found = get_runtime(runtime)
    if not isinstance(found, SearchToolRuntime):
        raise ValueError(f"{runtime} finds no tools through a search tool")
    return found


def entry_descriptions(agent: Any) -> dict[str, str]:
    """The agent's tool entries' descriptions by entry name (OpenAI shows them per namespace)."""
    return {t.name: t.description or "" for t in getattr(agent, "tools", None) or []}


def units(runtime: str, catalog: Catalog) -> list[tuple[int, ...]]:
    """What can be kept loaded, one unit at a time (the runtime says:
    :meth:`~workbench.runtimes.search_tool.SearchToolRuntime.units`)."""
    return search_tool(runtime).units(catalog)


def extra_tokens(
    runtime: str, catalog: Catalog, bill: TokenBill, described: Mapping[str, str]
) -> int:
    """What a runtime bills besides definitions: where the model sees every namespace (OpenAI),
    each namespace's name and description (``described``: the agent's entry descriptions)."""
    if not search_tool(runtime).bills_namespaces:
        return 0
    servers = dict.fromkeys(t.plugin for t in catalog.tools)
    text = "\n".join(f"{s}: {described.get(s) or s}" for s in servers)
    return text_tokens(bill, text)


# ------------------------------------------------------------------------------ the exact figures


def measure(
    setting: DeferredSetting,
    catalog: Catalog,
    bill: TokenBill,
    items: Sequence[ResolvedCase],
    extra: int = 0,
    queries: SearchQueries = MESSAGE,
    runtime: str | None = None,
    ranker: Ranker | None = None,
) -> list[CaseResult]:
    """Each case through the engine at ``setting``, searched with ``queries``' query for it, billed
    per task (module doc): one request when the loaded tools cover the case, else the search's
    request and the one after it (``extra`` tokens in each). The engine is the one ``runtime``
    names (default: the ``anthropic`` engine); ``ranker``: the workspace's engine, for a runtime
    whose search is holo-tune's own (serve: its embedder)."""
    engine = _engine(runtime, catalog, bill, setting, ranker)
    loaded = np.zeros(len(catalog), dtype=np.bool_)
    loaded[list(setting.loaded)] = True
    first = request_tokens(bill, list(setting.loaded), engine.meta_tokens) + extra
    out = []
    for case in items:
        if covered(case, loaded):  # no search: the loaded tools are the model's, first to hand
            sent = (True,) * len(case.groups)
            out.append(CaseResult(case, setting.loaded, sent, True, 1, first))
            continue
        result = case_result(case, engine.run(queries.query(case.query, setting.variant)))
        out.append(dataclasses.replace(result, tokens=first + result.tokens + extra))
    return out


def _engine(
    runtime: str | None,
    catalog: Catalog,
    bill: TokenBill,
    setting: DeferredSetting,
    ranker: Ranker | None = None,
) -> SearchEngine:
    if runtime is None:
        return AnthropicStrategy(catalog, bill, setting.params(catalog))
    return search_tool(runtime).search_engine(catalog, bill, setting, ranker)


def covered(case: ResolvedCase, loaded: Mask) -> bool:
    """Whether the loaded tools hold a tool of every group the case expects (no search)."""
    return all(any(loaded[i] for i in group) for group in case.groups)


# --------------------------------------------------------------------------------- the greedy


@dataclass(frozen=True)
class PathPoint:
    setting: DeferredSetting
    hit: float
    recall: float
    tokens: float


@dataclass
class _Proxy:
    """One ranking per case over every tool (nothing loaded), for one variant."""

    orders: list[IntArray]
    per_tool: np.ndarray[Any, np.dtype[np.float64]]
    fixed: float  # the search tool, extra and func_end: every request
    #: Whether a loaded tool still takes a result's place (the index holds it too).
    holds_loaded: bool = False
    #: What each tool adds to the request after the search when the search returns it (None:
    #: its definition, ``per_tool``; FastMCP's search returns JSON text).
    found_tokens: np.ndarray[Any, np.dtype[np.float64]] | None = None
    #: ``orders`` and the found tools' tokens as Python lists: the greedy reads them one item at
    #: a time, which a list answers several times faster than an array.
    order_lists: list[list[int]] = field(init=False, repr=False)
    found_costs: list[float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.order_lists = [o.tolist() for o in self.orders]
        costs = self.per_tool if self.found_tokens is None else self.found_tokens
        self.found_costs = costs.tolist()

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        bill: TokenBill,
        items: Sequence[ResolvedCase],
        variant: str,
        queries: SearchQueries = MESSAGE,
        runtime: str | None = None,
        ranker: Ranker | None = None,
    ) -> _Proxy:
        plugin = None if runtime is None else search_tool(runtime)
        results = MAX_RESULTS if plugin is None else plugin.default_results
        setting = DeferredSetting(variant, results, ())
        engine = _engine(runtime, catalog, bill, setting, ranker)
        orders = [engine.ranking(queries.query(c.query, variant))[0][:WINDOW] for c in items]
        per_tool = np.asarray(bill.per_tool, dtype=np.float64)
        holds = plugin is not None and plugin.index_holds_loaded
        found = None if plugin is None else plugin.found_tokens(catalog, bill)
        return cls(orders, per_tool, float(engine.meta_tokens + bill.overhead), holds, found)


#: One case under a loaded set: found tools, recall, found tools' tokens, whether it searches.
_CaseState = tuple[list[int], float, float, bool]
_NOTHING: frozenset[int] = frozenset()


def _case(
    proxy: _Proxy,
    groups: tuple[tuple[int, ...], ...],
    order: list[int],
    loaded: bytearray,
    k: int,
    plus: frozenset[int] = _NOTHING,
) -> _CaseState:
    """One case under a loaded set (``loaded``, and ``plus`` on top of it): what its search
    finds, its recall, the found tools' tokens and whether it needs the search at all (covered
    cases find nothing and cost one request). A search skips the loaded tools, or, where the
    index holds them (``holds_loaded``), they keep their places among its first ``k``."""
    if all(any(loaded[i] or i in plus for i in g) for g in groups):
        return [], 1.0, 0.0, False
    if proxy.holds_loaded:
        found = [i for i in order[:k] if not (loaded[i] or i in plus)]
    else:
        found = []
        for i in order:
            if not (loaded[i] or i in plus):
                found.append(i)
                if len(found) == k:
                    break
    there = set(found)
    sent = [any(loaded[i] or i in plus or i in there for i in g) for g in groups]
    costs = proxy.found_costs  # token counts: whole numbers, so the sum's order cannot matter
    return found, sum(sent) / len(sent), float(sum(costs[i] for i in found)), True


def _better(score: tuple[int, float, float], than: tuple[int, float, float]) -> bool:
    """A greedy step's score beats another's (ties within 1e-12 keep the earlier one)."""
    if score[0] != than[0]:
        return score[0] > than[0]
    if abs(score[1] - than[1]) > 1e-12:
        return score[1] > than[1]
    return score[2] > than[2] + 1e-12


def recurs(
    unit: Sequence[int],
    expects: Mapping[int, set[int]],
    weight: np.ndarray[Any, Any],
    need: int = MIN_CASES,
) -> bool:
    """Whether ``unit`` can recur beyond the training cases: its tools are expected by at least
    ``need`` of them together (a whole server counts its tools' cases), or the usage file counts
    one of them."""
    cases: set[int] = set()
    for i in unit:
        cases |= expects.get(i, set())
    return len(cases) >= need or any(weight[i] > 0 for i in unit)


@dataclass(frozen=True)
class _Trial:
    """What loading one unit on top of the loaded set does: each case it touches as it would
    then be, and the sums the step's score reads."""

    changes: dict[int, _CaseState]
    d_recall: float
    d_tokens: float
    d_searches: float
    #: The unit's tools not yet loaded: their definitions' tokens and usage weight.
    new_tokens: float
    new_weight: float


def greedy_path(
    proxy: _Proxy,
    items: Sequence[ResolvedCase],
    case_ids: Sequence[int],
    units_: Sequence[tuple[int, ...]],
    variant: str,
    k: int,
    cap: float,
    usage: IntArray | None = None,
    extra: int = 0,
    recurrence: Recurrence = AT_LEAST_MIN,
) -> list[PathPoint]:
    """Loaded sets from nothing upwards. Each step loads a unit that saves tokens per task (a
    case the loaded set covers saves its search round trip), the most saving first, else the
    unit with the most recall per token added; a step that adds tokens stops at ``cap``. Only
    units that recur (:func:`recurs`, as many cases as ``recurrence`` asks) are loaded.

    A unit's trial (what loading it does to the cases it touches: those that expect one of its
    tools, those whose search finds one) is kept from step to step and made again only when the
    step touched it: when the loaded unit shares a tool with it, when a case it touches changed,
    or when the loaded unit holds a tool its trial found. Every other trial is the same whether
    made again or not, so the path is the plain greedy's (tests/test_greedy_oracle.py), in a
    fraction of the time on a large catalog."""
    size = proxy.per_tool.shape[0]
    loaded = bytearray(size)
    cases = [items[c] for c in case_ids]
    groups = [c.groups for c in cases]
    orders = [proxy.order_lists[c] for c in case_ids]
    n = max(len(cases), 1)
    state = [_case(proxy, g, o, loaded, k) for g, o in zip(groups, orders, strict=True)]
    found = [s[0] for s in state]
    recall = [s[1] for s in state]
    ftok = [s[2] for s in state]
    searches = [s[3] for s in state]
    weight = np.zeros(size)
    if usage is not None and usage.sum() > 0:
        weight = USAGE_WEIGHT * usage / usage.sum()
    expects: dict[int, set[int]] = {}
    for c, case_groups in enumerate(groups):
        for group in case_groups:
            for i in group:
                expects.setdefault(i, set()).add(c)
    need = recurrence.need(len(cases))
    hot = [u for u in units_ if recurs(u, expects, weight, need)]
    units_of: dict[int, list[int]] = {}  # tool -> the hot units that hold it
    for u_index, unit in enumerate(hot):
        for i in unit:
            units_of.setdefault(i, []).append(u_index)
    trials: dict[int, _Trial] = {}
    #: tool -> the units whose kept trial found it in some case's search.
    found_by: dict[int, set[int]] = {}
    base = proxy.fixed + extra
    loaded_tok = 0.0

    def task_tokens(loaded_tok: float, searched: float, found_tok: float) -> float:
        """Mean tokens per task: every case's first request, the searching cases' second."""
        return (base + loaded_tok) * (1.0 + searched / n) + found_tok / n

    def point() -> PathPoint:
        hits = [r > 0 for r in recall]
        on = tuple(i for i in range(size) if loaded[i])
        mean_tok = task_tokens(loaded_tok, sum(searches), sum(ftok))
        return PathPoint(DeferredSetting(variant, k, on), sum(hits) / n, sum(recall) / n, mean_tok)

    def trial_of(u_index: int, shown: Mapping[int, set[int]]) -> _Trial:
        unit = hot[u_index]
        plus = frozenset(unit)
        touched: set[int] = set()
        for i in unit:
            touched |= expects.get(i, set()) | shown.get(i, set())
        changes: dict[int, _CaseState] = {}
        d_recall = d_tok = d_search = 0.0
        for c in touched:
            change = _case(proxy, groups[c], orders[c], loaded, k, plus)
            changes[c] = change
            d_recall += change[1] - recall[c]
            d_tok += change[2] - ftok[c]
            d_search += change[3] - searches[c]
            for i in change[0]:
                found_by.setdefault(i, set()).add(u_index)
        new = [i for i in unit if not loaded[i]]
        new_tokens = float(proxy.per_tool[new].sum())
        return _Trial(changes, d_recall, d_tok, d_search, new_tokens, float(weight[new].sum()))

    path = [point()]
    while True:
        shown: dict[int, set[int]] = {}
        for c, f in enumerate(found):
            for i in f:
                shown.setdefault(i, set()).add(c)
        best: tuple[tuple[int, float, float], int] | None = None
        now = path[-1].tokens
        searched, found_tok = sum(searches), sum(ftok)
        for u_index, unit in enumerate(hot):
            if all(loaded[i] for i in unit):
                continue
            trial = trials.get(u_index)
            if trial is None:
                trial = trials[u_index] = trial_of(u_index, shown)
            after = task_tokens(
                loaded_tok + trial.new_tokens,
                searched + trial.d_searches,
                found_tok + trial.d_tokens,
            )
            cost = after - now
            gain = trial.d_recall / n + trial.new_weight
            if (cost > 1e-9 and after > cap + 1e-9) or (gain <= 1e-12 and cost >= -1e-9):
                continue  # adds tokens past the cap, or neither more recall nor fewer tokens
            # A unit that saves tokens (the round trips it spares cost more than it) comes first.
            score = (1, gain, -cost) if cost <= 1e-9 else (0, gain / max(cost, 1.0), 0.0)
            if best is None or _better(score, best[0]):
                best = (score, u_index)
        if best is None:
            return path
        chosen = hot[best[1]]
        changes = trials[best[1]].changes
        # The trials this step can have changed (the docstring): made again at the next step.
        stale: set[int] = set()
        for i in chosen:
            stale.update(units_of.get(i, ()))
            stale |= found_by.pop(i, set())
        for c, change in changes.items():
            for i in {*found[c], *change[0], *(i for g in groups[c] for i in g)}:
                stale.update(units_of.get(i, ()))
        for u_index in stale:
            trials.pop(u_index, None)
        loaded_tok += float(proxy.per_tool[[i for i in chosen if not loaded[i]]].sum())
        for i in chosen:
            loaded[i] = 1
        weight[list(chosen)] = 0.0
        for c, (f, r, t, search) in changes.items():
            found[c], recall[c], ftok[c], searches[c] = f, r, t, search
        path.append(point())


class Figures(Protocol):
    """What :func:`pick` reads of a candidate: its mean hit, recall and tokens per task."""

    @property
    def hit(self) -> float: ...
    @property
    def recall(self) -> float: ...
    @property
    def tokens(self) -> float: ...


def pick(points: Sequence[Figures], budget: Budget, tokens_all: int) -> int:
    """The point the budget asks for: the fewest tokens reaching ``min_hit`` (within
    ``max_tokens``), else the tuner's rule (best recall within ``max_tokens``, or the knee)."""
    tokens = np.array([p.tokens for p in points])
    if budget.min_hit is not None:
        ok = [
            i
            for i, p in enumerate(points)
            if p.hit >= budget.min_hit - 1e-12
            and (budget.max_tokens is None or p.tokens <= budget.max_tokens)
        ]
        if ok:
            return min(ok, key=lambda i: (round(points[i].tokens, 6), -points[i].recall))
        return max(range(len(points)), key=lambda i: (points[i].hit, -tokens[i]))
    recall = np.array([p.recall for p in points])
    return knee_choose(recall, tokens, tokens_all, Budget(max_tokens=budget.max_tokens))


# ---------------------------------------------------------------------------------- the tuner


@dataclass(frozen=True)
class DeferredReport:
    runtime: str
    setting: DeferredSetting
    budget: Budget
    heldout: Metrics
    insample: Metrics
    #: The provider's default: nothing loaded, bm25, 5 results.
    default: Metrics
    folds: int
    within_budget: bool
    extra_tokens: int
    fold_settings: tuple[DeferredSetting, ...] = field(default=())
    #: Each case's figures under the setting chosen without its fold (fold order).
    heldout_cases: tuple[CaseResult, ...] = field(default=())
    #: What each case was searched as (its message, or the query a model wrote).
    queries: SearchQueries = field(default=MESSAGE)
    #: The recurrence bars tried and the one proposed (:mod:`workbench.evaluate.generalise`).
    bars: Bars = field(default=Bars())
    #: What the runtime runs today (its configuration, else its default) and each case's
    #: figures under it (case order).
    current: DeferredSetting | None = None
    current_cases: tuple[CaseResult, ...] = field(default=())

    @cached_property
    def verdict(self) -> Verdict:
        """Whether the proposal is a recommendation against the current setting
        (:mod:`workbench.evaluate.verdict`, the rule every tuner shares)."""
        pos = {id(r.case): i for i, r in enumerate(self.current_cases)}
        by_case = sorted(self.heldout_cases, key=lambda r: pos.get(id(r.case), -1))
        return judge(
            by_case,
            self.current_cases,
            budget=self.budget,
            tokens_all=self.default.tokens_all,
            same=self.current == self.setting,
            unit="task",
        )


#: Inner folds that choose how far down the greedy path to go (below twice this many training
#: cases the path is cut where its in-sample figures say).
INNER_FOLDS = 3


def _choose(
    proxies: Mapping[str, _Proxy],
    items: Sequence[ResolvedCase],
    case_ids: Sequence[int],
    units_: Sequence[tuple[int, ...]],
    budget: Budget,
    tokens_all: int,
    usage: IntArray | None,
    extra: int,
    results: Sequence[int],
    recurrence: Recurrence = AT_LEAST_MIN,
    fits: Fits | None = None,
) -> PathPoint:
    """The setting the rule picks from ``case_ids``. For each variant and result count, the
    greedy path on every one of them; the rule picks a variant and a result count on them, then
    how far down that path to go by inner k-fold: each inner fold's path, measured on the cases
    it did not see, step by step. So a unit only the training cases needed is not kept loaded on
    their word alone, and the figures the budget reads at the cut are held-out ones.

    The path's tokens are the greedy's estimate (one ranking per case, the loaded tools
    skipped); ``fits(setting, case_ids)`` measures a pick with the engine itself, and while it
    says the pick is over the budget the rule steps back along the path to the nearest point
    that fits, or to the path's first (nothing loaded), which the report's ``within_budget``
    then reads as it measures."""
    cap = float(budget.max_tokens) if budget.max_tokens is not None else float(tokens_all)
    paths = {
        (variant, k): greedy_path(
            proxy, items, case_ids, units_, variant, k, cap, usage, extra, recurrence
        )
        for variant, proxy in proxies.items()
        for k in results
    }
    keys = [key for key in paths for _ in paths[key]]
    points = [p for key in paths for p in paths[key]]
    at = pick(points, budget, tokens_all)
    variant, k = keys[at]
    path = paths[(variant, k)]
    step = at - keys.index((variant, k))
    if len(case_ids) < 2 * INNER_FOLDS or len(path) == 1:
        return _fitting(path, step, case_ids, fits)
    sums = np.zeros((len(path), 3))
    proxy = proxies[variant]
    for fold in folds_of(len(case_ids), INNER_FOLDS):
        train = [case_ids[j] for j in fold.train]
        test = [case_ids[j] for j in fold.test]
        trained = greedy_path(
            proxy, items, train, units_, variant, k, cap, usage, extra, recurrence
        )
        for step in range(len(path)):
            loaded = trained[min(step, len(trained) - 1)].setting.loaded
            sums[step] += _held_out(proxy, items, test, loaded, k, extra)
    held = [PathPoint(p.setting, *(sums[step] / len(case_ids))) for step, p in enumerate(path)]
    return _fitting(path, pick(held, budget, tokens_all), case_ids, fits)


#: Whether a setting is within the budget measured on some cases (the engine's figures).
Fits = Callable[[DeferredSetting, Sequence[int]], bool]


def _fitting(
    path: Sequence[PathPoint], step: int, case_ids: Sequence[int], fits: Fits | None
) -> PathPoint:
    """``path[step]``, or the last point before it that ``fits`` (:func:`_choose`); the path's
    first point (nothing loaded) when none does."""
    while fits is not None and step > 0 and not fits(path[step].setting, case_ids):
        step -= 1
    return path[step]


def _held_out(
    proxy: _Proxy,
    items: Sequence[ResolvedCase],
    test: Sequence[int],
    loaded: Sequence[int],
    k: int,
    extra: int,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Sums over ``test`` of hit, recall and tokens per task with ``loaded`` kept loaded (the
    greedy's own figures: one request, or the search's and the one after it)."""
    mask = bytearray(proxy.per_tool.shape[0])
    for i in loaded:
        mask[i] = 1
    first = proxy.fixed + extra + float(proxy.per_tool[list(loaded)].sum())
    out = np.zeros(3)
    for c in test:
        state = _case(proxy, items[c].groups, proxy.order_lists[c], mask, k)
        _, recall, found_tokens, searched = state
        out += (recall > 0, recall, first * (2.0 if searched else 1.0) + found_tokens)
    return out


def tune_deferred(
    runtime: str,
    catalog: Catalog,
    bill: TokenBill,
    cases: CaseSet,
    budget: Budget,
    *,
    tokens_all: int,
    folds: int = 5,
    usage: IntArray | None = None,
    described: Mapping[str, str] | None = None,
    queries: SearchQueries = MESSAGE,
    cache: dict[Any, Any] | None = None,
    ranker: Ranker | None = None,
    current: DeferredSetting | None = None,
) -> DeferredReport:
    """Choose on every case; measure the rule k-fold held-out (each fold chosen on the others).
    Each case is searched with ``queries``' query for it (default: its message). ``cache``: the
    rankings and measurements kept between calls on the same cases (other budgets). ``ranker``:
    the workspace's engine; the variants tried are those the runtime can run with it
    (:meth:`~workbench.runtimes.search_tool.SearchToolRuntime.variants_for`). ``current``: what
    the runtime runs today (None: its default), measured on every case for the verdict."""
    items = cases.cases
    plugin = search_tool(runtime)
    extra = extra_tokens(runtime, catalog, bill, described or {})
    memo: dict[Any, Any] = {} if cache is None else cache

    def proxy(variant: str) -> _Proxy:
        key = ("deferred-proxy", runtime, variant)
        if key not in memo:
            memo[key] = _Proxy.build(catalog, bill, items, variant, queries, runtime, ranker)
        return cast("_Proxy", memo[key])

    def measured(setting: DeferredSetting, fold: Fold | None) -> list[CaseResult]:
        key = ("deferred-measure", runtime, setting, folds, None if fold is None else fold.index)
        if key not in memo:
            on = items if fold is None else [items[c] for c in fold.test]
            memo[key] = measure(setting, catalog, bill, on, extra, queries, runtime, ranker)
        return cast("list[CaseResult]", memo[key])

    proxies = {v: proxy(v) for v in plugin.variants_for(ranker)}
    units_ = units(runtime, catalog)
    everyone = list(range(len(items)))

    def spent(setting: DeferredSetting, case_ids: Sequence[int]) -> float:
        """The engine's mean tokens per task of ``setting`` on ``case_ids``."""
        key = ("deferred-fits", runtime, setting, tuple(case_ids))
        if key not in memo:
            on = [items[c] for c in case_ids]
            results = (
                measured(setting, None)
                if len(on) == len(items)
                else measure(setting, catalog, bill, on, extra, queries, runtime, ranker)
            )
            memo[key] = sum(r.tokens for r in results) / max(len(results), 1)
        return cast("float", memo[key])

    def fits_within(limit: int) -> Fits:
        return lambda setting, case_ids: spent(setting, case_ids) <= limit + 1e-9

    def at(recurrence: Recurrence, cap: float | None) -> Rule[DeferredSetting]:
        within = budget.capped(cap)
        # no budget: nothing to measure
        check = None if within.max_tokens is None else fits_within(within.max_tokens)
        rule = (units_, within, tokens_all, usage, extra, plugin.results, recurrence, check)
        chosen = _choose(proxies, items, everyone, *rule)
        held = cross_fit(
            len(items),
            folds,
            lambda fold: _choose(proxies, items, fold.train, *rule).setting,
            measured,
        )
        pooled = held.fold_order()
        insample = aggregate(measured(chosen.setting, None), tokens_all)
        heldout = aggregate(pooled, tokens_all)
        return Rule(chosen.setting, held.settings, tuple(pooled), heldout, insample)

    at_cost = None if budget.explicit else Rule.cost  # no budget: compared at equal cost
    rule, bars = generalising(at, Rule.figures, at_cost, len(items), folds)
    insample, heldout = rule.insample, rule.heldout
    default_setting = DeferredSetting(plugin.variants[0], plugin.default_results, ())
    default = aggregate(measured(default_setting, None), tokens_all)
    now = default_setting if current is None else current
    within = budget.max_tokens is None or insample.tokens_selected_mean <= budget.max_tokens
    if budget.min_hit is not None:
        within = within and insample.hit >= budget.min_hit
    return DeferredReport(
        runtime,
        rule.setting,
        budget,
        heldout,
        insample,
        default,
        folds,
        within,
        extra,
        rule.fold_settings,
        rule.pooled,
        queries,
        bars,
        now,
        tuple(measured(now, None)),
    )


def loaded_servers(setting: DeferredSetting, catalog: Catalog) -> list[str]:
    """The servers with a loaded tool (Claude Code's ``alwaysLoad`` units), catalog order."""
    return list(dict.fromkeys(catalog.tools[i].plugin for i in setting.loaded))
