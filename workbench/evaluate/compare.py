"""Every tool-search engine on the same labelled queries and the same token table.

HoloDeck's filter (``holodeck``) and the strategy engines of ``workbench.search.strategies``
(docs/strategies.md). Each engine is measured at its defaults and at its best setting; HoloDeck
also at the agent's own block. The figures are docs/json.md's (hit, recall, top1, mrr, mean tokens
sent, reduction), computed with :mod:`workbench.evaluate.metrics`' per-case rules and means,
tokens under each engine's own accounting.

*Best* is chosen the same way for every engine and measured held-out: the tuner's default rule
(the knee of the engine's front of recall against tokens, :func:`workbench.evaluate.budget.knee`),
chosen on four folds and measured on the fifth, five times over.
For ``holodeck`` that is ``tune`` itself over its whole sweep; for the other engines it is their
``grid()`` (the knobs each can vary from one search). The setting shown is the one chosen on every
case. *Best* is the best within that rule, which the report states (:func:`rule_json`): it is
never worse than the default by the rule's own criterion (:func:`best_within_rule`: a default
the rule prefers is the best).

:func:`compare` is what ``holo-tune compare`` prints and the dashboard's Compare-engines view
shows; it is plain and thread-safe to call from a worker (``on_progress(done, total)`` feeds a
progress bar, and raising from it stops the run).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog
from workbench.config import AgentConfig
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.budget import KNEE_TOLERANCE, Budget, knee
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.folds import cross_fit
from workbench.evaluate.intervals import Interval
from workbench.evaluate.metrics import (
    CaseResult,
    Metrics,
    Progress,
    Ranker,
    aggregate,
    ci95,
    ci95_json,
    evaluate,
)
from workbench.evaluate.runs import tune_cases
from workbench.evaluate.tuner import DEFAULT_FOLDS, knee_text
from workbench.search.delivery import runtime_engine, runtime_methods
from workbench.search.embedders import EmbedderChoice
from workbench.search.strategies import Strategy, build_strategy
from workbench.search.strategies.base import StrategyResult
from workbench.search.strategies.registry import engines_of, get_engine
from workbench.search.types import FloatArray, IntArray
from workbench.tokens import TokenTable

#: Called with an engine's name as its measurement starts.
EngineStarted = Callable[[str], None]


class Opened(Protocol):
    """What :func:`compare` needs of an opened agent (``workbench.workspace.Workspace``)."""

    @property
    def agent(self) -> AgentConfig: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def tokens(self) -> TokenTable: ...

    @property
    def engine(self) -> Ranker: ...

    @property
    def embedder(self) -> EmbedderChoice: ...

    @property
    def setting(self) -> ToolFiltering: ...


@dataclass(frozen=True)
class CompareRow:
    """One engine at one setting, with its figures."""

    engine: str
    #: ``default``, ``agent`` (HoloDeck: the YAML's block) or ``best``.
    setting: str
    params: dict[str, Any]
    metrics: Metrics
    #: True when the figures are held-out (``best`` rows).
    heldout: bool = False
    #: What the reader must know to read the row (e.g. an engine running without its embedder).
    note: str | None = None
    #: 95 % intervals of hit, recall, top1 and mrr (``metrics.ci95``), over the row's cases.
    ci95: dict[str, Interval] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "setting": self.setting,
            "params": self.params,
            "heldout": self.heldout,
            "note": self.note,
            "metrics": self.metrics.to_json(),
            "ci95": ci95_json(self.ci95),
        }


@dataclass(frozen=True)
class CurvePoint:
    """One setting of one engine on the recall-versus-tokens plane (means over every case)."""

    engine: str
    params: dict[str, Any]
    recall: float
    tokens: float

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "params": self.params,
            "recall": self.recall,
            "tokens_selected_mean": self.tokens,
        }


@dataclass(frozen=True)
class CompareReport:
    """The rows of the table, and every engine's settings as points for a recall/tokens plot:
    each grid point of the strategy engines, HoloDeck's Pareto front (in-sample)."""

    cases: int
    tokens_all: int
    encoding: str
    exact: bool
    rows: list[CompareRow]
    points: list[CurvePoint] = dataclasses.field(default_factory=list)
    folds: int = DEFAULT_FOLDS

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "tokens": {"all": self.tokens_all, "encoding": self.encoding, "exact": self.exact},
            "best_rule": rule_json(self.tokens_all, self.folds),
            "rows": [row.to_json() for row in self.rows],
            "points": [point.to_json() for point in self.points],
        }

    def engines(self) -> list[str]:
        """The engines of the rows, in table order."""
        return list(dict.fromkeys(row.engine for row in self.rows))


# ------------------------------------------------------------------------------- the best rule


