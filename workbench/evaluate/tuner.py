"""The tuner: the setting with the best recall within a token budget, and an honest promise.

How a setting is chosen (:func:`choose`), on the cases of some folds:

1. *Robust figures.* A threshold that sits right at a cliff of the score distribution is a bet on
   the next queries scoring like these ones. So a setting at threshold ``t`` is credited with the
   recall it would have at ``t + MARGIN`` (recall only falls as the threshold rises, so that is
   the worst case in the window) and charged the tokens it would send at ``t - TOKEN_MARGIN``.
   Recall is then lowered by ``VARIANCE_PENALTY`` x its standard deviation across the folds: a
   setting that is good on every fold beats one that is great on some. (On the five data sets of
   docs/tuning-results.md, 4 seeds x 3 budgets, a recall margin of 0.03 was neutral to slightly
   better held out than none, and a token margin only spent less of the budget, so it is 0: the
   mean tokens of many queries have no cliff; held-out tokens stayed within 0.5 % of the budget.)
2. *Budget.* Only settings whose robust mean tokens sent fit the budget compete: ``--max-tokens``
   N, or ``--min-reduction`` R (at most ``(1 - R)`` of all tokens), or both. With neither, the
   default is the *knee* of the catalog's own front of robust recall against robust tokens
   (:func:`workbench.evaluate.budget.knee`: where recall stops coming cheaply), no fixed share.
3. *Ties.* Settings within ``TIE_TOLERANCE`` of the best robust recall tie; the one with fewer
   robust tokens wins, then fewer always-sent tools, then bm25 over semantic over hybrid (equal
   figures mean the embeddings bought nothing), then the smaller top_k; thresholds that select
   exactly the same tools tie, and the one in the middle of their run is taken (farthest from
   the cliffs on both sides).

The promise (:func:`cross_validate`) is k-fold: the same procedure is run on k-1 folds and the
chosen setting measured on the fold left out; the held-out figures pool those measurements, so they
estimate what the procedure's setting does on queries it has not seen. The proposed setting itself
is then chosen on all folds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from workbench.config.filtering import ToolFiltering
from workbench.errors import InputError
from workbench.evaluate.budget import KNEE_TOLERANCE, Budget, knee
from workbench.evaluate.metrics import Metrics
from workbench.evaluate.sweep import (
    THRESHOLDS,
    TOP_KS,
    FloatArray,
    FrontPoint,
    MethodSweep,
    SweepResult,
    method_rank,
)
from workbench.search.types import IntArray

#: Threshold grid steps (of 0.01) of recall margin a setting must keep from a cliff above it ...
MARGIN = 3
#: ... and of tokens below it (0: see the module docstring).
TOKEN_MARGIN = 0
#: How much of the across-fold standard deviation of recall is taken off.
VARIANCE_PENALTY = 0.5
#: A tool the tuners that keep a set (kept loaded, exposed) may choose must be expected by at least
#: this many training cases (or counted by the usage file): a tool one case named is that case's
#: noise, not a pattern, and keeping it memorises the training cases.
MIN_CASES = 2
DEFAULT_FOLDS = 5
FOLD_SEED = 20240607


def knee_text(tokens_all: float) -> str:
    """The default rule (no budget given) in words, with every tool's tokens."""
    return (
        f"the knee of the front: of the settings within {KNEE_TOLERANCE:g} recall of the farthest "
        "above the line from the cheapest setting to sending every tool (recall 1 at "
        f"{tokens_all:,.0f} tokens), the one with the most recall"
    )


@dataclass(frozen=True, slots=True)
class Choice:
    """A grid point of one sweep, with the figures it was chosen on."""

    sweep: int
    method: str
    top_k: int
    threshold: int
    robust_recall: float
    robust_tokens: float
    within_budget: bool

    def setting(self, sweeps: Sequence[SweepResult]) -> ToolFiltering:
        return sweeps[self.sweep].setting(self.method, self.top_k, self.threshold)


