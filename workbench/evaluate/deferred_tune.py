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

import bisect
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from workbench.catalog.models import Catalog
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.compare import case_result
from workbench.evaluate.compare import choose as knee_choose
from workbench.evaluate.folds import Fold, folds_of
from workbench.evaluate.generalise import Rule, SetReport, generalising, held_out_rule
from workbench.evaluate.metrics import CaseResult, Metrics, Ranker, aggregate
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import AT_LEAST_MIN, MIN_CASES, Recurrence
from workbench.search.strategies.anthropic import (
    MAX_RESULTS,
    AnthropicParams,
    AnthropicStrategy,
    Variant,
)
from workbench.search.strategies.base import SearchEngine, TokenBill, request_tokens, text_tokens
from workbench.search.types import BoolArray, FloatArray, IntArray

APPROXIMATION = (
    "hit and recall are an approximation: the provider does not publish its search's ranker"
)


def approximation(queries: SearchQueries = MESSAGE) -> str:
    """What the figures stand on, in words (text and ``--json``)."""
    return f"{APPROXIMATION}; {queries.searched()}"


#: How far down each case's ranking the greedy looks (loaded tools skipped).
WINDOW = 64
#: The most units weighed a proxy keeps in its walks (:meth:`_Proxy.path`) before it drops them.
TREES_HOLD = 500_000
#: The most held-out sums a proxy keeps (:meth:`_Proxy.held_out`) before it drops them.
HELD_KEPT = 10_000
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


class SearchTool(Protocol):
    """What the tuner needs to know of a search-tool runtime (:class:`~workbench.runtimes.
    search_tool.SearchToolRuntime` fits; the runtime hands itself over): its name, its search
    variants and results per search, what it bills, what can be kept loaded and the engine
    standing for its search."""

    @property
    def name(self) -> str: ...

    @property
    def variants(self) -> tuple[str, ...]: ...

    @property
    def results(self) -> tuple[int, ...]: ...

    @property
    def default_results(self) -> int: ...

    @property
    def bills_namespaces(self) -> bool: ...

    @property
    def index_holds_loaded(self) -> bool: ...

    def units(self, catalog: Catalog) -> list[tuple[int, ...]]: ...

    def variants_for(self, ranker: Ranker | None) -> tuple[str, ...]: ...

    def found_tokens(self, catalog: Catalog, bill: TokenBill) -> FloatArray | None: ...

    def search_engine(
        self,
        catalog: Catalog,
        bill: TokenBill,
        setting: DeferredSetting,
        ranker: Ranker | None = None,
    ) -> SearchEngine: ...


def entry_descriptions(agent: Any) -> dict[str, str]:
    """The agent's tool entries' descriptions by entry name (OpenAI shows them per namespace)."""
    return {t.name: t.description or "" for t in getattr(agent, "tools", None) or []}