def rule_json(tokens_all: int, folds: int = DEFAULT_FOLDS) -> dict[str, Any]:
    """The rule that chooses the ``best`` rows, in words and figures (``compare --json``)."""
    return {
        "text": knee_text(tokens_all),
        "max_share": None,
        "max_tokens": None,
        "tolerance": KNEE_TOLERANCE,
        "folds": folds,
    }


def best_within_rule(default: CompareRow, best: CompareRow, tokens_all: int) -> CompareRow:
    """The ``best`` row, never worse than ``default`` by the rule's own criterion: when the rule
    (:func:`choose`, the knee) prefers the default's figures to the held-out best's, the default
    is the best (its figures, on every case); a best whose recall is below the default's keeps
    its figures and says why (the knee stops before the default's tokens)."""
    recall = np.array([best.metrics.recall, default.metrics.recall])
    tokens = np.array([best.metrics.tokens_selected_mean, default.metrics.tokens_selected_mean])
    if choose(recall, tokens, tokens_all, Budget()) == 1:
        note = "the default is the best within the rule (its figures, on every case)"
        return dataclasses.replace(default, setting=best.setting, note=_also(default.note, note))
    if best.metrics.recall < default.metrics.recall:
        note = (
            f"lower recall than the default, which sends {tokens[1]:,.0f} tokens: the knee of "
            "the front is cheaper"
        )
        return dataclasses.replace(best, note=_also(best.note, note))
    return best


#: Why an engine's request can weigh more than every tool's definition, when it does not say.
OVER_ALL_WHY = "its own accounting bills more than the tools' definitions (docs/strategies.md)"


def over_all(row: CompareRow, tokens_all: int, strategy: Strategy) -> CompareRow:
    """A row that sends more than all tools' definitions at once says so plainly, and why (the
    engine's ``over_all_why``): the search costs more here than loading every tool."""
    tokens = row.metrics.tokens_selected_mean
    if tokens_all <= 0 or tokens <= tokens_all:
        return row
    why = getattr(strategy, "over_all_why", OVER_ALL_WHY)
    note = (
        f"{tokens:,.0f} tokens per request, {row.metrics.saved_text()} than all {tokens_all:,} "
        f"(every tool's definition at once, which would cost less here): {why}"
    )
    return dataclasses.replace(row, note=_also(row.note, note))


def _also(note: str | None, more: str) -> str:
    return more if note is None else f"{note}; {more}"


# ------------------------------------------------------------------------------- per-case rules


def case_result(
    case: ResolvedCase, result: StrategyResult, wanted: npt.NDArray[np.bool_] | None = None
) -> CaseResult:
    """docs/json.md's per-case figures for a strategy's result (as ``metrics.score_case`` rules).

    ``wanted`` (optional, for speed) is the case's mask of expected tools over the catalog.
    """
    chosen = set(result.sent)
    sent = tuple(any(i in chosen for i in group) for group in case.groups)
    if wanted is None:
        wanted = expected_mask(case, int(result.scores.shape[0]))
    hits = np.flatnonzero(wanted[result.order]) if result.order.size else result.order
    return CaseResult(
        case=case,
        selected=result.sent,
        sent=sent,
        top1=bool(hits.size) and int(hits[0]) == 0,
        rank_of_first=int(hits[0]) + 1 if hits.size else None,
        tokens=result.tokens,
    )


def expected_mask(case: ResolvedCase, size: int) -> npt.NDArray[np.bool_]:
    """A catalog-sized mask of the tools that satisfy any of the case's expected names."""
    mask = np.zeros(size, dtype=np.bool_)
    for group in case.groups:
        mask[list(group)] = True
    return mask


def choose(recall: FloatArray, tokens: FloatArray, tokens_all: int, budget: Budget) -> int:
    """The tuner's rule over grid points (rows): with no budget flag the knee of their front
    (:func:`workbench.evaluate.budget.knee`); else the cheapest within tolerance of the best
    recall among those within the budget, the cheapest of all when none fits. Ties: grid
    order."""
    # Means of the same per-case figures summed in another order differ in the last bits (and
    # numpy's summation order can vary with memory alignment): round before comparing, so that
    # equal figures tie and grid order decides, the same in every process.
    recall = np.round(recall, 9)
    tokens = np.round(tokens, 6)
    if not budget.explicit:  # the knee of the front (budget.knee); ties: grid order
        return knee(tokens.tolist(), recall.tolist(), tokens_all)
    limit = budget.limit(tokens_all)
    fits = tokens <= limit + 1e-9
    if not fits.any():
        return int(np.flatnonzero(tokens <= tokens.min() + 1e-9)[0])
    best = recall[fits].max()
    pool = np.flatnonzero(fits & (recall >= best - budget.tolerance - 1e-12))
    return int(pool[np.lexsort((-recall[pool], tokens[pool]))][0])


