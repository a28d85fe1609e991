"""``compare --runtimes``: every runtime at its tuned setting on the same cases.

Each runtime makes its own row (:meth:`workbench.runtimes.base.Runtime.compare_row`) from one
:class:`RowContext`; the rows of the runtime families are made here:

* :func:`filter_row`: the ``tool_filtering`` block as ``tune`` proposes it (its sweep and rule);
* :func:`allowlist_row`: the static allowlist :mod:`workbench.evaluate.allowlist` proposes;
* :func:`deferred_row`: the loaded set, variant and results per search of
  :mod:`workbench.evaluate.deferred_tune` (an approximation of unpublished rankers).

Each is tuned within the context's budget (:attr:`RowContext.budget`, max tool tokens per task;
a tuner that cannot get within it gives its cheapest point, flagged ``within`` false), else with
its own tuner's default rule (no budget: the knee of its front, budget.knee), and measured k-fold
held-out on the same folds, so every row is one figure per case measured by
a setting chosen without that case. Error bars are 95 %: Wilson for hit, the bootstrap for recall
and tokens per task (:mod:`workbench.evaluate.intervals`).

Tokens are tool tokens per task (one user message): for the HoloDeck rows one request; for the
deferred rows the search round trip is in (a task the loaded tools do not cover costs the search's
request and the one after it, see :mod:`workbench.evaluate.deferred_tune`).

With no budget the report also holds each runtime's front and the three budgets' table
(:mod:`workbench.evaluate.fronts`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config import AgentConfig
from workbench.evaluate.allowlist import (
    Surface,
    allowlist_rule,
    current_exposed,
    measure_cases,
    surface,
)
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.deferred_tune import (
    DeferredSetting,
    SearchTool,
    entry_descriptions,
    tune_deferred,
)
from workbench.evaluate.folds import folds_of
from workbench.evaluate.fronts import (
    BudgetPoint,
    TableBudgets,
    at_table,
    front,
    row_at,
    table_budgets,
)
from workbench.evaluate.generalise import Bars
from workbench.evaluate.intervals import Interval, bootstrap_mean, wilson
from workbench.evaluate.metrics import Progress, Ranker, tokens_sent
from workbench.evaluate.runs import tune_cases
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import DEFAULT_FOLDS, gap
from workbench.evaluate.verdict import PerCase, Verdict, judge
from workbench.search.delivery import runtime_engine, runtime_methods
from workbench.tokens import TokenTable

T = TypeVar("T")


#: How the deferred rows' tokens differ from a request's, in words (the rows' note).
ROUND_TRIP = "a task the loaded tools do not cover takes two requests (the search, then the call)"


@dataclass(frozen=True)
class Figures:
    """Hit and recall (a row's in-sample figures)."""

    hit: float
    recall: float


@dataclass(frozen=True)
class CaseFigures:
    hit: bool
    recall: float
    tokens: float


@dataclass(frozen=True)
class RuntimeRow:
    runtime: str
    setting: str
    params: dict[str, Any]
    cases: tuple[CaseFigures, ...]
    note: str | None = None
    #: The tool tokens per task it was tuned within (None: its tuner's own rule, the knee).
    budget: int | None = None
    #: Whether its tuner found a setting within ``budget`` (False: its cheapest point, over it).
    within: bool = True
    #: The proposal's hit and recall on every case, the cases it was chosen on (None: not given).
    insample: tuple[float, float] | None = None
    #: The recurrence bars its tuner tried and the one it proposes at (None: a runtime that keeps
    #: no set; :mod:`workbench.evaluate.generalise`).
    bars: Bars | None = None
    #: Why the row stands at the runtime's current setting, not its tuner's proposal (the
    #: verdict kept it: :mod:`workbench.evaluate.verdict`); None: the proposal.
    kept: str | None = None
    #: A kept row's tuner's point, its mean tokens (where its front starts: fronts.front).
    proposal_tokens: float | None = None

    @property
    def cheapest(self) -> float:
        """The tokens of the tuner's own point (a kept row: the proposal it did not take)."""
        return self.tokens if self.proposal_tokens is None else self.proposal_tokens

    @property
    def over(self) -> bool:
        """It cannot get within its budget: the row is its cheapest point."""
        return self.budget is not None and not self.within

    @property
    def heldout_over(self) -> bool:
        """Tuned within the budget on the training folds, its held-out mean is above it."""
        return self.budget is not None and self.within and self.tokens > self.budget + 1e-9

    @property
    def hit(self) -> float:
        return sum(c.hit for c in self.cases) / max(len(self.cases), 1)

    @property
    def recall(self) -> float:
        return float(np.mean([c.recall for c in self.cases])) if self.cases else 0.0

    @property
    def tokens(self) -> float:
        return float(np.mean([c.tokens for c in self.cases])) if self.cases else 0.0

    @property
    def gap(self) -> dict[str, float] | None:
        """In-sample minus held-out hit and recall (:func:`workbench.evaluate.tuner.gap`)."""
        if self.insample is None:
            return None
        return gap(Figures(*self.insample), self)

    def ci(self) -> dict[str, Interval]:
        return {
            "hit": wilson(sum(c.hit for c in self.cases), len(self.cases)),
            "recall": bootstrap_mean([c.recall for c in self.cases]),
            "tokens": bootstrap_mean([c.tokens for c in self.cases]),
        }

    def to_json(self) -> dict[str, Any]:
        ci = self.ci()
        return {
            "runtime": self.runtime,
            "setting": self.setting,
            "params": self.params,
            "heldout": {"hit": self.hit, "recall": self.recall, "tokens_mean": self.tokens},
            "ci95": {k: list(v) for k, v in ci.items()},
            "note": self.note,
            "budget": self.budget,
            "within_budget": self.within,
            "gap": self.gap,
            "recurrence": None if self.bars is None else self.bars.to_json(),
            "kept": self.kept,
        }


@dataclass(frozen=True)
class RuntimesReport:
    cases: int
    tokens_all: int
    folds: int
    rows: list[RuntimeRow]
    #: What the deferred rows searched each case as.
    queries: SearchQueries = MESSAGE
    #: The budget every row was tuned within (None: each at its knee, with the fronts below).
    budget: int | None = None
    #: Each runtime's held-out front (no budget only), cheapest budget first.
    fronts: dict[str, tuple[BudgetPoint, ...]] = field(default_factory=dict)
    #: The table's three budgets (no budget only).
    table: TableBudgets | None = None

    def how(self) -> str:
        """How every row was tuned, in words (the CLI's first line, the dashboard's notes)."""
        if self.budget is None:
            how = "each runtime tuned by its own tuner (no budget: the knee)"
        else:
            how = f"each runtime tuned within {self.budget:,} tool tokens per task"
        return f"{how}, measured {self.folds}-fold held-out"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cases": self.cases,
            "tokens_all": self.tokens_all,
            "folds": self.folds,
            "budget": self.budget,
            "rows": [r.to_json() for r in self.rows],
            "search_query": self.queries.to_json(),
        }
        if self.table is not None:
            out["fronts"] = {name: [p.to_json() for p in f] for name, f in self.fronts.items()}
            out["table"] = {
                "budgets": self.table.to_json(),
                "rows": {
                    name: [p.to_json() for p in at_table(f, self.table)]
                    for name, f in self.fronts.items()
                },
            }
        return out


