"""The fit of holo-tune's own engine (:mod:`workbench.search.holo`), held out.

What is chosen, on each fold's training cases (the folds every runtime's tuner uses:
:func:`~workbench.evaluate.folds.folds_of`):

- the *field weights* (one :class:`~workbench.search.holo.engine.HoloEngine` per variant: the
  lexical index and the tool vectors are built per ``fields``);
- each *signal's weight* from a small grid (:data:`GRID`: dense, lexical, name, neighbour,
  server, cost) and ``name_first``: a walk over the grid from the default, one dimension at a
  time, taking a value only when it raises the training cases' mean recall, until a whole pass
  changes nothing (:data:`MAX_PASSES` at most);
- what a search returns: the target's ``top_k``, or tools filling the target's ``max_tokens``;
- the no-answer *threshold*, when there are cases that expect no tool (``expected: []``): the
  one that scores best on the training cases, an answerable case counting its recall when not
  refused and a no-answer case counting 1 when refused (ties: the lower threshold).

Each held-out case is measured under the setting chosen without it. The *neighbour* signal is
cross-fitted: a held-out case's neighbours are the training fold's labelled queries only, and a
training case's the other training cases (never itself).

*Signals earn their place* (backward elimination with the one-standard-error rule): the fit is
run again without each signal its folds chose, on the same folds; a signal is left out when the
rule without it holds out within one standard error of the best rule met so far (the standard
error of the paired per-case differences:
:func:`~workbench.evaluate.intervals.paired_standard_error`), the least useful first, until
every signal left earns its place. The rule kept is thus the simplest met whose held-out recall
is within noise of the best one's: a signal that lifts nothing (a constant, noise) goes, and a
signal is not left out merely because 94 cases cannot put its lift beyond a 95 % interval, nor
are signals dropped one after another until their losses add up. Each signal's evidence also
carries the 95 % interval of its lift
(:func:`~workbench.evaluate.intervals.paired_difference`).

Which signals were left out was read off every case's held-out figure, so the rule they give is
not held out by the same figures: the whole procedure is held out again, *nested* (on each fold
the elimination runs k-fold within the fold's training cases, and the fold's setting is chosen
with the signals it kept). That figure is the one reported. When it is more than one standard
error below the held-out figure of the rule with every signal allowed (which involves no choice
of signals), leaving signals out costs more than it simplifies: every signal stays and that
rule's figures are reported (on LiveMCPBench with MiniLM the nested elimination held out 0.410
against 0.456: the elimination on 75 cases left out signals the other 19 needed). The final
settings are the kept signals' choice on every case, and the gap is their figure there minus
the held-out one.

Speed: every case's raw signals are computed once per engine (the query vectors in one call),
z-scored per row into case x tool matrices, and every grid point is fused and selected for all
cases at once with numpy (a point's per-case figures are kept, so the folds' walks and the
eliminations share them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from workbench.evaluate.cases import ResolvedCase
from workbench.evaluate.folds import Fold, folds_of, inner_folds, run_folds
from workbench.evaluate.intervals import (
    Interval,
    bootstrap_mean,
    paired_difference,
    paired_standard_error,
    wilson,
)
from workbench.evaluate.tuner import DEFAULT_FOLDS, fold_assignment, gap
from workbench.search.holo.engine import EVERY_TOOL_SIGNALS, HoloEngine, Signals
from workbench.search.holo.fusion import SIGNALS
from workbench.search.holo.names import selected
from workbench.search.holo.neighbours import Labelled, neighbour_scores, tfidf_similarity
from workbench.search.holo.settings import DEFAULT_WEIGHTS, HoloSettings
from workbench.search.types import FloatArray

BoolArray = npt.NDArray[np.bool_]

#: Each signal's weights tried (the default's weight is always among them).
GRID: dict[str, tuple[float, ...]] = {
    "dense": (0.0, 1.0),
    "lexical": (0.0, 0.25, 0.5, 1.0),
    "name": (0.0, 0.25, 0.5, 1.0),
    "neighbour": (0.0, 0.25, 0.5, 1.0),
    "server": (0.0, 0.5, 1.0),
    "cost": (0.0, 0.1, 0.25),
    "server_text": (0.0, 0.25, 0.5, 1.0),
}
#: The signals scored from the query's vector (none without an embedder).
DENSE_SIGNALS = ("dense", "server_text")
#: Passes of the walk over the grid, at most.
MAX_PASSES = 4
#: A step must raise the mean training recall by more than this.
EPS = 1e-9
#: The grid contexts of a fold's inner rounds are numbered from ``INNER * (fold + 1)`` (the
#: outer folds' are 0 to k - 1, every case's -1).
INNER = 1000
#: Added to a named tool's score with ``name_first`` (above any fused score).
_NAMED = 1e6


@dataclass(frozen=True)
class Target:
    """What one search returns: ``top_k`` tools, or tools filling ``max_tokens`` (tool tokens of
    the engine's table; ``top_k`` then caps their number, None: no cap)."""

    top_k: int | None = 5
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.top_k is None and self.max_tokens is None:
            raise ValueError("a target needs top_k or max_tokens")

    def to_json(self) -> dict[str, Any]:
        return {"top_k": self.top_k, "max_tokens": self.max_tokens}


@dataclass(frozen=True)
class Figures:
    """Means over cases, with their 95 % intervals (Wilson for hit, bootstrap otherwise)."""

    cases: int
    recall: float
    hit: float
    #: Tool tokens a search returns (the tools' definitions, no per-request overhead).
    tokens: float
    ci95: Mapping[str, Interval]

    @classmethod
    def of(cls, recall: FloatArray, hit: BoolArray, tokens: FloatArray) -> Figures:
        n = int(recall.size)
        return cls(
            cases=n,
            recall=float(recall.mean()) if n else 0.0,
            hit=float(hit.mean()) if n else 0.0,
            tokens=float(tokens.mean()) if n else 0.0,
            ci95={
                "recall": bootstrap_mean(recall),
                "hit": wilson(int(hit.sum()), n),
                "tokens": bootstrap_mean(tokens),
            },
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "recall": self.recall,
            "hit": self.hit,
            "tokens_mean": self.tokens,
            "ci95": {k: list(v) for k, v in self.ci95.items()},
        }


@dataclass(frozen=True)
class SignalEvidence:
    """Whether a signal earned its place, and the figures that say so."""

    signal: str
    kept: bool
    #: Held-out recall with the signal minus without it (None: never tried).
    lift: float | None
    #: 95 % interval of that paired difference (None: never tried).
    interval: Interval | None
    why: str
    #: The standard error of the paired difference the rule read: the rule without the signal
    #: against the best rule met (None: never tried).
    se: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "kept": self.kept,
            "lift": self.lift,
            "ci95": None if self.interval is None else list(self.interval),
            "se": self.se,
            "why": self.why,
        }