@dataclass(frozen=True)
class GridFigures:
    """Every case under every grid point of one engine."""

    results: list[list[CaseResult]]  # [grid point][case]
    recall: FloatArray  # [grid point, case]
    tokens: FloatArray  # [grid point, case]

    def pick(self, cases: IntArray, tokens_all: int, budget: Budget) -> int:
        return choose(
            self.recall[:, cases].mean(axis=1),
            self.tokens[:, cases].mean(axis=1),
            tokens_all,
            budget,
        )


def grid_figures(
    strategy: Strategy, items: Sequence[ResolvedCase], on_progress: Progress | None = None
) -> GridFigures:
    """Every case searched once per case (``run_grid``), scored at every grid point."""
    per_point: list[list[CaseResult]] = [[] for _ in strategy.grid()]
    for done, case in enumerate(items, start=1):
        results = strategy.run_grid(case.query)
        wanted = expected_mask(case, int(results[0].scores.shape[0])) if results else None
        for point, result in enumerate(results):
            per_point[point].append(case_result(case, result, wanted))
        if on_progress is not None:
            on_progress(done, len(items))
    recall = np.array([[r.recall for r in rs] for rs in per_point], dtype=np.float64)
    tokens = np.array([[r.tokens for r in rs] for rs in per_point], dtype=np.float64)
    return GridFigures(per_point, recall, tokens)


def heldout(
    figures: GridFigures, tokens_all: int, budget: Budget, folds: int
) -> tuple[Metrics, list[CaseResult]]:
    """The rule's figures on folds it did not choose on (k-fold), and each case's result."""
    held = cross_fit(
        figures.recall.shape[1],
        folds,
        lambda fold: figures.pick(np.asarray(fold.train, dtype=np.int64), tokens_all, budget),
        lambda point, fold: [figures.results[point][c] for c in fold.test],
    )
    results = held.case_order()
    return aggregate(results, tokens_all), results


# ------------------------------------------------------------------------------------- engines