@dataclass(frozen=True, slots=True)
class Recurrence:
    """How many training cases must expect a tool before a tuner that keeps a set may keep it:
    :data:`MIN_CASES`, or a share of the cases the choice is made on.

    The share (:meth:`of`) is :data:`MIN_CASES` per case of the k-fold's largest training set:
    two cases in every training set, and the same share of all the cases for the proposal (3 of
    94 with 5 folds). A bar fixed in cases is lower, relative to the cases, when the proposal is
    chosen on all of them than when a fold is: a tool the proposal keeps on two cases' word is
    kept by no training set that lacks one of them, so its in-sample recall is never seen
    held-out (the gap). Proportional, the proposal keeps what the training sets keep.
    """

    share: float = 0.0
    #: The cases of the k-fold's largest training set the share was made of (its bar there).
    per_training: int = MIN_CASES

    def need(self, cases: int) -> int:
        """The fewest of ``cases`` training cases that must expect a tool."""
        return max(MIN_CASES, math.ceil(self.share * cases - 1e-9))

    def discount(self, cases: int) -> float:
        """How many of a tool's ``cases`` votes a tuner that ranks by them sets aside: none at
        the first bar; above it, the bar's share of ``cases`` (what a training set short of
        them would count; :mod:`workbench.evaluate.generalise`)."""
        return 0.0 if self.per_training <= MIN_CASES else self.share * cases

    @classmethod
    def of(cls, cases: int, folds: int, per_training: int = MIN_CASES) -> Recurrence:
        """The bar for a k-fold of ``cases`` cases in ``folds`` folds: ``per_training`` cases in
        every training set (class docstring)."""
        train = cases - cases // folds
        return cls(per_training / max(train, 1), per_training)


#: :data:`MIN_CASES` whatever the number of cases (a choice made outside a k-fold).
AT_LEAST_MIN = Recurrence()


def fold_assignment(cases: int, folds: int, seed: int = FOLD_SEED) -> IntArray:
    """``out[c]``: the fold of case ``c``: a seeded shuffle dealt round-robin (deterministic)."""
    if folds < 2:
        raise InputError("k-fold needs at least 2 folds", field="--folds")
    if cases < folds:
        raise InputError(f"{cases} case(s) cannot fill {folds} folds", field="--folds")
    permutation = np.random.default_rng(seed).permutation(cases)
    out = np.empty(cases, dtype=np.int64)
    out[permutation] = np.arange(cases) % folds
    return out


def _robust(ms: MethodSweep, folds: Sequence[int]) -> tuple[FloatArray, FloatArray]:
    """Robust recall and robust tokens over ``folds`` for every (top_k, threshold)."""
    recall, _, tokens = ms.means(folds)
    if len(folds) > 1:
        per_fold = np.stack([ms.means([f])[0] for f in folds])
        recall = recall - VARIANCE_PENALTY * per_fold.std(axis=0)
    t = np.arange(THRESHOLDS.size)
    up = np.minimum(t + MARGIN, THRESHOLDS.size - 1)
    down = np.maximum(t - TOKEN_MARGIN, 0)
    return recall[:, up], tokens[:, down]


def choose(sweeps: Sequence[SweepResult], folds: Sequence[int], budget: Budget) -> Choice:
    """The setting the procedure of this module's docstring picks on the cases of ``folds``."""
    candidates: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    labels: list[tuple[int, str]] = []
    for s_index, result in enumerate(sweeps):
        limit = budget.limit(result.tokens_all)
        for method, ms in result.methods.items():
            recall, tokens = _robust(ms, folds)
            k, t = np.meshgrid(np.arange(TOP_KS.size), np.arange(THRESHOLDS.size), indexing="ij")
            candidates.append(
                np.stack(
                    [
                        recall.ravel(),
                        tokens.ravel(),
                        (tokens <= limit + 1e-9).ravel(),
                        np.full(k.size, len(ms.fixed)),
                        np.full(k.size, method_rank(method)),
                        k.ravel(),
                        t.ravel(),
                        np.full(k.size, len(labels)),
                    ]
                )
            )
            labels.append((s_index, method))
    if not candidates:
        raise ValueError("nothing was swept")
    table = np.concatenate(candidates, axis=1)
    fits = table[2] > 0
    if not budget.explicit:  # the knee of the front (budget.knee); ties by the order below
        tokens_all = max(result.tokens_all for result in sweeps)
        at = knee(table[1].tolist(), table[0].tolist(), tokens_all)
        pool = table[:, (table[0] == table[0, at]) & (table[1] == table[1, at])]
        within = True
    elif not fits.any():  # the budget is below the cheapest setting: offer the cheapest
        cheapest = table[1].min()
        pool = table[:, table[1] <= cheapest + 1e-9]
        within = False
    else:
        pool = table[:, fits]
        best = pool[0].max()
        pool = pool[:, pool[0] >= best - budget.tolerance - 1e-12]
        within = True
    # fewer tokens, fewer fixed tools, preferred method, smaller k, lower threshold, higher recall
    order = np.lexsort((-pool[0], pool[6], pool[5], pool[4], pool[3], pool[1]))
    col = pool[:, order[0]]
    s_index, method = labels[int(col[7])]
    return Choice(
        sweep=s_index,
        method=method,
        top_k=int(col[5]) + 1,
        threshold=_plateau_middle(table, col),
        robust_recall=float(col[0]),
        robust_tokens=float(col[1]),
        within_budget=within,
    )