@dataclass(frozen=True)
class NoAnswer:
    """The threshold's held-out account: of the cases that expect no tool, how many a search
    refused; of the answerable cases, how many it wrongly refused."""

    cases: int
    refused: int
    answerable: int
    answerable_refused: int
    #: The final settings' threshold (None: refusing never paid on the training cases).
    threshold: float | None
    #: Why there is no held-out account (too few no-answer cases for the folds), else None.
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "refused": self.refused,
            "answerable": self.answerable,
            "answerable_refused": self.answerable_refused,
            "threshold": self.threshold,
            "note": self.note,
        }


@dataclass(frozen=True)
class HoloFit:
    """The engine's fit: the final settings (``settings.to_json()`` is what ``serve --settings``
    reads), each fold's, the held-out figures and the in-sample ones, and the signals' evidence.
    """

    settings: HoloSettings
    fold_settings: tuple[HoloSettings, ...]
    heldout: Figures
    insample: Figures
    signals: tuple[SignalEvidence, ...]
    target: Target
    folds: int
    no_answer: NoAnswer | None = None
    #: Each answerable case's held-out recall, hit and tokens, in case order.
    case_recall: tuple[float, ...] = ()
    case_hit: tuple[bool, ...] = ()
    case_tokens: tuple[float, ...] = ()
    #: The held-out figures of the rule before any signal was left out.
    heldout_all_signals: Figures | None = None
    #: Grid points fused and measured (each for every case at once).
    evaluations: int = 0

    @property
    def gap(self) -> dict[str, float]:
        """In-sample minus held-out hit and recall."""
        return gap(self.insample, self.heldout)

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(s.signal for s in self.signals if s.kept)

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings.to_json(),
            "target": self.target.to_json(),
            "folds": self.folds,
            "heldout": self.heldout.to_json(),
            "insample": self.insample.to_json(),
            "gap": self.gap,
            "heldout_all_signals": (
                None if self.heldout_all_signals is None else self.heldout_all_signals.to_json()
            ),
            "signals": [s.to_json() for s in self.signals],
            "kept": list(self.kept),
            "no_answer": None if self.no_answer is None else self.no_answer.to_json(),
            "fold_settings": [s.to_json() for s in self.fold_settings],
        }


# ------------------------------------------------------------------------------ the matrices


def _zrows(values: FloatArray) -> FloatArray:
    """Each row standardised (:func:`~workbench.search.holo.fusion.zscore` row by row)."""
    mean = values.mean(axis=1, keepdims=True)
    spread = values.std(axis=1, keepdims=True)
    flat = spread <= 1e-12
    out: FloatArray = (values - mean) / np.where(flat, 1.0, spread)
    out[np.broadcast_to(flat, out.shape)] = 0.0
    return out


