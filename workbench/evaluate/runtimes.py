"""``compare --runtimes``' rows: every runtime at its tuned setting on the same cases.

A row is a view of what the runtime's tuner returned (``tune`` returns it with its report:
:attr:`workbench.runtimes.base.TuneOutcome.row`; :mod:`workbench.runtimes.compare` asks every
runtime); the rows of the runtime families are made here from their tuners' reports:

* :func:`filter_row`: the ``tool_filtering`` block as ``tune`` proposes it (its sweep and rule);
* :func:`allowlist_row`: the static allowlist :mod:`workbench.evaluate.allowlist` proposes;
* :func:`deferred_row`: the loaded set, variant and results per search of
  :mod:`workbench.evaluate.deferred_tune` (an approximation of unpublished rankers);
* :func:`serve_row`: serve's engine fitted by :mod:`workbench.evaluate.serve_tune`.

Each is tuned within the comparison's budget (:attr:`RuntimeRow.budget`, max tool tokens per
task; a tuner that cannot get within it gives its cheapest point, flagged ``within`` false),
else with its own tuner's default rule (no budget: the knee of its front, budget.knee), and
measured k-fold held-out on the same folds, so every row is one figure per case measured by
a setting chosen without that case. Error bars are 95 %: Wilson for hit, the bootstrap for recall
and tokens per task (:mod:`workbench.evaluate.intervals`).

Tokens are tool tokens per task (one user message): for the HoloDeck rows one request; for the
deferred rows the search round trip is in (a task the loaded tools do not cover costs the search's
request and the one after it, see :mod:`workbench.evaluate.deferred_tune`).

With no budget the report also holds each runtime's front and the three budgets' table
(:mod:`workbench.evaluate.fronts`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.allowlist import AllowlistReport, Exposed
from workbench.evaluate.deferred_tune import DeferredReport, DeferredSetting
from workbench.evaluate.folds import folds_of
from workbench.evaluate.fronts import BudgetPoint, TableBudgets, at_table
from workbench.evaluate.generalise import Bars
from workbench.evaluate.intervals import Interval, bootstrap_mean, wilson
from workbench.evaluate.runs import TuneReport
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import gap
from workbench.evaluate.verdict import PerCase, Verdict

if TYPE_CHECKING:
    from workbench.evaluate.serve_tune import ServeTuneReport

T = TypeVar("T")


#: How the deferred rows' tokens differ from a request's, in words (the rows' note).
ROUND_TRIP = "a task the loaded tools do not cover takes two requests (the search, then the call)"


@dataclass(frozen=True)
class Figures:
    """Hit and recall (a row's in-sample figures)."""

    hit: float
    recall: float


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
    #: The tool tokens per task it was tuned within (None: its tuner's own rule, the knee).
    budget: int | None = None
    #: Whether its tuner found a setting within ``budget`` (False: its cheapest point, over it).
    within: bool = True
    #: The proposal's hit and recall on every case, the cases it was chosen on (None: not given).
    insample: tuple[float, float] | None = None
    #: The recurrence bars its tuner tried and the one it proposes at (None: a runtime that keeps
    #: no set; :mod:`workbench.evaluate.generalise`).
    bars: Bars | None = None
    #: Why the row stands at the runtime's current setting, not its tuner's proposal (the
    #: verdict kept it: :mod:`workbench.evaluate.verdict`); None: the proposal.
    kept: str | None = None
    #: A kept row's tuner's point, its mean tokens (where its front starts: fronts.front).
    proposal_tokens: float | None = None

    @property
    def cheapest(self) -> float:
        """The tokens of the tuner's own point (a kept row: the proposal it did not take)."""
        return self.tokens if self.proposal_tokens is None else self.proposal_tokens

    @property
    def over(self) -> bool:
        """It cannot get within its budget: the row is its cheapest point."""
        return self.budget is not None and not self.within

    @property
    def heldout_over(self) -> bool:
        """Tuned within the budget on the training folds, its held-out mean is above it."""
        return self.budget is not None and self.within and self.tokens > self.budget + 1e-9

    @property
    def hit(self) -> float:
        return sum(c.hit for c in self.cases) / max(len(self.cases), 1)

    @property
    def recall(self) -> float:
        return float(np.mean([c.recall for c in self.cases])) if self.cases else 0.0

    @property
    def tokens(self) -> float:
        return float(np.mean([c.tokens for c in self.cases])) if self.cases else 0.0

    @property
    def gap(self) -> dict[str, float] | None:
        """In-sample minus held-out hit and recall (:func:`workbench.evaluate.tuner.gap`)."""
        if self.insample is None:
            return None
        return gap(Figures(*self.insample), self)

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
            "budget": self.budget,
            "within_budget": self.within,
            "gap": self.gap,
            "recurrence": None if self.bars is None else self.bars.to_json(),
            "kept": self.kept,
        }


@dataclass(frozen=True)
class RuntimesReport:
    cases: int
    tokens_all: int
    folds: int
    rows: list[RuntimeRow]
    #: What the deferred rows searched each case as.
    queries: SearchQueries = MESSAGE
    #: The budget every row was tuned within (None: each at its knee, with the fronts below).
    budget: int | None = None
    #: Each runtime's held-out front (no budget only), cheapest budget first.
    fronts: dict[str, tuple[BudgetPoint, ...]] = field(default_factory=dict)
    #: The table's three budgets (no budget only).
    table: TableBudgets | None = None

    def how(self) -> str:
        """How every row was tuned, in words (the CLI's first line, the dashboard's notes)."""
        if self.budget is None:
            how = "each runtime tuned by its own tuner (no budget: the knee)"
        else:
            how = f"each runtime tuned within {self.budget:,} tool tokens per task"
        return f"{how}, measured {self.folds}-fold held-out"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cases": self.cases,
            "tokens_all": self.tokens_all,
            "folds": self.folds,
            "budget": self.budget,
            "rows": [r.to_json() for r in self.rows],
            "search_query": self.queries.to_json(),
        }
        if self.table is not None:
            out["fronts"] = {name: [p.to_json() for p in f] for name, f in self.fronts.items()}
            out["table"] = {
                "budgets": self.table.to_json(),
                "rows": {
                    name: [p.to_json() for p in at_table(f, self.table)]
                    for name, f in self.fronts.items()
                },
            }
        return out


