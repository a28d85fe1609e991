"""Whether a tuner's proposal is a recommendation: one rule for every runtime's tuner.

Every tuner (the ``tool_filtering`` block's sweep, HoloDeck 0.7's allowlists, the search-tool
runtimes' deferred loading, PizzaPi's) measures its proposal held-out and the *current* setting
(what the runtime reads today: the file's block, its allowlists, its configuration file, else the
runtime's default) on the same cases. :func:`judge` compares the two per case (paired 95 %
intervals, :mod:`workbench.evaluate.intervals`) and says what to do:

* ``same``: the proposal is the current setting;
* ``keep``: the proposal is not a recommendation (its held-out recall is 0, or its recall or hit
  is below the current setting's beyond the error bar, or with no budget flag it trades recall
  for tokens at all): the current setting is kept and the verdict says what the budget costs;
* ``give-up``: the same loss, but the user set the budget: the proposal stands within it, and
  the verdict says plainly what it gives up;
* ``keep-all``: with no budget flag, a catalog whose every tool costs at most
  :data:`SMALL_CATALOG` tokens per request (whatever the tuner found there, the current setting
  too): filtering saves little, keep every tool;
* ``change``: the proposal loses nothing beyond the error bar and differs from the current
  setting beyond the noise of the cases;
* ``tie``: it differs from the current setting within the noise of the cases.

``--apply`` (and ``apply``, the dashboard's Write and Evaluate's adopt) refuses to write a
setting :attr:`Verdict.worse` than the current one unless forced.

Pure functions: no I/O, nothing imported from the commands.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from workbench.evaluate.budget import KNEE_TOLERANCE, Budget
from workbench.evaluate.intervals import Interval, paired_difference

#: A catalog whose every tool costs at most this many tokens per request is small: with no
#: budget flag, filtering it saves too little to be worth a missed tool.
SMALL_CATALOG = 2000

Kind = Literal["same", "keep", "give-up", "keep-all", "change", "tie"]
#: The verdicts under which the tuner does not recommend its proposal.
NOT_RECOMMENDED: frozenset[str] = frozenset({"keep", "keep-all"})


class PerCase(Protocol):
    """What the rule reads of one case's result (a metrics.CaseResult)."""

    @property
    def hit(self) -> bool: ...
    @property
    def recall(self) -> float: ...
    @property
    def tokens(self) -> int: ...


@dataclass(frozen=True)
class Difference:
    """The mean per-case difference proposal - current of one figure, with its 95 % interval."""

    mean: float
    ci95: Interval

    @property
    def below(self) -> bool:
        """Below 0 beyond the error bar (the whole interval under 0)."""
        return self.ci95[1] < 0.0

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci95": list(self.ci95)}