def _plateau_middle(table: np.ndarray[Any, np.dtype[np.float64]], col: FloatArray) -> int:
    """The threshold in the middle of the run of thresholds that give ``col``'s very figures.

    Thresholds that select the same tools for every case tie exactly; the middle one is the
    farthest from the cliffs on both sides (and, in hybrid, off the floor where it cuts nothing).
    """
    same = (table[7] == col[7]) & (table[5] == col[5])
    same &= (table[0] == col[0]) & (table[1] == col[1])
    chosen = int(col[6])
    run = {int(t) for t in table[6, same]}
    low = high = chosen
    while low - 1 in run:
        low -= 1
    while high + 1 in run:
        high += 1
    return (low + high) // 2


def measure(
    sweeps: Sequence[SweepResult], choice: Choice, folds: Sequence[int] | None = None
) -> Metrics:
    """The figures of ``choice`` on the cases of ``folds`` (all when None)."""
    result = sweeps[choice.sweep]
    return result.methods[choice.method].metrics(
        choice.top_k, choice.threshold, result.tokens_all, folds
    )


def cross_validate(
    sweeps: Sequence[SweepResult], n_folds: int, budget: Budget
) -> tuple[Metrics, list[Choice]]:
    """Held-out figures of the procedure: tune on k-1 folds, measure on the last, pool."""
    choices: list[Choice] = []
    sums = {"hit": 0.0, "top1": 0.0, "tokens": 0.0}
    recall = Fraction(0)
    mrr: list[float] = []
    total = 0
    tokens_all = sweeps[0].tokens_all
    for held in range(n_folds):
        train = [f for f in range(n_folds) if f != held]
        choice = choose(sweeps, train, budget)
        choices.append(choice)
        ms = sweeps[choice.sweep].methods[choice.method]
        at = (held, choice.top_k - 1, choice.threshold)
        n = int(ms.counts[held])
        total += n
        sums["hit"] += float(ms.hit[at])
        sums["tokens"] += float(ms.tokens[at])
        recall += Fraction(round(float(ms.recall[at])), ms.recall_scale)
        in_fold = ms.fold_of == held
        sums["top1"] += float(ms.top1_case[in_fold].sum())
        mrr.extend(ms.mrr_case[in_fold].tolist())
    d = max(total, 1)
    heldout = Metrics(
        cases=total,
        hit=sums["hit"] / d,
        recall=float(recall / d),
        top1=sums["top1"] / d,
        mrr=math.fsum(mrr) / d,
        tokens_selected_mean=sums["tokens"] / d,
        tokens_all=tokens_all,
    )
    return heldout, choices


@dataclass(frozen=True)
class SweepOutcome:
    """What the block's sweep proposes and how far to trust it (what HoloDeck 0.6's
    :class:`~workbench.runtimes.base.TuneOutcome` reports)."""

    setting: ToolFiltering
    choice: Choice
    budget: Budget
    folds: int
    #: The procedure's figures on folds it did not tune on (the promise).
    heldout: Metrics
    #: The proposed setting's figures on every case (in-sample: optimistic).
    insample: Metrics
    #: The setting each held-out round chose (how stable the procedure is).
    fold_choices: list[ToolFiltering]
    front: list[FrontPoint]


def tune(
    sweeps: Sequence[SweepResult], budget: Budget, n_folds: int, front: list[FrontPoint]
) -> SweepOutcome:
    """Propose a setting (chosen on all folds) and its held-out figures (k-fold)."""
    heldout, choices = cross_validate(sweeps, n_folds, budget)
    final = choose(sweeps, list(range(n_folds)), budget)
    return SweepOutcome(
        setting=final.setting(sweeps),
        choice=final,
        budget=budget,
        folds=n_folds,
        heldout=heldout,
        insample=measure(sweeps, final),
        fold_choices=[c.setting(sweeps) for c in choices],
        front=front,
    )


class Figures(Protocol):
    @property
    def hit(self) -> float: ...

    @property
    def recall(self) -> float: ...


def gap(insample: Figures, heldout: Figures) -> dict[str, float]:
    """How much better the proposal looks on the cases it was chosen on than on cases it was
    not (in-sample minus held-out): what a tuner that memorises its cases shows."""
    return {
        "hit": round(insample.hit - heldout.hit, 9),
        "recall": round(insample.recall - heldout.recall, 9),
    }


def gap_text(insample: Figures, heldout: Figures) -> str:
    """The gap in words, for the tuners' reports."""
    g = gap(insample, heldout)
    return f"in-sample minus held-out: hit {g['hit']:+.3f}, recall {g['recall']:+.3f}"