def fold_order(case_order: Sequence[T], folds: int) -> list[T]:
    """Each case's figure of ``case_order`` fold by fold (each fold's cases in case order): the
    order a row's figures are in."""
    return [case_order[c] for fold in folds_of(len(case_order), folds) for c in fold.test]


def figures(results: Sequence[PerCase]) -> tuple[CaseFigures, ...]:
    """A row's per-case figures from the tuner's results (hit, recall, tokens)."""
    return tuple(CaseFigures(r.hit, r.recall, float(r.tokens)) for r in results)


def kept_or(
    row: RuntimeRow, verdict: Verdict, current: Sequence[PerCase], folds: int, now: str
) -> RuntimeRow:
    """``row``, or where the verdict would not propose it (a proposal at recall 0, or below the
    current setting beyond the error bar with no budget given: the rule every tuner shares,
    :mod:`workbench.evaluate.verdict`) the current setting's row, measured on the same cases
    (``current``, case order; the row's figures in fold order), saying so. ``now``: the
    current setting in a few words."""
    if not verdict.worse or verdict.kind == "give-up":
        return row
    held = figures(fold_order(current, folds))
    mean = sum(f.tokens for f in held) / max(len(held), 1)
    return dataclasses.replace(
        row,
        setting=f"current kept: {now}",
        params={"kept": True, "proposal": row.params},
        cases=held,
        within=row.budget is None or mean <= row.budget + 1e-9,
        insample=None,
        kept=verdict.reason,
        proposal_tokens=row.tokens,
    )


def filter_words(s: ToolFiltering) -> str:
    """A ``tool_filtering`` setting in a few words (its row)."""
    return f"{s.search_method} top_k {s.top_k} threshold {s.similarity_threshold:.2f}"


def filter_row(name: str, report: TuneReport, budget: int | None) -> RuntimeRow:
    """The row of a runtime that reads the ``tool_filtering`` block: tune's sweep, held-out per
    fold, tuned within ``budget`` (None: the knee)."""
    row = RuntimeRow(
        name,
        filter_words(report.setting),
        report.setting.block(),
        figures(report.heldout_cases),
        None,
        budget,
        report.within_budget,
        (report.insample.hit, report.insample.recall),
    )
    now = filter_words(report.block)
    return kept_or(row, report.verdict, report.current_cases, report.folds, now)


def exposed_words(report: AllowlistReport, exposed: Exposed) -> str:
    surf = report.surface
    kept = int((exposed & surf.candidate).sum())
    return f"{kept} of {int(surf.candidate.sum())} MCP tools exposed ({surf.backend})"


#: An allowlist row's note when the catalog's servers are not the agent's entries.
AS_ENTRIES = "the catalog's servers taken as the agent's MCP entries"


def allowlist_row(name: str, report: AllowlistReport, budget: int | None) -> RuntimeRow:
    """The row of a runtime of static allowlists: the exposed set chosen per fold, held-out
    (servers that are not the agent's entries taken as if they were, the row says)."""
    surf = report.surface
    row = RuntimeRow(
        name,
        exposed_words(report, report.setting),
        {"exposed": int((report.setting & surf.candidate).sum())},
        figures(report.heldout_cases),
        AS_ENTRIES if report.as_entries else None,
        budget,
        report.within_budget,
        (report.insample.hit, report.insample.recall),
        report.bars,
    )
    now = exposed_words(report, report.setting if report.current is None else report.current)
    return kept_or(row, report.verdict, report.current_cases, report.folds, now)


def deferred_row(
    name: str,
    report: DeferredReport,
    catalog: Catalog,
    budget: int | None,
    *,
    words: Callable[[DeferredSetting], str],
    note: str,
) -> RuntimeRow:
    """The row of a search-tool runtime: the loaded set, variant and results per search,
    held-out; ``words``: a setting in a few words, ``note``: what the figures stand on."""
    s = report.setting
    row = RuntimeRow(
        name,
        words(s),
        s.to_json(catalog),
        figures(report.heldout_cases),
        f"{note}; {ROUND_TRIP}",
        budget,
        report.within_budget,
        (report.insample.hit, report.insample.recall),
        report.bars,
    )
    now = words(report.current) if report.current is not None else ""
    return kept_or(row, report.verdict, report.current_cases, report.folds, now)


#: serve's row's note.
SERVE_NOTE = "exact: holo-tune's own engine, as serve runs it; the user's message is searched"


def serve_row(name: str, report: ServeTuneReport, words: str, budget: int | None) -> RuntimeRow:
    """holo-tune serve's row: its engine fitted held out within the budget per task
    (:mod:`workbench.evaluate.serve_tune`); ``words``: the settings in a few words."""
    fit = report.fit
    row = RuntimeRow(
        name,
        words,
        {k: v for k, v in report.settings.to_json().items() if k != "cases"},
        figures(fold_order(report.heldout, fit.folds)),
        SERVE_NOTE,
        budget,
        budget is None or report.fixed <= budget,
        (fit.insample.hit, fit.insample.recall),
    )
    return kept_or(row, report.verdict, list(report.now), fit.folds, "serve's defaults")