@dataclass(frozen=True)
class Verdict:
    """The rule's answer for one proposal (module doc)."""

    kind: Kind
    #: Held-out means of the proposal and the current setting (``recall``, ``hit``, ``tokens``).
    proposal: dict[str, float]
    current: dict[str, float]
    #: ``recall``, ``hit`` and ``tokens``: proposal - current, per case (empty: not measured).
    difference: dict[str, Difference]
    #: Why, in one sentence (the text report's verdict line; ``--json``'s ``reason``).
    reason: str
    tokens_all: int = 0

    @property
    def kept(self) -> bool:
        """The tuner keeps what it has (the current setting, or every tool): the proposal is not
        recommended."""
        return self.kind in NOT_RECOMMENDED

    @property
    def worse(self) -> bool:
        """The proposal is measured worse than the current setting (recall 0, or recall or hit
        below it beyond the error bar): writing it needs ``--force``."""
        if self.proposal.get("recall", 1.0) <= 0.0 < self.current.get("recall", 0.0):
            return True
        return any(d.below for k, d in self.difference.items() if k in ("recall", "hit"))

    @property
    def label(self) -> str:
        """The word in front of the tuner's setting in the text report: ``proposed`` when it is
        recommended, ``tuned`` (the best within the budget, not advised) when it is kept from."""
        return "tuned   " if self.kept else "proposed"

    def worse_text(self) -> str:
        """What makes it worse, in one clause (the refusals of ``--apply``, ``apply`` and the
        dashboard's second confirmation)."""
        r = self.difference.get("recall")
        interval = f" (difference {r.ci95[0]:+.3f} to {r.ci95[1]:+.3f})" if r is not None else ""
        return (
            f"held-out recall {self.proposal['recall']:.3f} against "
            f"{self.current['recall']:.3f} now{interval}"
        )

    def lines(self) -> list[str]:
        """The text report's verdict lines."""
        head = {
            "same": "nothing to change",
            "keep": "keep the current setting",
            "give-up": "within your budget, at a loss",
            "keep-all": "keep every tool",
            "change": "change",
            "tie": "keep the current setting",
        }[self.kind]
        out = [f"verdict   {head}: {self.reason}"]
        if self.difference:
            out.append(f"          {self.difference_text()}")
        return out

    def difference_text(self) -> str:
        r, h, t = (self.difference[k] for k in ("recall", "hit", "tokens"))
        return (
            f"proposal - current per case: recall {r.mean:+.3f} ({r.ci95[0]:+.3f} to "
            f"{r.ci95[1]:+.3f}), hit {h.mean:+.3f} ({h.ci95[0]:+.3f} to {h.ci95[1]:+.3f}), "
            f"tokens {t.mean:+,.0f} ({t.ci95[0]:+,.0f} to {t.ci95[1]:+,.0f}); 95% intervals"
        )

    def to_json(self) -> dict[str, Any]:
        """docs/json.md's ``verdict`` object."""
        return {
            "kind": self.kind,
            "kept": self.kept,
            "worse": self.worse,
            "reason": self.reason,
            "proposal": self.proposal,
            "current": self.current,
            "difference": {k: d.to_json() for k, d in self.difference.items()},
        }


def means(results: Sequence[PerCase]) -> dict[str, float]:
    """Mean recall, hit and tokens of some cases' results."""
    n = max(len(results), 1)
    return {
        "recall": math.fsum(r.recall for r in results) / n,
        "hit": math.fsum(1.0 if r.hit else 0.0 for r in results) / n,
        "tokens": math.fsum(float(r.tokens) for r in results) / n,
    }


def differences(proposal: Sequence[PerCase], current: Sequence[PerCase]) -> dict[str, Difference]:
    """Paired differences proposal - current of recall, hit and tokens (empty when the two are
    not the same cases)."""
    if not proposal or len(proposal) != len(current):
        return {}
    out = {}
    for name, of in (
        ("recall", lambda r: r.recall),
        ("hit", lambda r: 1.0 if r.hit else 0.0),
        ("tokens", lambda r: float(r.tokens)),
    ):
        a = [of(r) for r in proposal]
        b = [of(r) for r in current]
        mean = math.fsum(x - y for x, y in zip(a, b, strict=True)) / len(a)
        out[name] = Difference(mean, paired_difference(a, b))
    return out


class CaseResultOf(PerCase, Protocol):
    """A case's result that names its case (a metrics.CaseResult)."""

    @property
    def case(self) -> object: ...


def judge_held_out(
    heldout: Sequence[CaseResultOf],
    current: Sequence[CaseResultOf],
    *,
    budget: Budget,
    tokens_all: int,
    same: bool,
    unit: str = "task",
) -> Verdict:
    """:func:`judge` of a k-fold tuner's held-out results (in fold order) against the current
    setting's (in case order): the held-out ones put in case order first, per ``unit`` (a task:
    the search-tool tuners'; a request: the allowlists')."""
    pos = {id(r.case): i for i, r in enumerate(current)}
    by_case = sorted(heldout, key=lambda r: pos.get(id(r.case), -1))
    return judge(by_case, current, budget=budget, tokens_all=tokens_all, same=same, unit=unit)


