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
none is, the one with the smallest gap. A higher bar keeps a smaller, more general set: on
livemcpbench's 94 cases the search-tool tuners' recall gap falls from 0.054-0.082 to within
0.05 at three cases, and PizzaPi's knee (whole servers) from 0.056 to none at five
(docs/runtimes.md#what-the-tuners-keep-and-the-gap).

A higher bar is proposed only when it is a held-out tie of the first bar. Within a budget the
user gave, that is the first bar's own point: a bar whose held-out hit or recall falls more than
:data:`MAX_GAP` below it leaves budget the user would spend unspent and loses recall for it, so
it is never proposed (on the sample agent's few cases a high bar keeps nothing). With no budget
the tuner's point is its own (the knee of its front), and a higher bar keeps less, so it
spends less: it is compared *at its own cost*, with the first bar's rule run again within the
tokens the higher bar spends (a point on the first bar's held-out front), and a bar more than
:data:`MAX_GAP` below that has lost recall to generality, not to the tokens it spends. Compared
at the first bar's own tokens, it would always look worse: at bfcl's knee HoloDeck 0.7's
allowlist at five cases (0.396 recall at 9,054 tokens, gap 0.000) was turned down for the
first bar's 0.589 at 36,625 (gap 0.063), though the first bar's rule within those tokens holds
out 0.388 (at 9,026).

The bar is chosen on the held-out figures it then reports, among at most three, and the bars
themselves were found on livemcpbench: a small selection, and its bias is upward (a run whose
held-out figures came out high is the likelier to hold). The report says which bars were tried
and their gaps (:class:`Bars`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from workbench.evaluate.budget import Budget
from workbench.evaluate.folds import Fold, cross_fit
from workbench.evaluate.metrics import CaseResult, Metrics, aggregate
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import MIN_CASES, Recurrence
from workbench.evaluate.verdict import Verdict, judge_held_out

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
class Point:
    """Held-out figures at a cost: what the first bar's rule holds out within a higher bar's
    tokens."""

    tokens: float
    hit: float
    recall: float

    def to_json(self) -> dict[str, Any]:
        return {"tokens": round(self.tokens, 3), "hit": self.hit, "recall": self.recall}


@dataclass(frozen=True, slots=True)
class Trial:
    """One bar tried, and the gap its rule showed."""

    bar: int
    hit: float
    recall: float
    #: Its held-out hit or recall fell more than :data:`MAX_GAP` below the first bar's (with no
    #: budget: the first bar's rule within its tokens, :attr:`against`): it is not a held-out tie
    #: of the first, so it is never proposed.
    worse: bool = False
    #: The first bar's rule tuned within this bar's held-out tokens, held out (None: not run: a
    #: budget was given, or this bar's held-out figures were within :data:`MAX_GAP` of the first
    #: bar's own).
    against: Point | None = None

    @property
    def worst(self) -> float:
        return max(self.hit, self.recall)

    @property
    def holds(self) -> bool:
        """Its gap is within :data:`MAX_GAP`, hit and recall."""
        return self.worst <= MAX_GAP + 1e-9

    def to_json(self) -> dict[str, Any]:
        gap = {"hit": round(self.hit, 9), "recall": round(self.recall, 9)}
        out: dict[str, Any] = {"bar": self.bar, "gap": gap, "heldout_worse": self.worse}
        if self.against is not None:
            out["first_bar_at_its_tokens"] = self.against.to_json()
        return out

    def text(self) -> str:
        said = f"at {self.bar} the gap was hit {self.hit:+.3f}, recall {self.recall:+.3f}"
        if not self.worse:
            return said
        return f"{said} but held-out fell more than {MAX_GAP:g} below {self._against()}"

    def cost_text(self, first: int) -> str:
        """Why a higher bar that holds out less than the first is still a tie of it."""
        return f"within its tokens the rule at {first} holds out {self._against()}"

    def _against(self) -> str:
        a = self.against
        if a is None:
            return "the first bar's"
        return f"hit {a.hit:.3f}, recall {a.recall:.3f} at {a.tokens:,.0f} tokens"


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
            said = (
                f"what {self.chosen} cases of each training set expect: no bar held the gap "
                f"within {MAX_GAP:g}, this one's is the smallest ({then})"
            )
        else:
            said = f"only what {self.chosen} cases of each training set expect ({then})"
        chosen = next(t for t in self.tried if t.bar == self.chosen)
        if chosen.against is not None:
            said += f"; {chosen.cost_text(self.tried[0].bar)}"
        return said

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


def _below(heldout: HitRecall, than: HitRecall) -> bool:
    """``heldout`` more than :data:`MAX_GAP` below ``than``, hit or recall."""
    return heldout.hit < than.hit - MAX_GAP - 1e-9 or heldout.recall < than.recall - MAX_GAP - 1e-9


def generalising(
    run: Callable[[Recurrence, float | None], T],
    figures: Callable[[T], tuple[HitRecall, HitRecall]],
    cost: Callable[[T], float] | None,
    cases: int,
    folds: int,
) -> tuple[T, Bars]:
    """``run(recurrence, cap)`` (the whole rule: proposal and k-fold; ``cap``: None for the
    budget as given, else tuned within at most that many tokens too) at each bar of
    :data:`BARS` until one's gap is within :data:`MAX_GAP` (module docstring).
    ``figures(out)``: its in-sample and held-out figures; ``cost(out)``: its held-out tokens,
    to compare a higher bar with the first at its cost (None: a budget was given, and every bar
    is compared with the first bar's own point within it)."""
    tried: list[Trial] = []
    results: list[T] = []
    first: HitRecall | None = None
    for bar in BARS:
        out = run(Recurrence.of(cases, folds, bar), None)
        insample, heldout = figures(out)
        against: Point | None = None
        worse = False
        if first is None:
            first = heldout
        elif cost is None:
            worse = _below(heldout, first)
        elif _below(heldout, first):
            # below the first bar's own point: compare at this bar's cost, on the first's front
            there = run(Recurrence.of(cases, folds, BARS[0]), cost(out))
            held_there = figures(there)[1]
            against = Point(cost(there), held_there.hit, held_there.recall)
            worse = _below(heldout, held_there)
        trial = Trial(
            bar, insample.hit - heldout.hit, insample.recall - heldout.recall, worse, against
        )
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

    def figures(self) -> tuple[Metrics, Metrics]:
        """In-sample and held-out (what :func:`generalising` reads)."""
        return self.insample, self.heldout

    def cost(self) -> float:
        """Held-out mean tokens per task."""
        return self.heldout.tokens_selected_mean


def held_out_rule(
    choose: Callable[[list[int]], S],
    measured: Callable[[S, Fold | None], list[CaseResult]],
    cases: int,
    folds: int,
    tokens_all: int,
) -> Rule[S]:
    """A tuner's rule at one bar, the one loop every tuner generalises with: ``choose`` (the
    setting for the cases of those ids) on every case, and k-fold, each fold chosen on the
    others and measured on its own (``measured(setting, fold)``; None: every case)."""
    chosen = choose(list(range(cases)))
    held = cross_fit(cases, folds, lambda fold: choose(list(fold.train)), measured)
    pooled = held.fold_order()
    insample = aggregate(measured(chosen, None), tokens_all)
    heldout = aggregate(pooled, tokens_all)
    return Rule(chosen, held.settings, tuple(pooled), heldout, insample)


class SetFigures(Protocol):
    """What a set report reads of its figures (:class:`~workbench.evaluate.metrics.Metrics`,
    the allowlists' :class:`~workbench.evaluate.allowlist.StaticMetrics`)."""

    @property
    def hit(self) -> float: ...

    @property
    def recall(self) -> float: ...

    @property
    def tokens_all(self) -> int: ...


M = TypeVar("M", bound=SetFigures)


@dataclass(frozen=True, kw_only=True)
class SetReport(Generic[S, M]):
    """What a set tuner reports (the search-tool runtimes' loaded set, PizzaPi's settings,
    HoloDeck 0.7's exposed tools): the setting proposed within the budget, its held-out and
    in-sample figures, the runtime's default's (the allowlists: what the file exposes now), the
    folds and each fold's setting, each held-out case (fold order), what each case was searched
    as, the recurrence bars, and what the runtime runs today with each case under it (case
    order): the verdict's two sides, a case's tokens per :attr:`unit`."""

    #: What a case's tokens are: a ``task`` (the search round trip in) or one ``request``.
    unit: ClassVar[str] = "task"

    setting: S
    budget: Budget
    heldout: M
    insample: M
    default: M
    folds: int
    within_budget: bool
    fold_settings: tuple[S, ...] = ()
    heldout_cases: tuple[CaseResult, ...] = ()
    queries: SearchQueries = MESSAGE
    bars: Bars = Bars()
    current: S | None = None
    current_cases: tuple[CaseResult, ...] = field(default=(), repr=False)

    def same(self) -> bool:
        """Whether the proposal is the current setting."""
        return self.current == self.setting

    @cached_property
    def verdict(self) -> Verdict:
        """Whether the proposal is a recommendation against the current setting
        (:mod:`workbench.evaluate.verdict`, the rule every tuner shares)."""
        return judge_held_out(
            self.heldout_cases,
            self.current_cases,
            budget=self.budget,
            tokens_all=self.default.tokens_all,
            same=self.same(),
            unit=self.unit,
        )

    @property
    def gap(self) -> float:
        """In-sample recall minus held-out recall (how much the choice fits its own cases)."""
        return self.insample.recall - self.heldout.recall
