"""A tuner that keeps a set keeps only what its promise holds for.

The tuners that keep a set (tools kept loaded, exposed, pinned, servers loaded) keep what enough
training cases expect (:class:`~workbench.evaluate.tuner.Recurrence`: at first
:data:`~workbench.evaluate.tuner.MIN_CASES` cases per training set). On a few cases that is not
always enough: the proposal, chosen on every case, keeps tools that three or four cases expect,
and each of those cases is one of the votes that kept them. Held out, a case loses its own vote,
and a training set short of it keeps the tool less often: the proposal's in-sample figures are
better than what its rule does on cases it has not seen (the gap), and the printed promise is
worse than it looks.

:func:`generalising` runs the rule at each bar of :data:`BARS`, least general first, and keeps
the first whose gap (in-sample minus held-out, hit and recall) is at most :data:`MAX_GAP`; if
none is, the one with the smallest gap. A bar whose held-out hit or recall falls more than
:data:`MAX_GAP` below the first bar's is not a held-out tie of it and is never proposed (on a
few cases a high bar keeps nothing, and its gap of zero would otherwise win). A higher bar
keeps a smaller, more general set: where the cases are many (bfcl's 2,351) the first bar holds
and nothing changes; on livemcpbench's 94 the search-tool tuners' recall gap falls from
0.054-0.082 to within 0.05 at three cases, and PizzaPi's knee (whole servers) from 0.056 to
none at five (docs/runtimes.md#what-the-tuners-keep-and-the-gap).

The bar is chosen on the held-out figures it then reports, among at most three, and the bars
themselves were found on livemcpbench: a small selection, and its bias is upward (a run whose
held-out figures came out high is the likelier to hold). The report says which bars were tried
and their gaps (:class:`Bars`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from workbench.evaluate.metrics import CaseResult, Metrics
from workbench.evaluate.tuner import MIN_CASES, Recurrence

#: The largest gap (in-sample minus held-out hit or recall) a set-keeping tuner accepts before it
#: asks more cases of what it keeps.
MAX_GAP = 0.05
#: The bars tried, in cases per training set of the k-fold, least general first. Three and five
#: were found on livemcpbench: three is where the search-tool tuners' gaps hold; PizzaPi's
#: servers, each expected by many cases, pass three, and five is where its knee's gap holds.
BARS = (MIN_CASES, MIN_CASES + 1, MIN_CASES + 3)

T = TypeVar("T")
S = TypeVar("S")


class HitRecall(Protocol):
    @property
    def hit(self) -> float: ...
    @property
    def recall(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Trial:
    """One bar tried, and the gap its rule showed."""

    bar: int
    hit: float
    recall: float
    #: Its held-out hit or recall fell more than :data:`MAX_GAP` below the first bar's: a set
    #: that general is not a held-out tie of the first, so it is never proposed.
    worse: bool = False

    @property
    def worst(self) -> float:
        return max(self.hit, self.recall)

    @property
    def holds(self) -> bool:
        """Its gap is within :data:`MAX_GAP`, hit and recall."""
        return self.worst <= MAX_GAP + 1e-9

    def to_json(self) -> dict[str, Any]:
        gap = {"hit": round(self.hit, 9), "recall": round(self.recall, 9)}
        return {"bar": self.bar, "gap": gap, "heldout_worse": self.worse}

    def text(self) -> str:
        said = f"at {self.bar} the gap was hit {self.hit:+.3f}, recall {self.recall:+.3f}"
        return f"{said} but held-out fell more than {MAX_GAP:g}" if self.worse else said


@dataclass(frozen=True, slots=True)
class Bars:
    """The bars a tuner tried, in order; :attr:`chosen` the one it proposes."""

    tried: tuple[Trial, ...] = ()
    chosen: int = MIN_CASES

    def text(self) -> str:
        """One line on what the kept tools needed (empty when the first bar held)."""
        others = [t for t in self.tried if t.bar != self.chosen]
        if not others:
            return ""
        then = "; ".join(t.text() for t in others)
        if not self.held:
            return (
                f"what {self.chosen} cases of each training set expect: no bar held the gap "
                f"within {MAX_GAP:g}, this one's is the smallest ({then})"
            )
        return f"only what {self.chosen} cases of each training set expect ({then})"

    @property
    def held(self) -> bool:
        return any(t.bar == self.chosen and t.holds for t in self.tried)

    def to_json(self) -> dict[str, Any]:
        return {
            "bar": self.chosen,
            "max_gap": MAX_GAP,
            "tried": [t.to_json() for t in self.tried],
        }


def bars_lines(bars: Bars) -> list[str]:
    """The report's line on the bar, under the gap (none when the first bar held)."""
    text = bars.text()
    return [f"  kept      {text}"] if text else []


def generalising(
    run: Callable[[Recurrence], T],
    figures: Callable[[T], tuple[HitRecall, HitRecall]],
    cases: int,
    folds: int,
) -> tuple[T, Bars]:
    """``run`` (the whole rule: proposal and k-fold) at each bar of :data:`BARS` until one's gap
    is within :data:`MAX_GAP` (module docstring). ``figures(out)``: its in-sample and held-out
    figures."""
    tried: list[Trial] = []
    results: list[T] = []
    first: HitRecall | None = None
    for bar in BARS:
        out = run(Recurrence.of(cases, folds, bar))
        insample, heldout = figures(out)
        first = first or heldout
        worse = (
            heldout.hit < first.hit - MAX_GAP - 1e-9
            or heldout.recall < first.recall - MAX_GAP - 1e-9
        )
        trial = Trial(bar, insample.hit - heldout.hit, insample.recall - heldout.recall, worse)
        tried.append(trial)
        results.append(out)
        if worse or trial.holds:
            break  # a higher bar keeps less still
    # the last one run when it held (the loop stopped there), else the smallest gap among the
    # held-out ties of the first bar (ties: the lower bar)
    ties = [i for i, t in enumerate(tried) if not t.worse]
    best = min(ties, key=lambda i: (round(tried[i].worst, 9), i))
    return results[best], Bars(tuple(tried), tried[best].bar)


@dataclass(frozen=True)
class Rule(Generic[S]):
    """A tuner's rule run at one bar: its proposal, each fold's setting, the held-out cases
    (fold order) and the figures :func:`generalising` reads."""

    setting: S
    fold_settings: tuple[S, ...]
    pooled: tuple[CaseResult, ...]
    heldout: Metrics
    insample: Metrics
