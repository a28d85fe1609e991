"""``compare --runtimes``: every runtime at its tuned setting on the same cases.

Each runtime makes its own row (:meth:`workbench.runtimes.base.Runtime.compare_row`) from one
:class:`RowContext`; the rows of the runtime families are made here:

* :func:`filter_row`: the ``tool_filtering`` block as ``tune`` proposes it (its sweep and rule);
* :func:`allowlist_row`: the static allowlist :mod:`workbench.evaluate.allowlist` proposes;
* :func:`deferred_row`: the loaded set, variant and results per search of
  :mod:`workbench.evaluate.deferred_tune` (an approximation of unpublished rankers).

Each is tuned with its own tuner's default rule (no budget: the knee within 30 % of all tokens)
and measured k-fold held-out on the same folds, so every row is one figure per case measured by
a setting chosen without that case. Error bars are 95 %: Wilson for hit, the bootstrap for recall
and tokens per task (:mod:`workbench.evaluate.intervals`).

Tokens are tool tokens per task (one user message): for the HoloDeck rows one request; for the
deferred rows the search round trip is in (a task the loaded tools do not cover costs the search's
request and the one after it, see :mod:`workbench.evaluate.deferred_tune`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config import AgentConfig
from workbench.evaluate.allowlist import StaticBudget, Surface, choose, surface
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.deferred_tune import (
    DeferredBudget,
    entry_descriptions,
    search_tool,
    tune_deferred,
)
from workbench.evaluate.intervals import Interval, bootstrap_mean, wilson
from workbench.evaluate.metrics import Progress, Ranker, evaluate, tokens_sent
from workbench.evaluate.runs import tune_cases
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import DEFAULT_FOLDS, Budget, fold_assignment
from workbench.runtimes import all_runtimes, get_runtime
from workbench.tokens import TokenTable


def free_column(taken: set[tuple[int, int]], x: int, y: int, width: int) -> int:
    """Where a plot marker at ``(x, y)`` goes so it hides no other marker (``taken``): ``x``, else
    the nearest free column on its row (right first), within ``width``. Both runtime plots (the
    text one and the dashboard's) place their markers with it."""
    for step in range(width):
        for candidate in (x + step, x - step):
            if 0 <= candidate < width and (candidate, y) not in taken:
                return candidate
    return x


#: How the deferred rows' tokens differ from a request's, in words (the rows' note).
ROUND_TRIP = "a task the loaded tools do not cover takes two requests (the search, then the call)"


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

    @property
    def hit(self) -> float:
        return sum(c.hit for c in self.cases) / max(len(self.cases), 1)

    @property
    def recall(self) -> float:
        return float(np.mean([c.recall for c in self.cases])) if self.cases else 0.0

    @property
    def tokens(self) -> float:
        return float(np.mean([c.tokens for c in self.cases])) if self.cases else 0.0

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
        }


@dataclass(frozen=True)
class RuntimesReport:
    cases: int
    tokens_all: int
    folds: int
    rows: list[RuntimeRow]
    #: What the deferred rows searched each case as.
    queries: SearchQueries = MESSAGE

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "tokens_all": self.tokens_all,
            "folds": self.folds,
            "rows": [r.to_json() for r in self.rows],
            "search_query": self.queries.to_json(),
        }


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


def filter_row(name: str, ctx: RowContext) -> RuntimeRow:
    """A runtime that reads the ``tool_filtering`` block: tune's sweep, held-out per fold."""
    engine, catalog, tokens, cases = ctx.engine, ctx.catalog, ctx.tokens, ctx.cases
    report = tune_cases(
        engine,
        catalog,
        tokens,
        cases,
        ctx.current,
        Budget(),
        folds=ctx.folds,
        on_progress=ctx.on_progress,
    )
    outcome = report.outcome
    assignment = fold_assignment(len(cases), ctx.folds)
    per_case: list[CaseFigures] = []
    for fold, setting in enumerate(outcome.fold_choices):
        test = cases.subset(np.flatnonzero(assignment == fold).tolist())
        for r in evaluate(engine, catalog, tokens, test, setting).per_case:
            per_case.append(CaseFigures(r.hit, r.recall, float(r.tokens)))
    s = outcome.setting
    text = f"{s.search_method} top_k {s.top_k} threshold {s.similarity_threshold:.2f}"
    return RuntimeRow(name, text, s.block(), tuple(per_case))