@dataclass
class _Variant:
    """One engine's z-scored signals for the answerable cases, and every case's confidence."""

    engine: HoloEngine
    z: dict[str, FloatArray]
    named: BoolArray
    #: Answerable cases first, then the no-answer cases.
    confidence: FloatArray
    names_any: BoolArray
    #: Per lexical and name signal, which tools score above 0 for each answerable case (the
    #: engine's evidence: :attr:`~workbench.search.holo.engine.HoloRanking.found`).
    positive: dict[str, BoolArray] = field(default_factory=dict)


def _variant(
    engine: HoloEngine, queries: Sequence[str], vectors: FloatArray | None, answerable: int
) -> _Variant:
    signals: list[Signals] = engine.signals_many(queries, vectors)
    size = len(engine.catalog.tools)
    z: dict[str, FloatArray] = {}
    for name in (*DENSE_SIGNALS, "lexical", "name"):
        if all(name in s.raw for s in signals[:answerable]) and answerable:
            z[name] = _zrows(np.stack([s.raw[name] for s in signals[:answerable]]))
    positive = {
        name: np.stack([s.raw[name] > 0.0 for s in signals[:answerable]])
        for name in ("lexical", "name")
        if answerable and all(name in s.raw for s in signals[:answerable])
    }
    named = np.zeros((answerable, size), dtype=bool)
    for c, sig in enumerate(signals[:answerable]):
        if sig.named:
            named[c, list(sig.named)] = True
    return _Variant(
        engine,
        z,
        named,
        np.asarray([s.confidence for s in signals], dtype=np.float64),
        # a select: query is never refused, as one that names a tool
        np.asarray(
            [
                bool(s.named) or selected(q, engine.catalog) is not None
                for q, s in zip(queries, signals, strict=True)
            ],
            dtype=bool,
        ),
        positive,
    )


#: A grid point: (variant, a weight per signal in :data:`SIGNALS` order, name_first).
Point = tuple[int, tuple[float, ...], bool]


@dataclass(frozen=True)
class _Outcome:
    recall: FloatArray
    hit: BoolArray
    tokens: FloatArray


