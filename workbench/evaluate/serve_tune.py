"""``tune --runtime serve``: holo-tune's engine fitted on the user's cases, held out, under
serve's bill, and judged against what serve runs now.

The fit is :func:`~workbench.evaluate.holo_fit.fit_holo` over two field variants (the default
fields, and the name weighted 3 with the parameters left out). Each search is billed as serve
bills it (:class:`~workbench.runtimes.serve.ServeSearch`): a task is the request with the pins
and the two meta tools, then, unless the pins already hold every tool the task needs, the same
request again with the search's answer (the found tools' definitions as JSON text). So the
engine's token table here is each tool's answer text, and the budget per task, less the two
requests' fixed part, is the budget of each search, which the fit fills.

With no budget flag the fit keeps serve's default of 5 tools a search; ``--max-tokens`` (and
``--min-reduction``) make each search fill the budget instead. The verdict is every tuner's
(:mod:`workbench.evaluate.verdict`): held-out figures against the current settings' on the same
cases; a proposal measured worse is not advised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.catalog.models import Catalog
from workbench.evaluate.budget import FILTER_FIELDS, Budget
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.holo_fit import HoloFit, Target, fit_holo
from workbench.evaluate.verdict import Verdict, judge
from workbench.search.embedders.cache import ToolEmbeddingCache
from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.neighbours import Labelled
from workbench.search.holo.settings import DEFAULT_FIELDS, HoloSettings
from workbench.search.selection import pinned_indices
from workbench.search.serving import answer_tokens
from workbench.search.strategies.base import TokenBill, definitions_tokens, request_tokens
from workbench.search.strategies.holo import META_TOOLS
from workbench.search.types import Embedder, FloatArray

#: The field variants the fit chooses between.
FIELD_VARIANTS: tuple[dict[str, int], ...] = (
    dict(DEFAULT_FIELDS),
    {**DEFAULT_FIELDS, "name": 3, "parameters": 0},
)
#: Tools a search returns with no budget flag (serve's default).
DEFAULT_TOP_K = 5


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One case as serve would serve it: found or not, and the task's tokens."""

    hit: bool
    recall: float
    tokens: int


@dataclass(frozen=True)
class ServeTuneReport:
    """The fit, the settings it proposes, and the verdict against the current settings."""

    fit: HoloFit
    settings: HoloSettings
    current: HoloSettings
    #: Each case held out (case order), as a task under serve's bill.
    heldout: tuple[TaskResult, ...]
    #: Each case under the current settings, the same way.
    now: tuple[TaskResult, ...]
    verdict: Verdict
    budget: Budget
    target: Target
    #: The tokens of a task besides the search's answer (both requests' pins, meta tools,
    #: ``func_end``).
    fixed: int
    tokens_all: int

    def mean(self, results: Sequence[TaskResult], key: str) -> float:
        return float(np.mean([getattr(r, key) for r in results])) if results else 0.0

    @property
    def proposed(self) -> HoloSettings:
        """What to run: the fitted settings, or the current ones where the verdict keeps them."""
        return self.current if self.verdict.kept else self.settings

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.proposed.to_json(),
            "fitted": self.settings.to_json(),
            "current": self.current.to_json(),
            "verdict": self.verdict.to_json(),
            "target": self.target.to_json(),
            "budget": self.budget.to_json(FILTER_FIELDS),
            "task_tokens_fixed": self.fixed,
            "heldout": {
                "recall": round(self.mean(self.heldout, "recall"), 6),
                "hit": round(self.mean(self.heldout, "hit"), 6),
                "tokens": round(self.mean(self.heldout, "tokens"), 3),
            },
            "now": {
                "recall": round(self.mean(self.now, "recall"), 6),
                "hit": round(self.mean(self.now, "hit"), 6),
                "tokens": round(self.mean(self.now, "tokens"), 3),
            },
            "fit": self.fit.to_json(),
        }


def settings_words(s: HoloSettings) -> str:
    """The settings in a few words (a compare row): the signals with their weights and what a
    search returns."""
    signals = " + ".join(f"{k} {v:g}" for k, v in s.weights.items() if v) or "no signal"
    search = f"top_k {s.top_k}" if s.max_tokens is None else f"fills {s.max_tokens:,} tokens"
    refuse = "" if s.threshold is None else f", refuses below {s.threshold:.2f}"
    return f"{signals}, {search}{refuse}"


def fixed_tokens(bill: TokenBill, pins: Sequence[int]) -> int:
    """A task's tokens besides the search's answer: the first request (pins, meta tools,
    ``func_end``) twice, the second request carrying the answer."""
    meta = definitions_tokens(bill, list(META_TOOLS))
    return 2 * request_tokens(bill, list(pins), meta)