def allowlist_row(name: str, ctx: RowContext) -> RuntimeRow:
    """A runtime of static allowlists: the exposed set chosen per fold, held-out."""
    catalog, tokens, cases, folds = ctx.catalog, ctx.tokens, ctx.cases, ctx.folds
    surf = surface(ctx.agent, catalog)
    note = None
    if surf.notes:  # servers that are not the agent's entries: take them as if they were
        mcp = np.array([t.kind == "mcp" for t in catalog.tools], dtype=np.bool_)
        surf = Surface(surf.backend, mcp, ~mcp)
        note = "the catalog's servers taken as the agent's MCP entries"
    budget = StaticBudget()
    assignment = fold_assignment(len(cases), folds)
    per_case: list[CaseFigures] = []
    for fold in range(folds):
        train = cases.subset(np.flatnonzero(assignment != fold).tolist())
        test = cases.subset(np.flatnonzero(assignment == fold).tolist())
        exposed = choose(surf, train, tokens, budget)
        cost = float(tokens_sent(tokens, np.flatnonzero(exposed).tolist()))
        for case in test.cases:
            sent = [any(exposed[i] for i in g) for g in case.groups]
            per_case.append(CaseFigures(any(sent), sum(sent) / len(sent), cost))
    exposed = choose(surf, cases, tokens, budget)
    kept = int((exposed & surf.candidate).sum())
    text = f"{kept} of {int(surf.candidate.sum())} MCP tools exposed ({surf.backend})"
    return RuntimeRow(name, text, {"exposed": kept}, tuple(per_case), note)


def deferred_row(name: str, ctx: RowContext) -> RuntimeRow:
    """A search-tool runtime: the loaded set, variant and results per search, held-out."""
    report = tune_deferred(
        name,
        ctx.catalog,
        ctx.tokens,
        ctx.cases,
        DeferredBudget(),
        tokens_all=int(ctx.tokens.all),
        folds=ctx.folds,
        described=entry_descriptions(ctx.agent.agent),
        queries=ctx.queries,
    )
    s = report.setting
    text = search_tool(name).row_text(s)
    figures = tuple(CaseFigures(r.hit, r.recall, float(r.tokens)) for r in report.heldout_cases)
    note = f"{search_tool(name).figures_note(ctx.queries)}; {ROUND_TRIP}"
    return RuntimeRow(name, text, s.to_json(ctx.catalog), figures, note)


def compare_runtimes(
    agent: AgentConfig,
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenTable,
    cases: CaseSet,
    current: Any,
    *,
    runtimes: Sequence[str] | None = None,
    folds: int = DEFAULT_FOLDS,
    queries: SearchQueries = MESSAGE,
    on_runtime: Callable[[str], None] | None = None,
    on_progress: Progress | None = None,
) -> RuntimesReport:
    """Every runtime of ``runtimes`` (default: every registered one) at its tuned setting,
    held-out, on ``cases`` (the search-tool rows search each case as ``queries`` says: its
    message, or the query a model wrote).

    ``on_runtime(name)`` is called as each runtime starts; ``on_progress(done, total)`` counts
    the cases the block's tuner has scored (the longest part)."""
    ctx = RowContext(agent, engine, catalog, tokens, cases, current, folds, queries, on_progress)
    chosen = [r.name for r in all_runtimes()] if runtimes is None else list(runtimes)
    rows: list[RuntimeRow] = []
    for name in chosen:
        if on_runtime is not None:
            on_runtime(name)
        rows.append(get_runtime(name).compare_row(ctx))
    return RuntimesReport(len(cases), int(tokens.all), folds, rows, queries)