class _Grid:
    """Every grid point's per-case figures, fused and selected for all cases at once."""

    def __init__(
        self,
        variants: Sequence[_Variant],
        cases: Sequence[ResolvedCase],
        target: Target,
        similarity: FloatArray | None,
        labelled: Labelled,
    ) -> None:
        self.variants = variants
        self.target = target
        first = variants[0].engine
        self.tokens = first.tokens
        self.cost = first.cost
        self.server_of = first.server_of
        self.servers = first.servers
        self._perm = np.argsort(self.server_of, kind="stable")
        ordered = self.server_of[self._perm]
        self._starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        #: Query-by-query cosines of the query vectors (None: TF-IDF, fitted per context on
        #: its training queries, as an engine given only those labelled queries fits it).
        self.similarity = similarity
        self.labelled = labelled
        self.n = len(cases)
        pair_case: list[int] = []
        pair_group: list[int] = []
        pair_tool: list[int] = []
        group_case: list[int] = []
        for c, case in enumerate(cases):
            for group in case.groups:
                for tool in group:
                    pair_case.append(c)
                    pair_group.append(len(group_case))
                    pair_tool.append(tool)
                group_case.append(c)
        self._pair_case = np.asarray(pair_case, dtype=np.int64)
        self._pair_group = np.asarray(pair_group, dtype=np.int64)
        self._pair_tool = np.asarray(pair_tool, dtype=np.int64)
        self._group_case = np.asarray(group_case, dtype=np.int64)
        self._groups = np.bincount(self._group_case, minlength=self.n).astype(np.float64)
        self._memo: dict[tuple[Point, int], _Outcome] = {}
        #: ``select:`` queries: the tools they name are returned, exactly those.
        self._selected: dict[int, list[int]] = {}
        for c, case in enumerate(cases):
            picked = selected(case.query, first.catalog)
            if picked is not None:
                self._selected[c] = picked
        self._neighbours: dict[int, FloatArray] = {}
        self._neighbour_positive: dict[int, BoolArray] = {}
        self._train_of: dict[int, BoolArray] = {}
        self.evaluations = 0

    # contexts: -1 is every case (the final fit); f >= 0 is fold f's training cases
    def set_context(self, context: int, train: BoolArray) -> None:
        self._train_of[context] = train

    def neighbour(self, context: int) -> FloatArray:
        """The neighbour signal of every case in ``context``, z-scored: a training case's
        neighbours are the other training cases; a held-out case's the training cases."""
        found = self._neighbours.get(context)
        if found is None:
            train = self._train_of[context]
            similarity = self.similarity
            if similarity is None:
                similarity = np.zeros((self.n, self.n), dtype=np.float64)
                known = np.flatnonzero(train)
                labelled = [self.labelled.queries[i] for i in known]
                similarity[:, known] = tfidf_similarity(self.labelled.queries, labelled)
            rows = np.empty((self.n, self.server_of.shape[0]), dtype=np.float64)
            for c in range(self.n):
                use = train.copy()
                use[c] = False
                rows[c] = neighbour_scores(
                    similarity[c],
                    self.labelled,
                    self.server_of,
                    self.servers,
                    np.flatnonzero(use),
                )
            found = _zrows(rows)
            self._neighbours[context] = found
            self._neighbour_positive[context] = rows > 0.0
        return found

    def evidence(self, point: Point, context: int) -> BoolArray | None:
        """Which tools each case's search can return under ``point`` (the engine's evidence
        rule, :func:`~workbench.search.holo.engine._evidence`); None: every tool."""
        variant = self.variants[point[0]]
        weights = dict(zip(SIGNALS, point[1], strict=True))
        if any(weights[name] and name in variant.z for name in EVERY_TOOL_SIGNALS):
            return None
        mask = np.zeros((self.n, self.server_of.shape[0]), dtype=bool)
        for name, positive in variant.positive.items():
            if weights[name]:
                mask |= positive
        if weights["neighbour"]:
            self.neighbour(context)
            mask |= self._neighbour_positive[context]
        if weights["server"] and self.servers > 1:
            answered = np.logical_or.reduceat(mask[:, self._perm], self._starts, axis=1)
            mask = answered[:, self.server_of]
        return mask

    def outcome(self, point: Point, context: int) -> _Outcome:
        weights = dict(zip(SIGNALS, point[1], strict=True))
        key = (point, context if weights["neighbour"] else -2)
        found = self._memo.get(key)
        if found is None:
            found = self._evaluate(point, context)
            self._memo[key] = found
        return found

    def scores(self, point: Point, context: int) -> FloatArray:
        """Every case's fused score of every tool under ``point`` (as the engine fuses)."""
        variant = self.variants[point[0]]
        weights = dict(zip(SIGNALS, point[1], strict=True))
        total = np.zeros((self.n, self.server_of.shape[0]), dtype=np.float64)
        for name in ("dense", "lexical", "name", "server_text"):
            if weights[name] and name in variant.z:
                total += weights[name] * variant.z[name]
        if weights["neighbour"]:
            total += weights["neighbour"] * self.neighbour(context)
        if weights["server"] and self.servers > 1:
            best = np.maximum.reduceat(total[:, self._perm], self._starts, axis=1)
            total = total + weights["server"] * _zrows(best[:, self.server_of])
        if weights["cost"]:
            total = total + weights["cost"] * self.cost[None, :]
        return total

    def _evaluate(self, point: Point, context: int) -> _Outcome:
        self.evaluations += 1
        total = self.scores(point, context)
        if point[2]:
            total = total + _NAMED * self.variants[point[0]].named
        evidence = self.evidence(point, context)
        if evidence is not None:
            total = np.where(evidence, total, -np.inf)
        chosen, tokens = self._select(total)
        if evidence is not None:
            chosen &= evidence
            tokens = chosen.astype(np.float64) @ self.tokens
        for row, picked in self._selected.items():
            chosen[row] = False
            chosen[row, picked] = True
            tokens[row] = float(self.tokens[picked].sum())
        found = chosen[self._pair_case, self._pair_tool]
        group_found = np.bincount(self._pair_group, weights=found, minlength=self._groups.size)
        per_case = np.bincount(self._group_case, weights=group_found > 0, minlength=self.n).astype(
            np.float64
        )
        return _Outcome(recall=per_case / self._groups, hit=per_case > 0, tokens=tokens)

    def _select(self, total: FloatArray) -> tuple[BoolArray, FloatArray]:
        """Which tools each case's search returns (ties: the lower catalog index first, as the
        engine's stable sort), and their tokens."""
        n, size = total.shape
        top_k, budget = self.target.top_k, self.target.max_tokens
        if budget is not None:
            order = np.argsort(-total, axis=1, kind="stable")
            chosen = _fill(order, self.tokens, top_k, budget)
            return chosen, chosen.astype(np.float64) @ self.tokens
        k = min(int(top_k or size), size)
        if k >= size:
            return np.ones((n, size), dtype=bool), np.full(n, float(self.tokens.sum()))
        top = np.argpartition(total, size - k, axis=1)[:, size - k :]
        rows = np.arange(n)[:, None]
        kth = total[rows, top].min(axis=1, keepdims=True)
        # a row whose k-th score is shared by a tool left out: the lower catalog index first
        tied = np.flatnonzero((total >= kth).sum(axis=1) > k)
        if tied.size:
            sub, edge = total[tied], kth[tied]
            equal = sub == edge
            need = k - (sub > edge).sum(axis=1, keepdims=True)
            keep = (sub > edge) | (equal & (np.cumsum(equal, axis=1) <= need))
            top[tied] = np.sort(np.argsort(~keep, axis=1, kind="stable")[:, :k], axis=1)
        chosen = np.zeros((n, size), dtype=bool)
        chosen[rows, top] = True
        return chosen, self.tokens[top].sum(axis=1)


