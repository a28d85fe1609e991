"""k-fold held-out measurement: the one loop every tuner's promise is measured with.

The cases are dealt into folds by :func:`~workbench.evaluate.tuner.fold_assignment` (seeded, the
same split everywhere). For each fold the tuner's rule chooses a setting on the other folds'
cases (``fit``) and the setting is measured on the fold's own cases (``measure``): each case's
figures come from a setting chosen without it, so their means estimate what the rule's setting
does on queries it has not seen. :func:`cross_fit` runs that loop and keeps every fold's setting
and results; a caller reads the results in fold order (:meth:`CrossFit.fold_order`) or in case
order (:meth:`CrossFit.case_order`), whichever its figures are summed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from workbench.evaluate.tuner import fold_assignment

#: What a tuner's rule chooses on one fold's training cases.
S = TypeVar("S")
#: What one held-out case's measurement gives (usually a ``CaseResult``).
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Fold:
    """One round of k-fold: the cases chosen on and the cases measured (case indices, in case
    order)."""

    index: int
    train: list[int]
    test: list[int]


def folds_of(cases: int, folds: int) -> list[Fold]:
    """The ``folds`` rounds over ``cases`` cases, in fold order (:func:`fold_assignment`'s split;
    an :class:`~workbench.errors.InputError` naming ``--folds`` when it cannot be made)."""
    assignment = fold_assignment(cases, folds)
    return [
        Fold(
            fold,
            np.flatnonzero(assignment != fold).tolist(),
            np.flatnonzero(assignment == fold).tolist(),
        )
        for fold in range(folds)
    ]


@dataclass(frozen=True)
class CrossFit(Generic[S, R]):
    """Every fold's setting and its held-out results."""

    folds: tuple[Fold, ...]
    #: The setting chosen without each fold (fold order).
    settings: tuple[S, ...]
    #: Each fold's results, one per case of ``fold.test`` in its order (fold order).
    measured: tuple[tuple[R, ...], ...]

    def fold_order(self) -> list[R]:
        """Every case's result, fold by fold (each fold's cases in case order)."""
        return [result for results in self.measured for result in results]

    def case_order(self) -> list[R]:
        """Every case's result in case order."""
        placed: dict[int, R] = {}
        for fold, results in zip(self.folds, self.measured, strict=True):
            placed.update(zip(fold.test, results, strict=True))
        return [placed[c] for c in sorted(placed)]


def cross_fit(
    cases: int,
    folds: int,
    fit: Callable[[Fold], S],
    measure: Callable[[S, Fold], Sequence[R]],
) -> CrossFit[S, R]:
    """k-fold over ``cases`` cases: ``fit(fold)`` chooses on ``fold.train``, then
    ``measure(setting, fold)`` gives one result per case of ``fold.test`` (in its order); folds
    run in order, each fitted before it is measured."""
    return run_folds(folds_of(cases, folds), fit, measure)


def run_folds(
    rounds: Sequence[Fold],
    fit: Callable[[Fold], S],
    measure: Callable[[S, Fold], Sequence[R]],
) -> CrossFit[S, R]:
    """:func:`cross_fit`'s loop over given rounds (:func:`folds_of`'s, or a fold's
    :func:`inner_folds`)."""
    settings: list[S] = []
    measured: list[tuple[R, ...]] = []
    for fold in rounds:
        setting = fit(fold)
        settings.append(setting)
        measured.append(tuple(measure(setting, fold)))
    return CrossFit(tuple(rounds), tuple(settings), tuple(measured))


def inner_folds(outer: Fold, folds: int, first_index: int) -> list[Fold]:
    """k-fold within ``outer``'s training cases (a nested cross-validation's inner rounds):
    :func:`folds_of`'s split of those cases, as case indices of the whole set, the rounds
    numbered from ``first_index`` (a caller keeps each round's data by its index). Fewer rounds
    when the training cases cannot fill ``folds``; none when they cannot fill two."""
    train = np.asarray(outer.train, dtype=np.int64)
    k = min(folds, train.size)
    if k < 2:
        return []
    return [
        Fold(first_index + fold.index, train[fold.train].tolist(), train[fold.test].tolist())
        for fold in folds_of(train.size, k)
    ]