def judge(
    proposal: Sequence[PerCase],
    current: Sequence[PerCase],
    *,
    budget: Budget,
    tokens_all: int,
    same: bool = False,
    unit: str = "request",
) -> Verdict:
    """The verdict on ``proposal`` (each case's held-out result) against ``current`` (the
    current setting's result on the same cases, same order) under ``budget`` (the flags the user
    gave, or none); ``tokens_all``: every tool's tokens in one request; ``same``: the proposal
    is the current setting; ``unit``: what a token figure is per (``request``, ``task``)."""
    explicit = budget.explicit
    p, c = means(proposal), means(current)
    diff = differences(proposal, current)

    def verdict(kind: Kind, reason: str) -> Verdict:
        return Verdict(kind, p, c, diff, reason, tokens_all)

    # a small agent keeps every tool whatever the tuner found, its current setting too
    if not explicit and 0 < tokens_all <= SMALL_CATALOG:
        return verdict(
            "keep-all",
            f"every tool costs {tokens_all:,} tokens per request (at most {SMALL_CATALOG:,}): "
            "filtering saves little here, so send every tool (a budget flag tunes anyway)",
        )
    if same:
        return verdict("same", "the proposal is the current setting")
    saved = c["tokens"] - p["tokens"]
    fewer = f"{saved:,.0f} fewer" if saved >= 0 else f"{-saved:,.0f} more"
    cost = (
        f"recall {p['recall']:.3f} against {c['recall']:.3f} now, hit {p['hit']:.3f} against "
        f"{c['hit']:.3f}, for {fewer} tokens per {unit}"
    )
    if explicit and budget.min_hit is None and budget.limit(tokens_all) >= tokens_all:
        return verdict(
            "keep-all",
            f"every tool ({tokens_all:,} tokens per request) fits the budget: send every tool",
        )
    if p["recall"] <= 0.0 and c["recall"] > 0.0:
        return verdict(
            "keep",
            "the proposal reaches none of the expected tools held-out (recall 0): "
            f"the budget costs everything ({cost}); the current setting is kept",
        )
    loss = [k for k in ("recall", "hit") if k in diff and diff[k].below]
    if loss:
        what = " and ".join(loss)
        if explicit:
            return verdict(
                "give-up",
                f"your budget gives up {what} beyond the error bar: {cost}",
            )
        return verdict(
            "keep",
            f"the budget costs {what} beyond the error bar ({cost}); the current setting is "
            "kept (--max-tokens sets a budget you accept the loss for)",
        )
    if not explicit and "recall" in diff and diff["recall"].mean < -KNEE_TOLERANCE:
        return verdict(
            "keep",
            f"with no budget flag the tuner does not trade recall for tokens ({cost}); the "
            "current setting is kept (--max-tokens sets a budget you accept the loss for)",
        )
    if diff and all(d.ci95[0] <= 0.0 <= d.ci95[1] for d in diff.values()):
        return verdict(
            "tie",
            f"the proposal is not distinguishable from it on {len(proposal)} cases (every "
            "interval of the per-case difference includes 0); more labelled cases would tell",
        )
    if diff and diff["recall"].mean < 0.0:
        return verdict(
            "change",
            f"{cost}: recall {diff['recall'].mean:+.3f}, within the error bar",
        )
    return verdict("change", f"{cost}, nothing lost")


def worse_than_now(
    new: Sequence[PerCase], now: Sequence[PerCase], *, tokens_all: int, same: bool = False
) -> str | None:
    """Why a fixed setting (``new``, each case's result) is measured worse than what runs now
    (``now``, the same cases) by :func:`judge` (:meth:`Verdict.worse_text`), or None: not worse.
    Two fixed settings: nothing is fitted, every case is held out. The dashboard's Write of a
    runtime's own file asks a second confirmation on it, as ``apply --cases`` refuses."""
    verdict = judge(new, now, budget=Budget(max_tokens=0), tokens_all=tokens_all, same=same)
    return verdict.worse_text() if verdict.worse else None