def _fill(
    order: npt.NDArray[np.int64], tokens: FloatArray, top_k: int | None, budget: int
) -> BoolArray:
    """:func:`~workbench.search.holo.engine.pick` for every row of ``order`` at once: the tools
    in order while their running sum fits (the first always), then, one take at a time, the next
    tool that fits what is left (a few steps of whole-row searches, not one step per tool)."""
    n, size = order.shape
    if size == 0:
        return np.zeros((n, 0), dtype=bool)
    limit = top_k or size
    smallest = float(tokens.min())
    cost = tokens[order]
    prefix = np.maximum((np.cumsum(cost, axis=1) <= budget).sum(axis=1), 1)
    prefix = np.minimum(prefix, limit)
    position = np.arange(size)
    taken = position[None, :] < prefix[:, None]
    rows = np.arange(n)
    spent = np.where(taken, cost, 0.0).sum(axis=1)
    count = prefix.copy()
    last = prefix - 1
    done = (count >= limit) | (spent + smallest > budget)
    while not done.all():
        fits = (cost <= (budget - spent)[:, None]) & (position[None, :] > last[:, None])
        found = fits.any(axis=1) & ~done
        at = fits.argmax(axis=1)
        taken[rows[found], at[found]] = True
        spent += np.where(found, cost[rows, at], 0.0)
        count += found
        last = np.where(found, at, last)
        done |= ~found | (count >= limit) | (spent + smallest > budget)
    chosen = np.zeros((n, size), dtype=bool)
    np.put_along_axis(chosen, order, taken, axis=1)
    return chosen


# ---------------------------------------------------------------------------------- the walk


@dataclass(frozen=True)
class _Choice:
    point: Point
    threshold: float | None


def _start(allowed: frozenset[str]) -> Point:
    return (0, tuple(DEFAULT_WEIGHTS[s] if s in allowed else 0.0 for s in SIGNALS), True)


def _walk(
    grid: _Grid, allowed: frozenset[str], train: npt.NDArray[np.int64], context: int
) -> Point:
    """The grid point with the best mean recall on ``train``, by a walk from the default."""

    def score(point: Point) -> float:
        return float(grid.outcome(point, context).recall[train].mean())

    point = _start(allowed)
    best = score(point)
    dims: list[tuple[str, Sequence[Any]]] = [("variant", range(len(grid.variants)))]
    dims += [(s, GRID[s]) for s in SIGNALS if s in allowed]
    dims.append(("name_first", (True, False)))
    for _ in range(MAX_PASSES):
        moved = False
        for dim, values in dims:
            for value in values:
                candidate = _with(point, dim, value)
                if candidate == point:
                    continue
                value_score = score(candidate)
                if value_score > best + EPS:
                    point, best, moved = candidate, value_score, True
        if not moved:
            break
    return point


def _with(point: Point, dim: str, value: Any) -> Point:
    variant, weights, name_first = point
    if dim == "variant":
        return (int(value), weights, name_first)
    if dim == "name_first":
        return (variant, weights, bool(value))
    i = SIGNALS.index(dim)
    return (variant, (*weights[:i], float(value), *weights[i + 1 :]), name_first)


def _threshold(
    recall: FloatArray,
    conf: FloatArray,
    named: BoolArray,
    none_conf: FloatArray,
    none_named: BoolArray,
) -> float | None:
    """The threshold best on these cases (module docstring), None when refusing never pays."""
    if none_conf.size == 0:
        return None
    values = np.unique(np.concatenate([conf, none_conf]))
    candidates = (values[1:] + values[:-1]) / 2.0
    candidates = np.concatenate([candidates, values[-1:] + 1e-6])
    candidates = candidates[(candidates >= -1.0) & (candidates <= 1.0)]
    if candidates.size == 0:
        return None
    kept = (conf[None, :] >= candidates[:, None]) | named[None, :]
    refused = (none_conf[None, :] < candidates[:, None]) & ~none_named[None, :]
    scores = (kept * recall[None, :]).sum(axis=1) + refused.sum(axis=1)
    base = float(recall.sum())
    best = int(np.argmax(scores))
    if scores[best] <= base + EPS:
        return None
    return float(round(candidates[best], 6))


# ----------------------------------------------------------------------------------- the fit


@dataclass(frozen=True)
class _Rule:
    """The rule run k-fold with some signals allowed: each fold's choice and the held-out
    per-case figures (answerable cases in case order), and the no-answer account."""

    choices: tuple[_Choice, ...]
    recall: FloatArray
    hit: BoolArray
    tokens: FloatArray
    refused: int
    answerable_refused: int