def extra_tokens(
    runtime: SearchTool, catalog: Catalog, bill: TokenBill, described: Mapping[str, str]
) -> int:
    """What a runtime bills besides definitions: where the model sees every namespace (OpenAI),
    each namespace's name and description (``described``: the agent's entry descriptions)."""
    if not runtime.bills_namespaces:
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
    runtime: SearchTool | None = None,
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
    runtime: SearchTool | None,
    catalog: Catalog,
    bill: TokenBill,
    setting: DeferredSetting,
    ranker: Ranker | None = None,
) -> SearchEngine:
    if runtime is None:
        return AnthropicStrategy(catalog, bill, setting.params(catalog))
    return runtime.search_engine(catalog, bill, setting, ranker)


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
    """One ranking per case over every tool (nothing loaded), for one variant, and the greedy's
    paths walked on it (:meth:`path`: kept between calls, so between budgets and bars)."""

    orders: list[IntArray]
    per_tool: np.ndarray[Any, np.dtype[np.float64]]
    fixed: float  # the search tool, extra and func_end: every request
    #: Whether a loaded tool still takes a result's place (the index holds it too).
    holds_loaded: bool = False
    #: What each tool adds to the request after the search when the search returns it (None:
    #: its definition, ``per_tool``; FastMCP's search returns JSON text).
    found_tokens: np.ndarray[Any, np.dtype[np.float64]] | None = None
    #: ``ranked[c, w]``: the tool at place ``w`` of case ``c``'s ranking (its first
    #: :data:`WINDOW`), :attr:`skip` past its end.
    ranked: IntArray = field(init=False, repr=False)
    #: ``costs[i]``: what tool ``i`` adds to the request after a search that finds it (0 at the
    #: two paddings).
    costs: FloatArray = field(init=False, repr=False)
    #: The cases' expected groups as arrays (:meth:`expected`) and the items they were made of.
    _expected: tuple[Sequence[ResolvedCase], _Expected] | None = field(
        default=None, init=False, repr=False
    )
    #: The walks made so far, by everything but the cap (:meth:`path`).
    _trees: dict[Any, _Tree] = field(default_factory=dict, init=False, repr=False)
    #: The held-out sums measured so far (:meth:`held_out`).
    _held: dict[Any, FloatArray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        width = max((len(o) for o in self.orders), default=0)
        self.ranked = np.full((len(self.orders), width), self.skip, dtype=np.int64)
        for c, order in enumerate(self.orders):
            self.ranked[c, : len(order)] = order
        costs = self.per_tool if self.found_tokens is None else self.found_tokens
        self.costs = np.concatenate([np.asarray(costs, dtype=np.float64), [0.0, 0.0]])

    @property
    def size(self) -> int:
        """The catalog's tools."""
        return int(self.per_tool.shape[0])

    @property
    def skip(self) -> int:
        """A tool-space index past the catalog's tools: the padding of a ranking shorter than
        the window, which a search passes over as it passes over a loaded tool."""
        return self.size

    @property
    def nothing(self) -> int:
        """The padding of an expected group: no tool, never loaded nor found."""
        return self.size + 1

    def mask(self, loaded: Sequence[int] = ()) -> BoolArray:
        """``out[i]``: whether tool ``i`` is loaded (``loaded``), over the tool space (the
        catalog's tools, then :attr:`skip`, always passed over, and :attr:`nothing`)."""
        out = np.zeros(self.size + 2, dtype=np.bool_)
        out[list(loaded)] = True
        out[self.skip] = True
        return out

    def expected(self, items: Sequence[ResolvedCase]) -> _Expected:
        """``items``' expected groups as arrays (made once for the items the proxy ranks)."""
        if self._expected is None or self._expected[0] is not items:
            self._expected = (items, _Expected.of(items, self))
            self._trees.clear()
            self._held.clear()
        return self._expected[1]

    def path(
        self,
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
        """:func:`greedy_path`'s path, from the walks kept on this proxy (one :class:`_Tree`
        per set of arguments but the cap; all dropped when they hold more than
        :data:`TREES_HOLD` units weighed)."""
        expected = self.expected(items)
        weights = None if usage is None else usage.tobytes()
        key = (tuple(case_ids), tuple(units_), variant, k, weights, extra, recurrence)
        tree = self._trees.get(key)
        if tree is None:
            if sum(t.size for t in self._trees.values()) > TREES_HOLD:
                self._trees.clear()
            setup = _Setup.of(self, expected, case_ids, units_, k, usage, extra, recurrence)
            tree = self._trees[key] = _Tree(self, expected, setup, variant)
        return tree.path(cap)

    def held_out(
        self,
        items: Sequence[ResolvedCase],
        test: Sequence[int],
        loaded: tuple[int, ...],
        k: int,
        extra: int,
    ) -> FloatArray:
        """:func:`_held_out`, kept (the inner folds measure the same loaded sets on the same
        cases at every budget)."""
        self.expected(items)
        key = (tuple(test), loaded, k, extra)
        if key not in self._held:
            if len(self._held) > HELD_KEPT:
                self._held.clear()
            self._held[key] = _held_out(self, items, test, loaded, k, extra)
        return self._held[key]

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        bill: TokenBill,
        items: Sequence[ResolvedCase],
        variant: str,
        queries: SearchQueries = MESSAGE,
        runtime: SearchTool | None = None,
        ranker: Ranker | None = None,
    ) -> _Proxy:
        plugin = runtime
        results = MAX_RESULTS if plugin is None else plugin.default_results
        setting = DeferredSetting(variant, results, ())
        engine = _engine(runtime, catalog, bill, setting, ranker)
        orders = [engine.ranking(queries.query(c.query, variant))[0][:WINDOW] for c in items]
        per_tool = np.asarray(bill.per_tool, dtype=np.float64)
        holds = plugin is not None and plugin.index_holds_loaded
        found = None if plugin is None else plugin.found_tokens(catalog, bill)
        return cls(orders, per_tool, float(engine.meta_tokens + bill.overhead), holds, found)


BoolMatrix = np.ndarray[Any, np.dtype[np.bool_]]
#: A figure of one loaded set, or an array of them (one per unit a step weighs).
Figure = TypeVar("Figure", float, FloatArray)


@dataclass(frozen=True)
class _Expected:
    """What each case expects, as arrays over the cases a proxy ranks (row ``c``: case ``c``)."""

    #: Each case's groups as the cases hold them (the greedy's bookkeeping reads these).
    groups: list[tuple[tuple[int, ...], ...]]
    #: ``members[c, g, t]``: the ``t``-th tool of case ``c``'s ``g``-th group (the proxy's
    #: :attr:`~_Proxy.nothing` past the group's end and past the case's last group).
    members: IntArray
    #: ``place[c, g, t]``: where ``members[c, g, t]`` stands in case ``c``'s ranking (the
    #: window's width when it is not in it).
    place: IntArray
    #: ``count[c]``: how many groups case ``c`` expects.
    count: IntArray

    @classmethod
    def of(cls, items: Sequence[ResolvedCase], proxy: _Proxy) -> _Expected:
        groups = [c.groups for c in items]
        width = int(proxy.ranked.shape[1])
        most = max((len(g) for g in groups), default=0)
        longest = max((len(m) for g in groups for m in g), default=0)
        members = np.full((len(groups), most, longest), proxy.nothing, dtype=np.int64)
        place = np.full(members.shape, width, dtype=np.int64)
        for c, case_groups in enumerate(groups):
            where: dict[int, int] = {t: w for w, t in enumerate(proxy.ranked[c].tolist())}
            for g, group in enumerate(case_groups):
                members[c, g, : len(group)] = group
                place[c, g, : len(group)] = [where.get(i, width) for i in group]
        count = np.array([len(g) for g in groups], dtype=np.int64)
        return cls(groups, members, place, count)


@dataclass(frozen=True)
class _States:
    """A batch of cases, each under its own loaded set (row ``b``: the batch's ``b``-th case)."""

    #: ``found[b, w]``: whether the search returns the tool at place ``w`` of the case's ranking
    #: (none when the loaded set covers the case: it does not search).
    found: BoolMatrix
    #: The share of the case's groups with a tool in the request after the search (loaded or
    #: found; 1.0 when the loaded set covers the case).
    recall: FloatArray
    #: The found tools' tokens (the proxy's ``costs``).
    tokens: FloatArray
    #: Whether the case searches (the loaded set does not cover it).
    searched: BoolArray


def _states(
    proxy: _Proxy,
    expected: _Expected,
    rows: IntArray,
    loaded: BoolArray,
    k: int,
    plus: BoolMatrix | None = None,
    plus_rows: IntArray | None = None,
) -> _States:
    """Case ``rows[b]`` of the proxy under ``loaded`` (:meth:`_Proxy.mask`), with the tools of
    ``plus[plus_rows[b]]`` loaded on top (a trial's unit), for every ``b``: what its search
    finds (the first ``k`` tools of its ranking not loaded, or, where the index holds the loaded
    tools, those of its first ``k`` places that are not), its recall, the found tools' tokens and
    whether it searches at all."""
    ranked = proxy.ranked[rows]
    members = expected.members[rows]
    on = loaded[ranked]
    held = loaded[members]
    if plus is not None and plus_rows is not None:
        on |= plus[plus_rows[:, None], ranked]
        held |= plus[plus_rows[:, None, None], members]
    count = expected.count[rows]
    real = np.arange(members.shape[1]) < count[:, None]
    covered: BoolArray = np.asarray((held.any(axis=2) | ~real).all(axis=1))
    free = ~on
    if proxy.holds_loaded:
        found = free & (np.arange(ranked.shape[1]) < k)
    else:
        found = free & (np.cumsum(free, axis=1) <= k)
    found[covered] = False
    beyond = np.zeros((len(rows), 1), dtype=np.bool_)  # the place of a tool not in the ranking
    places = expected.place[rows].reshape(len(rows), -1)
    seen = np.take_along_axis(np.hstack([found, beyond]), places, axis=1)
    sent = ((held | seen.reshape(held.shape)).any(axis=2) & real).sum(axis=1)
    recall = np.where(covered, 1.0, sent / np.maximum(count, 1))
    tokens = np.where(found, proxy.costs[ranked], 0.0).sum(axis=1)
    return _States(found, recall, tokens, ~covered)


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
    then be (``states``' row ``j``: the walk's case ``cases[j]``), and the sums the step's score
    reads."""

    cases: list[int]
    states: _States
    d_recall: float
    d_tokens: float
    d_searches: float
    #: The unit's tools not yet loaded: their definitions' tokens and usage weight.
    new_tokens: float
    new_weight: float

    @property
    def sums(self) -> tuple[float, float, float, float, float]:
        """The step's figures of the trial, in :meth:`_Walk.weigh`'s columns."""
        return self.d_recall, self.d_tokens, self.d_searches, self.new_tokens, self.new_weight


@dataclass(frozen=True)
class _Setup:
    """What every walk on the same arguments shares: the cases (the walk's case ``c`` is the
    proxy's ``rows[c]``), who expects each tool, the units that recur and the usage weights."""

    rows: IntArray
    groups: list[tuple[tuple[int, ...], ...]]
    #: tool -> the walk's cases that expect it.
    expects: dict[int, set[int]]
    #: The units that recur (:func:`recurs`), in the order the step weighs them.
    hot: list[tuple[int, ...]]
    #: ``plus[u, i]``: whether hot unit ``u`` holds tool ``i`` (tool space).
    plus: BoolMatrix
    #: tool -> the hot units that hold it.
    units_of: dict[int, list[int]]
    #: Each tool's usage weight before anything is loaded.
    weight: FloatArray
    k: int
    #: Every request's tokens besides the loaded tools (the search tool, extra, func_end).
    base: float

    @classmethod
    def of(
        cls,
        proxy: _Proxy,
        expected: _Expected,
        case_ids: Sequence[int],
        units_: Sequence[tuple[int, ...]],
        k: int,
        usage: IntArray | None,
        extra: int,
        recurrence: Recurrence,
    ) -> _Setup:
        groups = [expected.groups[c] for c in case_ids]
        weight = np.zeros(proxy.size)
        if usage is not None and usage.sum() > 0:
            weight = USAGE_WEIGHT * usage / usage.sum()
        expects: dict[int, set[int]] = {}
        for c, case_groups in enumerate(groups):
            for group in case_groups:
                for i in group:
                    expects.setdefault(i, set()).add(c)
        need = recurrence.need(len(case_ids))
        hot = [u for u in units_ if recurs(u, expects, weight, need)]
        plus = np.zeros((len(hot), proxy.size + 2), dtype=np.bool_)
        units_of: dict[int, list[int]] = {}
        for u_index, unit in enumerate(hot):
            plus[u_index, list(unit)] = True
            for i in unit:
                units_of.setdefault(i, []).append(u_index)
        rows = np.asarray(case_ids, dtype=np.int64)
        return cls(rows, groups, expects, hot, plus, units_of, weight, k, proxy.fixed + extra)

    @property
    def n(self) -> int:
        """How many cases the means are over (at least 1)."""
        return max(len(self.rows), 1)

    def task_tokens(self, loaded_tok: Figure, searched: Figure, found_tok: Figure) -> Figure:
        """Mean tokens per task: every case's first request, the searching cases' second (of
        one loaded set, or of one per unit weighed)."""
        return (self.base + loaded_tok) * (1.0 + searched / self.n) + found_tok / self.n


@dataclass(frozen=True)
class _Weighed:
    """The units a step weighed: those not loaded that gain recall or save tokens, in the hot
    units' order (entry ``j``: hot unit ``units[j]``)."""

    units: IntArray
    #: Whether loading the unit saves tokens per task (the round trips it spares cost more).
    saves: BoolArray
    #: The score (:func:`_better`): recall gained when it saves tokens, else recall gained per
    #: token added; then, when it saves, the tokens saved.
    score: FloatArray
    tie: FloatArray
    #: The tokens per task it adds, and the tokens per task after it.
    cost: FloatArray
    after: FloatArray

    def __len__(self) -> int:
        return int(self.units.shape[0])


def _choice(weighed: _Weighed, cap: float) -> int | None:
    """The unit a step loads at ``cap``, of those it weighed: the best score (:func:`_better`,
    in the order weighed) of those within the cap or saving tokens; None: none is."""
    within = np.flatnonzero(~((weighed.cost > 1e-9) & (weighed.after > cap + 1e-9)))
    if within.size == 0:
        return None
    # A unit that saves beats one that does not, whatever comes first: the best is among the
    # savers when there is one.
    first = within[weighed.saves[within]] if weighed.saves[within].any() else within
    score = weighed.score[first]
    top = int(np.argmax(score))
    if int((np.abs(score - score[top]) <= 1e-12).sum()) == 1:
        return int(weighed.units[first[top]])  # no other within 1e-12 of the best: it wins
    best = int(first[0])  # ties within 1e-12: the comparisons one by one, as they come
    for j in first[1:].tolist():
        mine = (1, float(weighed.score[j]), float(weighed.tie[j]))
        than = (1, float(weighed.score[best]), float(weighed.tie[best]))
        if _better(mine, than):
            best = j
    return int(weighed.units[best])


class _Walk:
    """The greedy's state at one loaded set (:func:`greedy_path`): each of the walk's cases
    under it (what its search finds, its recall, the found tools' tokens, whether it searches)
    and the trials kept from step to step."""

    def __init__(
        self, proxy: _Proxy, expected: _Expected, setup: _Setup, loaded: Sequence[int] = ()
    ) -> None:
        """The walk at nothing loaded, or at ``loaded`` (each case under it as any walk that
        loads it has it; the trials made anew)."""
        self.proxy, self.expected, self.setup = proxy, expected, setup
        self.loaded = proxy.mask(loaded)
        self.weight = setup.weight.copy()
        self.weight[list(loaded)] = 0.0
        self.loaded_tok = float(proxy.per_tool[list(loaded)].sum())  # whole numbers: exact
        now = _states(proxy, expected, setup.rows, self.loaded, setup.k)
        self.found = [self._tools(c, now.found[c]) for c in range(len(setup.rows))]
        #: tool -> the walk's cases whose search finds it.
        self.showing: dict[int, set[int]] = {}
        for c, f in enumerate(self.found):
            for i in f:
                self.showing.setdefault(i, set()).add(c)
        self.recall = now.recall
        self.ftok = now.tokens
        self.searches = now.searched
        self.trials: dict[int, _Trial] = {}
        #: tool -> the units whose kept trial found it in some case's search.
        self.found_by: dict[int, set[int]] = {}

    def _tools(self, c: int, found: BoolArray) -> list[int]:
        """The tools of the walk's case ``c``'s ranking that ``found`` marks, in its order."""
        return cast("list[int]", self.proxy.ranked[self.setup.rows[c]][found].tolist())

    def sums(self) -> tuple[int, float]:
        """The searching cases and the found tools' tokens, over the walk's cases."""
        return sum(self.searches.tolist()), sum(self.ftok.tolist())

    def point(self, variant: str) -> PathPoint:
        n = self.setup.n
        recall = self.recall.tolist()
        hits = [r > 0 for r in recall]
        on = tuple(np.flatnonzero(self.loaded[: self.proxy.size]).tolist())
        mean_tok = self.setup.task_tokens(self.loaded_tok, *self.sums())
        setting = DeferredSetting(variant, self.setup.k, on)
        return PathPoint(setting, sum(hits) / n, sum(recall) / n, mean_tok)

    def make_trials(self, wanted: Sequence[int]) -> None:
        """The trials of the hot units ``wanted``, made in one batch: each touches the cases
        that expect one of its tools and those whose search finds one."""
        setup = self.setup
        touched_of: list[list[int]] = []
        for u_index in wanted:
            touched: set[int] = set()
            for i in setup.hot[u_index]:
                # the cases in their order: a set iterates as it was filled, and the sums below
                # are made in that order
                shown = set(sorted(self.showing.get(i, ())))
                touched |= setup.expects.get(i, set()) | shown
            touched_of.append(list(touched))
        lengths = np.array([len(t) for t in touched_of], dtype=np.int64)
        cases = np.fromiter((c for t in touched_of for c in t), np.int64, int(lengths.sum()))
        which = np.repeat(np.arange(len(wanted)), lengths)
        unit_rows = np.asarray(wanted, dtype=np.int64)[which]
        rows = setup.rows[cases]
        states = _states(
            self.proxy, self.expected, rows, self.loaded, setup.k, setup.plus, unit_rows
        )
        # Each trial's sums, case by case in the order it touches them (a float sum's order
        # matters): bincount adds each bin's values in the order they come.
        sums = [
            np.bincount(which, weights=delta, minlength=len(wanted)).tolist()
            for delta in (
                states.recall - self.recall[cases],
                states.tokens - self.ftok[cases],
                states.searched.astype(np.float64) - self.searches[cases],
            )
        ]
        pair, at = np.nonzero(states.found)
        tools = self.proxy.ranked[rows[pair], at].tolist()
        for i, u_index in set(zip(tools, unit_rows[pair].tolist(), strict=True)):
            self.found_by.setdefault(i, set()).add(u_index)
        ends = np.cumsum(lengths).tolist()
        for j, u_index in enumerate(wanted):
            part = slice(ends[j] - int(lengths[j]), ends[j])
            new = [i for i in setup.hot[u_index] if not self.loaded[i]]
            self.trials[u_index] = _Trial(
                touched_of[j],
                _States(
                    states.found[part],
                    states.recall[part],
                    states.tokens[part],
                    states.searched[part],
                ),
                sums[0][j],
                sums[1][j],
                sums[2][j],
                float(self.proxy.per_tool[new].sum()),
                float(self.weight[new].sum()),
            )

    def weigh(self, now: float) -> _Weighed:
        """Every hot unit not yet loaded that gains recall or saves tokens, at ``now`` tokens
        per task, in the hot units' order (the trials it lacks made first)."""
        setup, size = self.setup, self.proxy.size
        open_ = np.flatnonzero((setup.plus[:, :size] & ~self.loaded[:size]).any(axis=1))
        wanted = [u for u in open_.tolist() if u not in self.trials]
        if wanted:
            self.make_trials(wanted)
        # columns: recall gained, found tokens added, searches added, loaded tokens, weight
        sums = np.array([self.trials[u].sums for u in open_.tolist()], dtype=np.float64).reshape(
            -1, 5
        )
        searched, found_tok = self.sums()
        after = setup.task_tokens(
            self.loaded_tok + sums[:, 3], searched + sums[:, 2], found_tok + sums[:, 1]
        )
        cost = after - now
        gain = sums[:, 0] / setup.n + sums[:, 4]
        useful = ~((gain <= 1e-12) & (cost >= -1e-9))  # more recall or fewer tokens
        saves = cost <= 1e-9
        score = np.where(saves, gain, gain / np.maximum(cost, 1.0))
        tie = np.where(saves, -cost, 0.0)
        return _Weighed(
            open_[useful], saves[useful], score[useful], tie[useful], cost[useful], after[useful]
        )

    def load(self, u_index: int) -> None:
        """Load hot unit ``u_index`` (weighed at this step): its trial's cases become the walk's,
        and the trials the step can have changed are dropped, to be made again
        (:func:`greedy_path`)."""
        setup = self.setup
        chosen = setup.hot[u_index]
        trial = self.trials[u_index]
        changed = [self._tools(c, trial.states.found[j]) for j, c in enumerate(trial.cases)]
        stale: set[int] = set()
        for i in chosen:
            stale.update(setup.units_of.get(i, ()))
            stale |= self.found_by.pop(i, set())
        for c, now_found in zip(trial.cases, changed, strict=True):
            groups = (i for g in setup.groups[c] for i in g)
            for i in {*self.found[c], *now_found, *groups}:
                stale.update(setup.units_of.get(i, ()))
        for stale_unit in stale:
            self.trials.pop(stale_unit, None)
        new = [i for i in chosen if not self.loaded[i]]
        self.loaded_tok += float(self.proxy.per_tool[new].sum())
        self.loaded[list(chosen)] = True
        self.weight[list(chosen)] = 0.0
        cases = np.asarray(trial.cases, dtype=np.int64)
        self.recall[cases] = trial.states.recall
        self.ftok[cases] = trial.states.tokens
        self.searches[cases] = trial.states.searched
        for c, now_found in zip(trial.cases, changed, strict=True):
            for i in self.found[c]:
                self.showing[i].discard(c)
            for i in now_found:
                self.showing.setdefault(i, set()).add(c)
            self.found[c] = now_found


@dataclass
class _Node:
    """A loaded set a walk reached: its point on the path, the units its step weighed and the
    nodes loading each of them reached."""

    point: PathPoint
    weighed: _Weighed
    children: dict[int, _Node] = field(default_factory=dict)
    #: The tokens per task after each weighed unit that adds tokens, lowest first: a cap lets in
    #: the first so many of them (and every unit that saves), so the choice is made once for
    #: each such count (``chosen``).
    afters: list[float] = field(init=False, repr=False)
    chosen: dict[int, int | None] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        costly = self.weighed.cost > 1e-9
        self.afters = sorted(self.weighed.after[costly].tolist())

    def choice(self, cap: float) -> int | None:
        """:func:`_choice` at ``cap``."""
        let_in = bisect.bisect_right(self.afters, cap + 1e-9)
        if let_in not in self.chosen:
            self.chosen[let_in] = _choice(self.weighed, cap)
        return self.chosen[let_in]


class _Tree:
    """The greedy's walks on one set of arguments, at every cap asked for. A cap only decides
    which of the units a step weighed it may load (:func:`_choice`); what a step weighs depends
    on the loaded set alone. So the walks at two caps are one up to the step where they load
    different units, and each loaded set is weighed once, whatever the cap."""

    def __init__(self, proxy: _Proxy, expected: _Expected, setup: _Setup, variant: str) -> None:
        self.proxy, self.expected, self.setup, self.variant = proxy, expected, setup, variant
        self.root: _Node | None = None
        #: Units weighed and kept in the nodes (what the tree holds).
        self.size = 0

    def _node(self, walk: _Walk) -> _Node:
        point = walk.point(self.variant)
        node = _Node(point, walk.weigh(point.tokens))
        self.size += len(node.weighed) + 1
        return node

    def path(self, cap: float) -> list[PathPoint]:
        """The greedy's path at ``cap``: the nodes' choices at it, weighing the loaded sets no
        walk reached before (the walk goes on from the last node it reached, its cases and
        trials made anew there)."""
        walk: _Walk | None = None  # the state at ``node``, while one is kept
        if self.root is None:
            walk = _Walk(self.proxy, self.expected, self.setup)
            self.root = self._node(walk)
        node = self.root
        points = [node.point]
        while (u_index := node.choice(cap)) is not None:
            child = node.children.get(u_index)
            if child is None:
                if walk is None:
                    loaded = node.point.setting.loaded
                    walk = _Walk(self.proxy, self.expected, self.setup, loaded)
                    walk.make_trials(
                        [u_index]
                    )  # the trial the step loads (the child makes the rest)
                walk.load(u_index)
                child = node.children[u_index] = self._node(walk)
            else:
                walk = None
            node = child
            points.append(node.point)
        return points


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
    fraction of the time on a large catalog. The trials a step lacks are made in one batch, as
    arrays over the cases they touch (:func:`_states`)."""
    expected = proxy.expected(items)
    setup = _Setup.of(proxy, expected, case_ids, units_, k, usage, extra, recurrence)
    return _Tree(proxy, expected, setup, variant).path(cap)


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


@dataclass(frozen=True, kw_only=True)
class DeferredReport(SetReport[DeferredSetting, Metrics]):
    """A search-tool runtime's tuner's report (:class:`~workbench.evaluate.generalise.
    SetReport`): its runtime's name and the tokens it bills besides definitions; ``default`` is
    the provider's (nothing loaded, bm25, 5 results), ``current`` what the runtime runs today
    (its configuration, else its default)."""

    runtime: str
    extra_tokens: int


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
        (variant, k): proxy.path(items, case_ids, units_, variant, k, cap, usage, extra, recurrence)
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
        trained = proxy.path(items, train, units_, variant, k, cap, usage, extra, recurrence)
        held_at: dict[tuple[int, ...], np.ndarray[Any, np.dtype[np.float64]]] = {}
        for step in range(len(path)):
            loaded = trained[min(step, len(trained) - 1)].setting.loaded
            if loaded not in held_at:
                held_at[loaded] = proxy.held_out(items, test, loaded, k, extra)
            sums[step] += held_at[loaded]
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
    first = proxy.fixed + extra + float(proxy.per_tool[list(loaded)].sum())
    rows = np.asarray(test, dtype=np.int64)
    states = _states(proxy, proxy.expected(items), rows, proxy.mask(loaded), k)
    tokens = first * np.where(states.searched, 2.0, 1.0) + states.tokens
    figures = np.stack([states.recall > 0, states.recall, tokens], axis=1)
    # summed case by case, in the order of ``test`` (a float sum's order matters)
    sums = np.add.accumulate(np.vstack([np.zeros((1, 3)), figures]), axis=0)
    out: FloatArray = sums[-1]
    return out


def tune_deferred(
    runtime: SearchTool,
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
    plugin = runtime
    extra = extra_tokens(runtime, catalog, bill, described or {})
    memo: dict[Any, Any] = {} if cache is None else cache
    everyone = list(range(len(items)))

    def proxy(variant: str) -> _Proxy:
        key = ("deferred-proxy", runtime.name, variant)
        if key not in memo:
            memo[key] = _Proxy.build(catalog, bill, items, variant, queries, runtime, ranker)
        return cast("_Proxy", memo[key])

    def results(setting: DeferredSetting, case_ids: Sequence[int]) -> list[CaseResult]:
        """``setting``'s figures on ``case_ids`` through the engine, each case measured once
        (the folds' cases, the training cases a pick is checked on and every case overlap)."""
        done = memo.setdefault(("deferred-cases", runtime.name, setting), {})
        missing = [c for c in case_ids if c not in done]
        if missing:
            on = [items[c] for c in missing]
            got = measure(setting, catalog, bill, on, extra, queries, runtime, ranker)
            done.update(zip(missing, got, strict=True))
        return [done[c] for c in case_ids]

    def measured(setting: DeferredSetting, fold: Fold | None) -> list[CaseResult]:
        return results(setting, everyone if fold is None else fold.test)

    proxies = {v: proxy(v) for v in plugin.variants_for(ranker)}
    units_ = runtime.units(catalog)

    def spent(setting: DeferredSetting, case_ids: Sequence[int]) -> float:
        """The engine's mean tokens per task of ``setting`` on ``case_ids``."""
        on = results(setting, case_ids)
        return sum(r.tokens for r in on) / max(len(on), 1)

    def fits_within(limit: int) -> Fits:
        return lambda setting, case_ids: spent(setting, case_ids) <= limit + 1e-9

    def at(recurrence: Recurrence, cap: float | None) -> Rule[DeferredSetting]:
        within = budget.capped(cap)
        # no budget: nothing to measure
        check = None if within.max_tokens is None else fits_within(within.max_tokens)
        rule = (units_, within, tokens_all, usage, extra, plugin.results, recurrence, check)
        return held_out_rule(
            lambda ids: _choose(proxies, items, ids, *rule).setting,
            measured,
            len(items),
            folds,
            tokens_all,
        )

    at_cost = None if budget.explicit else Rule.cost  # no budget: compared at equal cost
    rule, bars = generalising(at, Rule.figures, at_cost, len(items), folds)
    insample, heldout = rule.insample, rule.heldout
    default_setting = DeferredSetting(plugin.variants[0], plugin.default_results, ())
    default = aggregate(measured(default_setting, None), tokens_all)
    now = default_setting if current is None else current
    within = budget.met_by(insample.tokens_selected_mean, insample.hit)
    return DeferredReport(
        runtime=runtime.name,
        setting=rule.setting,
        budget=budget,
        heldout=heldout,
        insample=insample,
        default=default,
        folds=folds,
        within_budget=within,
        extra_tokens=extra,
        fold_settings=rule.fold_settings,
        heldout_cases=rule.pooled,
        queries=queries,
        bars=bars,
        current=now,
        current_cases=tuple(measured(now, None)),
    )


def loaded_servers(setting: DeferredSetting, catalog: Catalog) -> list[str]:
    """The servers with a loaded tool (Claude Code's ``alwaysLoad`` units), catalog order."""
    return list(dict.fromkeys(catalog.tools[i].plugin for i in setting.loaded))