def params_json(params: Any) -> dict[str, Any]:
    """A params dataclass as plain JSON types."""
    return {key: _plain(value) for key, value in dataclasses.asdict(params).items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def params_text(engine: str, params: Mapping[str, Any]) -> str:
    """The knobs of one setting worth reading in a table cell (the CLI's and the view's)."""
    p = params
    if engine == "holodeck":
        text = f"{p['search_method']} top_k {p['top_k']} threshold {p['similarity_threshold']:.2f}"
        if p["always_include"]:
            text += f" always {len(p['always_include'])}"
        if p["always_include_top_n_used"]:
            text += f" top_n_used {p['always_include_top_n_used']}"
        return text
    return " ".join(f"{k} {p[k]}" for k in get_engine(engine).shown)


def measure_strategy(
    name: str,
    strategy: Strategy,
    cases: CaseSet,
    tokens_all: int,
    folds: int,
    on_progress: Progress | None = None,
) -> tuple[list[CompareRow], list[CurvePoint]]:
    """An engine's ``default`` row (its build parameters), its ``best`` row, and every grid
    point's mean recall and tokens.

    Every grid includes the engine's own parameters, so the default row is read off the grid's
    results (``run_grid`` equals ``run`` at each point) instead of searching twice.
    """
    items = cases.cases
    grid = strategy.grid()
    figures = grid_figures(strategy, items, on_progress)
    if strategy.params in grid:
        per_case = figures.results[grid.index(strategy.params)]
    else:
        per_case = [case_result(c, strategy.run(c.query)) for c in items]
    default = aggregate(per_case, tokens_all)
    rows = [CompareRow(name, "default", params_json(strategy.params), default, ci95=ci95(per_case))]
    if len(grid) > 1 and len(items) >= folds:
        budget = Budget()
        everyone = np.arange(len(items), dtype=np.int64)
        chosen = grid[figures.pick(everyone, tokens_all, budget)]
        metrics, results = heldout(figures, tokens_all, budget, folds)
        best = CompareRow(
            name, "best", params_json(chosen), metrics, heldout=True, ci95=ci95(results)
        )
        rows.append(best_within_rule(rows[0], best, tokens_all))
    points = []
    if items:
        for params, recall, tokens in zip(
            grid, figures.recall.mean(axis=1), figures.tokens.mean(axis=1), strict=True
        ):
            points.append(CurvePoint(name, params_json(params), float(recall), float(tokens)))
    return rows, points


def _span(on_progress: Progress | None, low: float, high: float) -> Progress | None:
    """``on_progress`` for one part of a stage: its ``(done, total)`` mapped onto
    ``[low, high]`` of the stage (fractions)."""
    if on_progress is None:
        return None

    def step(done: int, total: int) -> None:
        share = done / total if total else 1.0
        on_progress(round((low + (high - low) * share) * 1000), 1000)

    return step


def measure_holodeck(
    ws: Opened, cases: CaseSet, folds: int, on_progress: Progress | None = None
) -> tuple[list[CompareRow], list[CurvePoint]]:
    """HoloDeck at its defaults (filter enabled), at the agent's block, and tuned; the tuner's
    Pareto front as points."""
    tokens = ws.tokens
    engine = runtime_engine(ws.engine, ws.agent.agent)  # what the runtime runs
    rows: list[CompareRow] = []
    tuning = len(cases) >= folds
    # Ranking every case: once per evaluation, three times (one per method) for the tuner.
    share = 0.2 if tuning else 0.5
    settings = (("default", ToolFiltering(enabled=True)), ("agent", ws.setting))
    for n, (label, setting) in enumerate(settings):
        step = _span(on_progress, n * share, (n + 1) * share)
        report = evaluate(engine, ws.catalog, tokens, cases, setting, on_progress=step)
        note = None
        if report.scored_by:
            note = f"{setting.search_method} is {report.scored_by} here"
            if ws.embedder.runtime_fallback:
                note += " (the runtime's fallback)"
            else:  # HoloDeck embeds at run time: only holo-tune has no embedder
                note += f": {ws.embedder.bm25_reason()}"
        rows.append(
            CompareRow(
                "holodeck",
                label,
                setting.block(),
                report.metrics,
                note=note,
                ci95=ci95(report.per_case),
            )
        )
    if tuning:
        tuned = tune_cases(
            engine,
            ws.catalog,
            tokens,
            cases,
            ws.setting,
            Budget(),
            folds=folds,
            runtime_methods=runtime_methods(ws.agent.agent),
            on_progress=_span(on_progress, 2 * share, 1.0),
        )
        best = CompareRow(
            "holodeck",
            "best",
            tuned.outcome.setting.block(),
            tuned.outcome.heldout,
            heldout=True,
            ci95=ci95(tuned.heldout_by_case),
        )
        rows.append(best_within_rule(rows[0], best, int(tokens.all)))
        front = tuned.outcome.front
        return rows, [CurvePoint("holodeck", p.setting.block(), p.recall, p.tokens) for p in front]
    return rows, []


def stages(engines: Sequence[str] | None = None) -> list[str]:
    """The passes over the cases :func:`compare` makes, in order: HoloDeck's, then each engine's
    (every registered one by default) and each of its variants' (``"anthropic (regex)"``)."""
    out = ["holodeck"]
    for engine in engines_of(engines):
        out.append(engine.name)
        out += [f"{engine.name} ({variant.label})" for variant in engine.variants]
    return out


def compare(
    ws: Opened,
    cases: CaseSet,
    *,
    engines: Sequence[str] | None = None,
    folds: int = DEFAULT_FOLDS,
    on_engine: EngineStarted | None = None,
    on_progress: Progress | None = None,
) -> CompareReport:
    """Every engine on ``cases``: the table ``compare`` prints (and the dashboard's numbers).

    ``on_engine(name)`` is called as each engine starts; ``on_progress(done, total)`` counts
    cases over every pass (:func:`stages`), ``total`` = passes x cases.
    """
    tokens_all = int(ws.tokens.all)
    passes = stages(engines)
    per_pass = max(len(cases), 1)
    total = len(passes) * per_pass

    def stage(index: int) -> Progress | None:
        if on_engine is not None:
            on_engine(passes[index])
        if on_progress is None:
            return None
        on_progress(index * per_pass, total)

        def step(done: int, of: int) -> None:
            share = done / of if of else 1.0
            on_progress(index * per_pass + round(share * per_pass), total)

        return step

    rows, points = measure_holodeck(ws, cases, folds, stage(0))
    at = 1
    embedder = ws.embedder.embedder
    for engine in engines_of(engines):
        name = engine.name
        strategy = build_strategy(name, ws.catalog, ws.tokens, embedder=embedder)
        found, curve = measure_strategy(name, strategy, cases, tokens_all, folds, stage(at))
        found = [over_all(row, tokens_all, strategy) for row in found]
        at += 1
        if engine.no_embedder_note is not None and embedder is None:
            found = [dataclasses.replace(row, note=engine.no_embedder_note) for row in found]
        rows += found
        points += curve
        for variant in engine.variants:  # a pass of its own (no over_all note, as before)
            params = engine.params(**variant.changes)
            other = build_strategy(name, ws.catalog, ws.tokens, params, embedder=embedder)
            found, curve = measure_strategy(name, other, cases, tokens_all, folds, stage(at))
            at += 1
            label = f" ({variant.label})"
            rows += [dataclasses.replace(row, setting=row.setting + label) for row in found]
            points += curve
    if on_progress is not None:
        on_progress(total, total)
    return CompareReport(
        cases=len(cases),
        tokens_all=tokens_all,
        encoding=ws.tokens.encoding,
        exact=ws.tokens.exact,
        rows=rows,
        points=points,
        folds=folds,
    )