class _Fit:
    def __init__(
        self,
        grid: _Grid,
        folds: list[Fold],
        none_folds: npt.NDArray[np.int64] | None,
        answerable: int,
    ) -> None:
        self.grid = grid
        self.folds = folds
        self.none_folds = none_folds
        self.answerable = answerable

    def choose(
        self,
        allowed: frozenset[str],
        train: npt.NDArray[np.int64],
        context: int,
        none_train: npt.NDArray[np.int64] | None,
    ) -> _Choice:
        point = _walk(self.grid, allowed, train, context)
        threshold = None
        if none_train is not None and none_train.size:
            variant = self.grid.variants[point[0]]
            outcome = self.grid.outcome(point, context)
            a = self.answerable
            threshold = _threshold(
                outcome.recall[train],
                variant.confidence[:a][train],
                variant.names_any[:a][train],
                variant.confidence[a:][none_train],
                variant.names_any[a:][none_train],
            )
        return _Choice(point, threshold)

    def _training(self, fold: Fold) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None]:
        """``fold``'s training cases, and its no-answer training cases (None: no threshold)."""
        train = np.asarray(fold.train, dtype=np.int64)
        if self.none_folds is None:
            return train, None
        others = (self.none_folds != fold.index) & (self.none_folds >= 0)
        return train, np.flatnonzero(others)

    def rule(self, allowed: frozenset[str]) -> _Rule:
        """The rule k-fold (:func:`~workbench.evaluate.folds.run_folds` over this fit's rounds,
        the split every tuner uses): chosen on each fold's training cases, measured on its
        held-out ones."""
        return self.rule_by(lambda fold: self.choose_on(allowed, fold))

    def choose_on(self, allowed: frozenset[str], fold: Fold) -> _Choice:
        """:meth:`choose` on ``fold``'s training cases, in its context."""
        train, none_train = self._training(fold)
        return self.choose(allowed, train, fold.index, none_train)

    def rule_by(self, fit: Callable[[Fold], _Choice]) -> _Rule:
        """The held-out rule whose choice on each fold is ``fit(fold)``."""
        n = self.answerable
        refused = 0

        def measure(choice: _Choice, fold: Fold) -> list[tuple[float, bool, float, bool]]:
            nonlocal refused
            test = np.asarray(fold.test, dtype=np.int64)
            outcome = self.grid.outcome(choice.point, fold.index)
            variant = self.grid.variants[choice.point[0]]
            keep = np.ones(test.size, dtype=bool)
            if choice.threshold is not None:
                keep = (variant.confidence[test] >= choice.threshold) | variant.names_any[test]
                if self.none_folds is not None:
                    none_test = np.flatnonzero(self.none_folds == fold.index)
                    conf = variant.confidence[n:][none_test]
                    named = variant.names_any[n:][none_test]
                    refused += int(((conf < choice.threshold) & ~named).sum())
            return [
                (
                    float(outcome.recall[c]) if ok else 0.0,
                    bool(outcome.hit[c]) and bool(ok),
                    float(outcome.tokens[c]) if ok else 0.0,
                    not ok,
                )
                for c, ok in zip(test.tolist(), keep.tolist(), strict=True)
            ]

        crossed = run_folds(self.folds, fit, measure)
        rows = crossed.case_order()
        return _Rule(
            crossed.settings,
            np.asarray([r[0] for r in rows], dtype=np.float64),
            np.asarray([r[1] for r in rows], dtype=bool),
            np.asarray([r[2] for r in rows], dtype=np.float64),
            refused,
            sum(r[3] for r in rows),
        )

    def inner(self, fold: Fold, folds: int) -> _Fit | None:
        """The fit within ``fold``'s training cases (its own k-fold, its rounds' contexts set
        in the grid), or None when they cannot fill two folds."""
        rounds = inner_folds(fold, folds, INNER * (fold.index + 1))
        if not rounds:
            return None
        for round_ in rounds:
            mask = np.zeros(self.answerable, dtype=bool)
            mask[round_.train] = True
            self.grid.set_context(round_.index, mask)
        none_folds = None
        if self.none_folds is not None:
            mine = np.flatnonzero((self.none_folds != fold.index) & (self.none_folds >= 0))
            if mine.size >= len(rounds):
                none_folds = np.full(self.none_folds.shape, -1, dtype=np.int64)
                none_folds[mine] = rounds[0].index + fold_assignment(mine.size, len(rounds))
        return _Fit(self.grid, rounds, none_folds, self.answerable)


def _nested(fit: _Fit, allowed: frozenset[str], folds: int) -> _Rule:
    """The held-out rule of the whole procedure, the signals' elimination included: on each
    fold, the signals that earn their place are found by :func:`_eliminate` on the fold's
    training cases alone (k-fold within them), and the fold's setting is then chosen on those
    cases with those signals. A held-out case's figure thus owes nothing to the case, not even
    which signals were tried (the elimination on every case, which gives the final settings,
    saw them all)."""

    def choose(fold: Fold) -> _Choice:
        kept = allowed
        inner = fit.inner(fold, folds)
        if inner is not None:
            kept = _eliminate(inner.rule, inner.rule(allowed), allowed)[1]
        return fit.choose_on(kept, fold)

    return fit.rule_by(choose)