class RowRuntime(Protocol):
    """What ``compare --runtimes`` asks a runtime (:class:`workbench.runtimes.base.Runtime` fits):
    the caller passes the runtimes in, so nothing here looks one up."""

    @property
    def name(self) -> str: ...

    @property
    def marker(self) -> tuple[str, str]: ...

    @property
    def reads_tool_filtering(self) -> bool: ...

    def compare_row(self, ctx: RowContext) -> RuntimeRow: ...


@dataclass(frozen=True)
class RowContext:
    """What every runtime's row is made from: the same agent, catalog, cases and folds."""

    agent: AgentConfig
    engine: Ranker
    catalog: Catalog
    tokens: TokenTable
    cases: CaseSet
    #: The agent's current ``tool_filtering`` setting (the block's tuner starts from it).
    current: Any
    folds: int = DEFAULT_FOLDS
    #: What the search-tool rows search each case as.
    queries: SearchQueries = MESSAGE
    #: Counts the cases the slowest tuner (the block's sweep) has scored: ``(done, total)``.
    on_progress: Progress | None = None
    #: The tool tokens per task every runtime is tuned within (None: each tuner's own rule).
    budget: int | None = None
    #: What the tuners share between budgets on these cases (rankings, sweeps): each tuner keeps
    #: its own keys, so a context made with another budget (``dataclasses.replace``) reuses them.
    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    #: Every runtime a row can come from (the registry's), in display order: the fronts' table
    #: budgets read the row of the one that reads the block.
    runtimes: Sequence[RowRuntime] = field(default=(), compare=False, repr=False)

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()`` once per key for every budget of this context."""
        if key not in self.cache:
            self.cache[key] = compute()
        return cast("T", self.cache[key])


def kept_or(
    row: RuntimeRow, verdict: Verdict, current: Sequence[PerCase], ctx: RowContext, now: str
) -> RuntimeRow:
    """``row``, or where the verdict would not propose it (a proposal at recall 0, or below the
    current setting beyond the error bar with no budget given: the rule every tuner shares,
    :mod:`workbench.evaluate.verdict`) the current setting's row, measured on the same cases
    (``current``, case order; the row's figures in fold order), saying so. ``now``: the
    current setting in a few words."""
    if not verdict.worse or verdict.kind == "give-up":
        return row
    figures = tuple(
        CaseFigures(current[c].hit, current[c].recall, float(current[c].tokens))
        for fold in folds_of(len(current), ctx.folds)
        for c in fold.test
    )
    mean = sum(f.tokens for f in figures) / max(len(figures), 1)
    return dataclasses.replace(
        row,
        setting=f"current kept: {now}",
        params={"kept": True, "proposal": row.params},
        cases=figures,
        within=ctx.budget is None or mean <= ctx.budget + 1e-9,
        insample=None,
        kept=verdict.reason,
        proposal_tokens=row.tokens,
    )


def filter_row(name: str, ctx: RowContext) -> RuntimeRow:
    """A runtime that reads the ``tool_filtering`` block: tune's sweep, held-out per fold."""
    catalog, tokens, cases = ctx.catalog, ctx.tokens, ctx.cases
    agent = ctx.agent.agent  # what the runtime runs (search/delivery.py)
    report = tune_cases(
        runtime_engine(ctx.engine, agent),
        catalog,
        tokens,
        cases,
        ctx.current,
        Budget(max_tokens=ctx.budget),
        folds=ctx.folds,
        runtime_methods=runtime_methods(agent),
        on_progress=ctx.on_progress,
    )
    outcome = report.outcome
    held = report.heldout_cases  # case order; the rows' figures are in fold order
    per_case = [
        CaseFigures(held[c].hit, held[c].recall, float(held[c].tokens))
        for fold in folds_of(len(cases), ctx.folds)
        for c in fold.test
    ]
    s = outcome.setting
    text = f"{s.search_method} top_k {s.top_k} threshold {s.similarity_threshold:.2f}"
    within = outcome.choice.within_budget
    insample = (outcome.insample.hit, outcome.insample.recall)
    row = RuntimeRow(name, text, s.block(), tuple(per_case), None, ctx.budget, within, insample)
    c = report.current
    now = f"{c.search_method} top_k {c.top_k} threshold {c.similarity_threshold:.2f}"
    return kept_or(row, report.verdict, report.current_cases, ctx, now)


def allowlist_row(name: str, ctx: RowContext) -> RuntimeRow:
    """A runtime of static allowlists: the exposed set chosen per fold, held-out."""
    catalog, tokens, cases, folds = ctx.catalog, ctx.tokens, ctx.cases, ctx.folds
    surf = surface(ctx.agent, catalog)
    note = None
    if surf.notes:  # servers that are not the agent's entries: take them as if they were
        mcp = np.array([t.kind == "mcp" for t in catalog.tools], dtype=np.bool_)
        surf = Surface(surf.backend, mcp, ~mcp)
        note = "the catalog's servers taken as the agent's MCP entries"
    budget = Budget(max_tokens=ctx.budget)
    rule, bars = allowlist_rule(surf, cases, tokens, budget, folds)
    per_case = [CaseFigures(r.hit, r.recall, float(r.tokens)) for r in rule.held.fold_order()]
    exposed = rule.exposed
    kept = int((exposed & surf.candidate).sum())
    text = f"{kept} of {int(surf.candidate.sum())} MCP tools exposed ({surf.backend})"
    cost = tokens_sent(tokens, np.flatnonzero(exposed).tolist())
    within = ctx.budget is None or cost <= ctx.budget
    params = {"exposed": kept}
    insample = (rule.insample.hit, rule.insample.recall)
    figures = tuple(per_case)
    row = RuntimeRow(name, text, params, figures, note, ctx.budget, within, insample, bars)
    # servers that are not the agent's entries have no allowlists: every tool exposed
    now_exposed = surf.fixed | surf.candidate if note else current_exposed(ctx.agent, catalog, surf)
    current = measure_cases(now_exposed, cases, tokens)
    verdict = judge(rule.held.case_order(), current, budget=budget, tokens_all=int(tokens.all))
    shown = int((now_exposed & surf.candidate).sum())
    now = f"{shown} of {int(surf.candidate.sum())} MCP tools exposed ({surf.backend})"
    return kept_or(row, verdict, current, ctx, now)


class SearchToolRow(SearchTool, Protocol):
    """A search-tool runtime as its row needs it: the tuner's questions and its words."""

    def row_text(self, setting: DeferredSetting) -> str: ...

    def figures_note(self, queries: SearchQueries) -> str: ...


def deferred_row(runtime: SearchToolRow, ctx: RowContext) -> RuntimeRow:
    """A search-tool runtime: the loaded set, variant and results per search, held-out."""
    name = runtime.name
    report = tune_deferred(
        runtime,
        ctx.catalog,
        ctx.tokens,
        ctx.cases,
        Budget(max_tokens=ctx.budget),
        tokens_all=int(ctx.tokens.all),
        folds=ctx.folds,
        described=entry_descriptions(ctx.agent.agent),
        queries=ctx.queries,
        cache=ctx.cache,
        ranker=ctx.engine,
    )
    s = report.setting
    text = runtime.row_text(s)
    figures = tuple(CaseFigures(r.hit, r.recall, float(r.tokens)) for r in report.heldout_cases)
    note = f"{runtime.figures_note(ctx.queries)}; {ROUND_TRIP}"
    within = report.within_budget
    insample = (report.insample.hit, report.insample.recall)
    params = s.to_json(ctx.catalog)
    bars = report.bars
    row = RuntimeRow(name, text, params, figures, note, ctx.budget, within, insample, bars)
    now = runtime.row_text(report.current) if report.current is not None else ""
    return kept_or(row, report.verdict, report.current_cases, ctx, now)


def serve_row(name: str, ctx: RowContext) -> RuntimeRow:
    """holo-tune serve: its engine fitted held out within the budget per task
    (:mod:`workbench.evaluate.serve_tune`), with the workspace's embedder; the engines (and
    their query signals) built once for every budget of the context."""
    from workbench.evaluate.serve_tune import serve_engines, settings_words, tune_serve

    embedder = getattr(ctx.engine, "embedder", None)
    store = getattr(ctx.engine, "embedding_cache", None)
    engines = ctx.memo(
        ("serve-engines", id(ctx.catalog)),
        lambda: serve_engines(ctx.catalog, ctx.tokens, embedder, store),
    )
    report = tune_serve(
        ctx.catalog,
        ctx.tokens,
        ctx.cases,
        Budget(max_tokens=ctx.budget),
        tokens_all=int(ctx.tokens.all),
        embedder=embedder,
        embedder_spec=getattr(embedder, "spec", None),
        cache=store,
        folds=ctx.folds,
        engines=engines,
        neighbours=True,
    )
    held = report.heldout
    order = [c for fold in folds_of(len(held), ctx.folds) for c in fold.test]
    figures = tuple(CaseFigures(held[c].hit, held[c].recall, float(held[c].tokens)) for c in order)
    fit = report.fit
    within = ctx.budget is None or report.fixed <= ctx.budget
    note = "exact: holo-tune's own engine, as serve runs it; the user's message is searched"
    params = {k: v for k, v in report.settings.to_json().items() if k != "cases"}
    row = RuntimeRow(
        name,
        settings_words(report.settings),
        params,
        figures,
        note,
        ctx.budget,
        within,
        (fit.insample.hit, fit.insample.recall),
    )
    return kept_or(row, report.verdict, list(report.now), ctx, "serve's defaults")


def compare_runtimes(
    agent: AgentConfig,
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenTable,
    cases: CaseSet,
    current: Any,
    *,
    registry: Sequence[RowRuntime],
    runtimes: Sequence[str] | None = None,
    folds: int = DEFAULT_FOLDS,
    queries: SearchQueries = MESSAGE,
    budget: int | None = None,
    on_runtime: Callable[[str], None] | None = None,
    on_progress: Progress | None = None,
    cache: dict[Any, Any] | None = None,
) -> RuntimesReport:
    """Every runtime of ``runtimes`` (names; default: every one of ``registry``, the registered
    runtimes, :func:`workbench.runtimes.all_runtimes`, in display order) tuned within ``budget``
    tool tokens per task, held-out, on ``cases`` (the search-tool rows search each case as
    ``queries`` says: its message, or the query a model wrote). With no budget each row is its
    tuner's knee, and the report holds each runtime's front and the three budgets' table
    (:mod:`workbench.evaluate.fronts`).

    ``on_runtime(name)`` is called as each runtime starts; ``on_progress(done, total)`` counts
    the cases the block's tuner has scored (the longest part). ``cache``: what the tuners keep
    between calls on the same cases (a caller that asks one runtime at a time passes the same
    dict to each call)."""
    ctx = RowContext(
        agent, engine, catalog, tokens, cases, current, folds, queries, on_progress, budget
    )
    ctx = dataclasses.replace(ctx, runtimes=tuple(registry))
    if cache is not None:
        ctx = dataclasses.replace(ctx, cache=cache)
    chosen = [r.name for r in registry] if runtimes is None else list(runtimes)
    table = None if budget is not None else table_budgets(ctx)
    rows: list[RuntimeRow] = []
    fronts: dict[str, tuple[BudgetPoint, ...]] = {}
    for name in chosen:
        if on_runtime is not None:
            on_runtime(name)
        rows.append(row_at(ctx, name, budget))
        if table is not None:
            fronts[name] = front(ctx, name, table)
    return RuntimesReport(len(cases), int(tokens.all), folds, rows, queries, budget, fronts, table)