def tune_serve(
    catalog: Catalog,
    bill: TokenBill,
    cases: CaseSet,
    budget: Budget,
    *,
    tokens_all: int,
    embedder: Embedder | None,
    embedder_spec: str | None,
    cache: ToolEmbeddingCache | None = None,
    current: HoloSettings | None = None,
    folds: int = 5,
    engines: Sequence[HoloEngine] | None = None,
    neighbours: bool | None = None,
) -> ServeTuneReport:
    """Fit serve's engine on ``cases`` held out within ``budget`` and judge it against
    ``current`` (None: serve's defaults). ``engines``: :func:`serve_engines` already built
    (their signals cached: another budget on the same cases refits in a fraction of the time).
    ``neighbours``: whether the fit may use the labelled cases' neighbour signal (None: when
    serve can read them back, from a cases file; a figure that is never written may always)."""
    now = current or HoloSettings(embedder=embedder_spec)
    pins = pinned_indices(catalog, now.pins)
    fixed = fixed_tokens(bill, pins)
    answer = answer_tokens(catalog, bill)
    target = _target(budget, tokens_all, fixed)
    cases_file = _cases_file(cases)
    if engines is None:
        engines = serve_engines(catalog, bill, embedder, cache)
    base = HoloSettings(
        pins=now.pins, embedder=embedder_spec if embedder is not None else None, cases=cases_file
    )
    use_neighbours = bool(cases_file) if neighbours is None else neighbours
    allowed = None if use_neighbours else _signals_without_neighbours(engines[0])
    fit = fit_holo(
        engines,
        cases.cases,
        target=target,
        no_answer=[case.query for case in cases.no_answer],
        folds=folds,
        base=base,
        signals=allowed,
    )
    heldout = tuple(
        _task(case, fit.case_hit[i], fit.case_recall[i], fit.case_tokens[i], fixed, pins)
        for i, case in enumerate(cases.cases)
    )
    measured = _measure(catalog, answer, embedder, cache, now, cases.cases, fixed, pins)
    verdict = judge(
        list(heldout),
        list(measured),
        budget=budget,
        tokens_all=tokens_all,
        same=fit.settings == now,
        unit="task",
    )
    return ServeTuneReport(
        fit, fit.settings, now, heldout, measured, verdict, budget, target, fixed, tokens_all
    )


def measure_settings(
    catalog: Catalog,
    bill: TokenBill,
    cases: Sequence[ResolvedCase],
    settings: HoloSettings,
    embedder: Embedder | None,
    cache: ToolEmbeddingCache | None = None,
) -> tuple[TaskResult, ...]:
    """Each case under fixed ``settings``, as a task under serve's bill, measured as
    :func:`tune_serve` measures what serve runs now (the dashboard's Write judges the knobs'
    settings against that with it)."""
    pins = pinned_indices(catalog, settings.pins)
    fixed = fixed_tokens(bill, pins)
    answer = answer_tokens(catalog, bill)
    return _measure(catalog, answer, embedder, cache, settings, cases, fixed, pins)


def serve_engines(
    catalog: Catalog,
    bill: TokenBill,
    embedder: Embedder | None,
    cache: ToolEmbeddingCache | None = None,
) -> list[HoloEngine]:
    """One engine per field variant the fit chooses between, billed by each tool's answer."""
    answer = answer_tokens(catalog, bill)
    return [
        HoloEngine(catalog, answer, embedder, fields=fields, embedding_cache=cache)
        for fields in FIELD_VARIANTS
    ]


def _target(budget: Budget, tokens_all: int, fixed: int) -> Target:
    """Serve's default ``top_k`` with no budget flag; else each search fills what the budget
    leaves after the task's fixed tokens (at least one token: the best tool is returned)."""
    if budget.max_tokens is None and budget.min_reduction is None:
        return Target(top_k=DEFAULT_TOP_K)
    limit = budget.limit(tokens_all)
    return Target(top_k=None, max_tokens=max(int(limit) - fixed, 1))


def _task(
    case: ResolvedCase,
    hit: bool | np.bool_,
    recall: float,
    tokens: float,
    fixed: int,
    pins: Sequence[int],
) -> TaskResult:
    """A case's search figures as a task: the pins alone when they hold every group (one
    request, no search), else the search's figures and the two requests' tokens."""
    pinned = set(pins)
    if pinned and all(pinned & set(group) for group in case.groups):
        return TaskResult(True, 1.0, fixed // 2)
    return TaskResult(bool(hit), float(recall), round(fixed + tokens))


def _measure(
    catalog: Catalog,
    answer: FloatArray,
    embedder: Embedder | None,
    cache: ToolEmbeddingCache | None,
    settings: HoloSettings,
    cases: Sequence[ResolvedCase],
    fixed: int,
    pins: Sequence[int],
) -> tuple[TaskResult, ...]:
    """Each case under fixed ``settings`` (the engine's own search; its neighbours, if any, from
    its own cases file), as a task."""
    labelled = labelled_of(settings, catalog)
    dense = (
        embedder if settings.weights.get("dense") or settings.weights.get("server_text") else None
    )
    engine = HoloEngine(
        catalog, answer, dense, fields=settings.fields, embedding_cache=cache, labelled=labelled
    )
    out = []
    for case in cases:
        found = set(engine.search(case.query, settings).indices)
        hits = [bool(found & set(group)) for group in case.groups]
        recall = sum(hits) / len(hits)
        tokens = float(answer[list(found)].sum()) if found else 0.0
        out.append(_task(case, any(hits), recall, tokens, fixed, pins))
    return tuple(out)


def labelled_of(settings: HoloSettings, catalog: Catalog) -> Labelled | None:
    """The labelled cases the neighbour signal reads (None: no ``cases``, or its weight is 0):
    each case's expected tools resolved against ``catalog``."""
    if not settings.cases or not settings.weights.get("neighbour", 0.0):
        return None
    from workbench.evaluate.cases import load_cases, resolve_cases

    resolved = resolve_cases(load_cases(settings.cases), catalog)
    queries = [case.query for case in resolved.cases]
    expected = [sorted({i for group in case.groups for i in group}) for case in resolved.cases]
    return Labelled.of(queries, expected)


def _cases_file(cases: CaseSet) -> str | None:
    """The cases file serve's neighbour signal can read (a cases file, not an agent's
    test_cases), as an absolute path."""
    source = cases.source
    if source is None or source.kind == "agent":
        return None
    return str(Path(source.path).resolve())


def _signals_without_neighbours(engine: HoloEngine) -> tuple[str, ...]:
    from workbench.search.holo.fusion import SIGNALS

    dense = ("dense", "server_text") if engine.embedder is not None else ()
    return tuple(
        s for s in SIGNALS if s != "neighbour" and (s in dense or s not in ("dense", "server_text"))
    )