def _settings(
    choice: _Choice, variants: Sequence[_Variant], target: Target, base: HoloSettings
) -> HoloSettings:
    variant, weights, name_first = choice.point
    return base.with_(
        weights=dict(zip(SIGNALS, weights, strict=True)),
        fields=dict(variants[variant].engine.fields),
        top_k=target.top_k,
        max_tokens=target.max_tokens,
        threshold=choice.threshold,
        name_first=name_first,
    )


def fit_holo(
    engines: Sequence[HoloEngine],
    cases: Sequence[ResolvedCase],
    *,
    target: Target | None = None,
    no_answer: Sequence[str] = (),
    folds: int = DEFAULT_FOLDS,
    base: HoloSettings | None = None,
    signals: Iterable[str] | None = None,
    eliminate: bool = True,
) -> HoloFit:
    """Fit the engine on ``cases``, held out over ``folds`` (the module's docstring).

    ``engines``: one per field-weight variant, on the same catalog, token table and embedder
    (the first is where the walk starts); ``no_answer``: queries no tool answers (``expected:
    []``); ``base``: the settings kept as they are (embedder, pins, cases); ``signals``: the
    signals the fit may use (default: every one the engines score); ``eliminate``: leave out the
    signals that do not earn their place (False: keep every signal a fold chose). Raises
    :class:`~workbench.errors.InputError` (naming ``--folds``) when the cases cannot fill the
    folds.
    """
    if not engines:
        raise ValueError("fit_holo needs at least one engine")
    target = target or Target()
    base = base or HoloSettings()
    first = engines[0]
    for engine in engines[1:]:
        if engine.catalog is not first.catalog and len(engine.catalog.tools) != len(
            first.catalog.tools
        ):
            raise ValueError("every engine must search the same catalog")
    answerable = len(cases)
    rounds = folds_of(answerable, folds)
    queries = [c.query for c in cases] + list(no_answer)
    vectors = first.query_vectors(queries)
    variants = [_variant(e, queries, vectors, answerable) for e in engines]
    labelled = Labelled.of(
        [c.query for c in cases],
        [sorted({t for g in c.groups for t in g}) for c in cases],
    )
    similarity = None
    if vectors is not None:
        unit = vectors[:answerable]
        similarity = np.asarray(unit @ unit.T, dtype=np.float64)
    grid = _Grid(variants, cases, target, similarity, labelled)
    for fold in rounds:
        train = np.zeros(answerable, dtype=bool)
        train[fold.train] = True
        grid.set_context(fold.index, train)
    grid.set_context(-1, np.ones(answerable, dtype=bool))

    none_folds = None
    note = None
    if no_answer:
        if len(no_answer) >= folds:
            none_folds = fold_assignment(len(no_answer), folds)
        else:
            note = f"{len(no_answer)} no-answer case(s) cannot fill {folds} folds: no threshold"
    fit = _Fit(grid, rounds, none_folds, answerable)

    available = {"lexical", "name", "neighbour", "server", "cost"}
    if vectors is not None:
        available |= {s for s in DENSE_SIGNALS if s in variants[0].z}
    if signals is not None:
        available &= set(signals)
    allowed = frozenset(available)

    first_rule = fit.rule(allowed)
    if eliminate:
        rule, allowed, evidence = _earned(fit, first_rule, allowed, folds)
    else:
        rule, evidence = (
            first_rule,
            {
                name: SignalEvidence(name, True, None, None, "kept without a trial (eliminate off)")
                for name in allowed
            },
        )
    for name in SIGNALS:
        if name not in available:
            why = "not scored (no embedder)" if name in DENSE_SIGNALS else "not allowed"
            evidence[name] = SignalEvidence(name, False, None, None, why)

    final_choice = fit.choose(
        allowed,
        np.arange(answerable, dtype=np.int64),
        -1,
        np.arange(len(no_answer), dtype=np.int64) if none_folds is not None else None,
    )
    final = _settings(final_choice, variants, target, base)
    outcome = grid.outcome(final_choice.point, -1)
    in_recall, in_hit, in_tokens = outcome.recall, outcome.hit, outcome.tokens
    if final_choice.threshold is not None:
        variant = variants[final_choice.point[0]]
        keep = (variant.confidence[:answerable] >= final_choice.threshold) | variant.names_any[
            :answerable
        ]
        in_recall = np.where(keep, in_recall, 0.0)
        in_hit = keep & in_hit
        in_tokens = np.where(keep, in_tokens, 0.0)
    account = None
    if no_answer:
        account = NoAnswer(
            cases=len(no_answer),
            refused=rule.refused,
            answerable=answerable,
            answerable_refused=rule.answerable_refused,
            threshold=final.threshold,
            note=note,
        )
    return HoloFit(
        settings=final,
        fold_settings=tuple(_settings(c, variants, target, base) for c in rule.choices),
        heldout=Figures.of(rule.recall, rule.hit, rule.tokens),
        insample=Figures.of(in_recall, in_hit, in_tokens),
        signals=tuple(evidence[s] for s in SIGNALS),
        target=target,
        folds=folds,
        no_answer=account,
        case_recall=tuple(float(x) for x in rule.recall),
        case_hit=tuple(bool(x) for x in rule.hit),
        case_tokens=tuple(float(x) for x in rule.tokens),
        heldout_all_signals=Figures.of(first_rule.recall, first_rule.hit, first_rule.tokens),
        evaluations=grid.evaluations,
    )


