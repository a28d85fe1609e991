"""Metrics of one setting on labelled cases, computed by running the runtime's selection per case.

Per case (docs/json.md, ``eval --json``): *hit* = any expected tool is sent; *recall* = the share of
expected tools sent; *top1* = the best-ranked tool is expected; *mrr* = 1 / rank of the first
expected tool in the full ranking (0 when absent); *tokens* = what the sent tool definitions cost.
The set's figures are means over cases, and ``token_reduction = 1 - mean sent / all``.

This is the reference the sweep (:mod:`workbench.evaluate.sweep`) must agree with exactly: here the
selection is :func:`workbench.search.selection.select` itself, called once per case.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.intervals import Interval, bootstrap_mean, wilson
from workbench.search.selection import select
from workbench.search.types import IntArray, Ranking

Progress = Callable[[int, int], None]
"""``on_progress(done, total)``: called as cases are scored (the TUI's progress bar)."""


class Ranker(Protocol):
    """What evaluation needs of a search engine: a full ranking of the catalog for a query."""

    def rank(self, query: str, method: str) -> Ranking: ...


class TokenCounts(Protocol):
    """What evaluation needs of a token table (``workbench.tokens.TokenTable``)."""

    @property
    def per_tool(self) -> npt.NDArray[np.int64]: ...

    @property
    def overhead(self) -> int: ...

    @property
    def all(self) -> int: ...


def tokens_sent(tokens: TokenCounts, indices: Iterable[int]) -> int:
    """Tokens of the tool definitions in ``indices``, plus the once-per-request overhead."""
    picked = list(indices)
    if not picked:
        return 0
    return int(np.asarray(tokens.per_tool)[picked].sum()) + int(tokens.overhead)


@dataclass(frozen=True, slots=True)
class CaseResult:
    """How one case fared under one setting."""

    case: ResolvedCase
    selected: tuple[int, ...]
    #: Which expected names were sent (parallel to ``case.names``).
    sent: tuple[bool, ...]
    top1: bool
    rank_of_first: int | None
    tokens: int

    @property
    def hit(self) -> bool:
        return any(self.sent)

    @property
    def recall(self) -> float:
        return sum(self.sent) / len(self.sent)

    @property
    def mrr(self) -> float:
        return 0.0 if self.rank_of_first is None else 1.0 / self.rank_of_first

    @property
    def missed(self) -> tuple[str, ...]:
        """Expected names that were not sent."""
        return tuple(n for n, ok in zip(self.case.names, self.sent, strict=True) if not ok)


@dataclass(frozen=True, slots=True)
class Metrics:
    """Means over cases of the per-case figures (docs/json.md's ``metrics`` object)."""

    cases: int
    hit: float
    recall: float
    top1: float
    mrr: float
    tokens_selected_mean: float
    tokens_all: int

    @property
    def token_reduction(self) -> float:
        if self.tokens_all <= 0:
            return 0.0
        return 1.0 - self.tokens_selected_mean / self.tokens_all

    def saved_text(self) -> str:
        """The reduction as a table's "saved" cell (``62.5%``); a setting that sends more than
        every tool at once says so (``60.2% more``), never a negative saving."""
        reduction = self.token_reduction
        return f"{reduction:.1%}" if reduction >= 0 else f"{-reduction:.1%} more"

    def to_json(self) -> dict[str, Any]:
        return {
            "hit": self.hit,
            "recall": self.recall,
            "top1": self.top1,
            "mrr": self.mrr,
            "tokens_selected_mean": self.tokens_selected_mean,
            "tokens_all": self.tokens_all,
            "token_reduction": self.token_reduction,
        }


def aggregate(results: Sequence[CaseResult], tokens_all: int) -> Metrics:
    """Mean figures over ``results`` (all zero for no results).

    Means are computed exactly (recall as a fraction, mrr with ``math.fsum``) and rounded once,
    so that the sweep, which sums in another order, gives the very same floats.
    """
    n = len(results)
    if n == 0:
        return Metrics(0, 0.0, 0.0, 0.0, 0.0, 0.0, tokens_all)
    recall = sum((Fraction(sum(r.sent), len(r.sent)) for r in results), Fraction(0))
    return Metrics(
        cases=n,
        hit=sum(r.hit for r in results) / n,
        recall=float(recall / n),
        top1=sum(r.top1 for r in results) / n,
        mrr=math.fsum(r.mrr for r in results) / n,
        tokens_selected_mean=sum(r.tokens for r in results) / n,
        tokens_all=tokens_all,
    )


def score_case(
    case: ResolvedCase, ranking: Ranking, selected: Sequence[int], tokens: TokenCounts
) -> CaseResult:
    """The per-case figures for one ranking and the selection made from it."""
    chosen = set(selected)
    sent = tuple(any(i in chosen for i in group) for group in case.groups)
    wanted = {i for group in case.groups for i in group}
    order = np.asarray(ranking.order)
    hits = np.flatnonzero(np.isin(order, list(wanted)))
    rank_of_first = int(hits[0]) + 1 if hits.size else None
    top1 = bool(order.size) and int(order[0]) in wanted
    return CaseResult(
        case=case,
        selected=tuple(selected),
        sent=sent,
        top1=top1,
        rank_of_first=rank_of_first,
        tokens=tokens_sent(tokens, selected),
    )


#: ``Case.origin`` of queries a model wrote (``holo-tune cases generate``).
GENERATED = "generated"


def ci95(results: Sequence[CaseResult]) -> dict[str, Interval]:
    """95 % intervals of the set's figures: Wilson for hit and top1 (proportions), a seeded
    bootstrap for recall and mrr (means of per-case fractions); see
    :mod:`workbench.evaluate.intervals`."""
    n = len(results)
    return {
        "hit": wilson(sum(r.hit for r in results), n),
        "recall": bootstrap_mean([r.recall for r in results]),
        "top1": wilson(sum(r.top1 for r in results), n),
        "mrr": bootstrap_mean([r.mrr for r in results]),
    }


def ci95_json(intervals: dict[str, Interval]) -> dict[str, list[float]]:
    """``{"hit": [lo, hi], ...}``: the ``ci95`` object of ``eval --json``."""
    return {name: [lo, hi] for name, (lo, hi) in intervals.items()}


def by_origin(results: Sequence[CaseResult], tokens_all: int) -> dict[str, list[CaseResult]]:
    """The results split into hand-labelled (``labelled``: any case not marked ``generated``,
    the agent's test_cases too) and ``generated`` cases, when the set holds both (else ``{}``):
    generated queries echo the tool text, which flatters BM25, so they are reported apart."""
    generated = [r for r in results if r.case.case.origin == GENERATED]
    labelled = [r for r in results if r.case.case.origin != GENERATED]
    if not generated or not labelled:
        return {}
    return {"labelled": labelled, GENERATED: generated}


def only_generated(results: Sequence[CaseResult]) -> bool:
    """Every case was written by a model: a verdict on them alone flatters word matching."""
    return bool(results) and all(r.case.case.origin == GENERATED for r in results)


@dataclass(slots=True)
class EvalReport:
    """A setting measured on a case set: overall, per category and per case."""

    setting: ToolFiltering
    metrics: Metrics
    per_case: list[CaseResult]
    by_category: dict[str, Metrics] = field(default_factory=dict)
    #: What produced the scores when it differs from the setting's method (e.g. BM25 fallback).
    scored_by: str | None = None
    #: Why the runtime would not score as asked (the first fallback met), e.g. no embeddings.
    fallback: str | None = None

    @property
    def misses(self) -> list[CaseResult]:
        """Cases with at least one expected tool not sent (what to look at first)."""
        return [r for r in self.per_case if not all(r.sent)]

    def ci95(self) -> dict[str, Interval]:
        return ci95(self.per_case)

    def to_json(self, catalog: Catalog) -> dict[str, Any]:
        """docs/json.md's ``eval --json`` object, with ``ci95`` and (generated and labelled cases
        together) ``by_source``."""
        return {
            "cases": self.metrics.cases,
            "setting": self.setting.block(),
            "metrics": self.metrics.to_json(),
            "ci95": ci95_json(self.ci95()),
            **origin_json(self.per_case, self.metrics.tokens_all),
            "per_case": per_case_json(self.per_case, catalog),
        }


def origin_json(results: Sequence[CaseResult], tokens_all: int) -> dict[str, Any]:
    """``{"by_source": {"labelled": {...}, "generated": {...}}}`` when the set holds both kinds
    (each: ``cases``, ``metrics``, ``ci95``), else ``{}``."""
    split = by_origin(results, tokens_all)
    if not split:
        return {}
    return {
        "by_source": {
            name: {
                "cases": len(part),
                "metrics": aggregate(part, tokens_all).to_json(),
                "ci95": ci95_json(ci95(part)),
            }
            for name, part in split.items()
        }
    }


def per_case_json(results: Sequence[CaseResult], catalog: Catalog) -> list[dict[str, Any]]:
    """``eval --json``'s ``per_case`` list (what was sent, as a sorted set of full names)."""
    names = catalog.names()
    return [
        {
            "query": r.case.query,
            "expected": list(r.case.names),
            "selected": sorted(names[i] for i in r.selected),
            "rank_of_first": r.rank_of_first,
            **({"source": r.case.case.origin} if r.case.case.origin is not None else {}),
        }
        for r in results
    ]


def by_category(results: Sequence[CaseResult], tokens_all: int) -> dict[str, Metrics]:
    """Metrics per case category (cases without one are left out), categories sorted."""
    groups: dict[str, list[CaseResult]] = {}
    for r in results:
        if r.case.category is not None:
            groups.setdefault(r.case.category, []).append(r)
    return {name: aggregate(groups[name], tokens_all) for name in sorted(groups)}


def evaluate(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet | Sequence[ResolvedCase],
    setting: ToolFiltering,
    *,
    usage: IntArray | None = None,
    on_progress: Progress | None = None,
) -> EvalReport:
    """Measure ``setting``: rank each case, run the runtime's selection, score what it sent.

    With ``enabled: false`` the runtime sends every tool, and that is what is measured.
    """
    items = cases.cases if isinstance(cases, CaseSet) else list(cases)
    everything = tuple(range(len(catalog)))
    results: list[CaseResult] = []
    scored_by: set[str] = set()
    fallback: str | None = None
    for done, case in enumerate(items, start=1):
        ranking = engine.rank(case.query, setting.search_method)
        scored_by.add(ranking.method)
        fallback = fallback or ranking.fallback
        if setting.enabled:
            selected = select(ranking, setting, catalog, usage=usage).indices
        else:
            selected = everything
        results.append(score_case(case, ranking, selected, tokens))
        if on_progress is not None:
            on_progress(done, len(items))
    actual = ",".join(sorted(scored_by))
    return EvalReport(
        setting=setting,
        metrics=aggregate(results, int(tokens.all)),
        per_case=results,
        by_category=by_category(results, int(tokens.all)),
        scored_by=actual if actual and actual != setting.search_method else None,
        fallback=fallback,
    )