def _eliminate(
    rule_of: Callable[[frozenset[str]], _Rule], first: _Rule, allowed: frozenset[str]
) -> tuple[_Rule, frozenset[str], dict[str, SignalEvidence]]:
    """Backward elimination with the one-standard-error rule (the module's docstring): the rule
    with the signals that earn their place, those signals, and every signal's evidence.

    ``rule_of(signals)``: the rule k-fold with those signals allowed, on the same folds. At each
    step, every signal the folds chose is tried out; the rule without it is *within noise* when
    its held-out recall is at least the best rule's met so far less one standard error of their
    paired difference. Of those within noise, the one whose removal costs least goes; when none
    is, every signal left stays."""
    evidence: dict[str, SignalEvidence] = {}
    rule = best = first
    while True:
        used = [s for s in SIGNALS if s in allowed and any(_weight(c, s) for c in rule.choices)]
        for name in sorted(allowed - set(used)):
            evidence[name] = SignalEvidence(name, False, None, None, "no fold chose it")
        allowed = frozenset(used)
        weak: list[tuple[float, str, Interval, float, _Rule]] = []
        for name in used:
            without = rule_of(allowed - {name})
            lift = float(rule.recall.mean() - without.recall.mean())
            interval = paired_difference(rule.recall, without.recall)
            se = paired_standard_error(best.recall, without.recall)
            if without.recall.mean() >= best.recall.mean() - se:
                weak.append((lift, name, interval, se, without))
                continue
            evidence[name] = SignalEvidence(
                name,
                True,
                lift,
                interval,
                "its removal lowers the held-out recall more than one standard error below "
                "the best rule's",
                se,
            )
        if not weak:
            return rule, allowed, evidence
        lift, name, interval, se, rule = min(weak, key=lambda t: (t[0], SIGNALS.index(t[1])))
        evidence[name] = SignalEvidence(
            name,
            False,
            lift,
            interval,
            "without it the held-out recall is within one standard error of the best rule's",
            se,
        )
        allowed = allowed - {name}
        if rule.recall.mean() > best.recall.mean():
            best = rule


def _earned(
    fit: _Fit, first: _Rule, allowed: frozenset[str], folds: int
) -> tuple[_Rule, frozenset[str], dict[str, SignalEvidence]]:
    """The signals that earn their place, if leaving the others out pays, measured honestly:
    the rule kept, its signals and every signal's evidence (the module's docstring).

    :func:`_eliminate` on every case says which signals earn their place; the whole procedure,
    elimination included, is then held out (:func:`_nested`: each fold eliminates on its own
    training cases). Its held-out recall is the figure of the settings it gives; when that is
    more than one standard error below the rule with every signal (whose held-out figure
    involves no choice of signals), leaving signals out costs more than it simplifies, and
    every signal a fold chose stays."""
    kept, evidence = _eliminate(fit.rule, first, allowed)[1:]
    used = frozenset(s for s in allowed if any(_weight(c, s) for c in first.choices))
    if kept == used:
        return first, kept, evidence
    nested = _nested(fit, used, folds)
    se = paired_standard_error(first.recall, nested.recall)
    if nested.recall.mean() >= first.recall.mean() - se:
        return nested, kept, evidence
    why = (
        f"not left out: leaving out those within noise, the whole fit held out recall "
        f"{nested.recall.mean():.3f}, more than one standard error ({se:.3f}) below "
        f"{first.recall.mean():.3f} with every signal allowed"
    )
    for name in used - kept:
        was = evidence[name]
        evidence[name] = SignalEvidence(name, True, was.lift, was.interval, why, was.se)
    return first, used, evidence


def _weight(choice: _Choice, signal: str) -> float:
    return choice.point[1][SIGNALS.index(signal)]


__all__ = [
    "GRID",
    "Figures",
    "HoloFit",
    "NoAnswer",
    "SignalEvidence",
    "Target",
    "fit_holo",
]
