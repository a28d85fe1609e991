"""Which runtime does better at the budget the user has: each runtime's held-out front.

A runtime's row of ``compare --runtimes`` stands at its own tuner's knee, so two rows compare
recall at different tokens. Here every runtime is tuned *within* a budget (max tool tokens per
task, :attr:`~workbench.evaluate.runtimes.RuntimeRow.budget`) and measured held-out on the same
folds, at a set of budgets:

* its *front*: a geometric grid of :data:`GRID_POINTS` budgets from its cheapest point (its
  tuner at a budget of 0; at least :data:`FLOOR_SHARE` of all tools' tokens) to the cost of
  every tool, plus the three budgets below;
* the *table's* three budgets, the same for every runtime (:class:`TableBudgets`): what HoloDeck's
  defaults send (the filter at HoloDeck's default ``tool_filtering``, mean tokens per request),
  the knee of the runtime that reads the block (holodeck-0.6's row with no budget: its mean
  held-out tokens per task) and twice that.

A point is the runtime's row at that budget, the very row ``compare --runtimes --max-tokens``
prints (:data:`RowAt`: :mod:`workbench.runtimes.compare` asks the runtime's tuner, keeping the
rankings and sweeps it makes between budgets, so each budget only chooses and measures again).
A runtime that cannot get within a budget stands at its cheapest point, flagged
(``within_budget`` false), never silently over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from workbench.config import AgentConfig
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.front_grid import FrontLine
from workbench.evaluate.metrics import Ranker, evaluate
from workbench.search.delivery import runtime_engine
from workbench.tokens import TokenTable

if TYPE_CHECKING:  # evaluate.runtimes builds its report from this module
    from workbench.catalog.models import Catalog
    from workbench.evaluate.runtimes import RuntimeRow, RuntimesReport

#: A runtime's row tuned within a budget (None: its knee), by its name.
RowAt = Callable[[str, "int | None"], "RuntimeRow"]

#: Budgets on a runtime's front, its cheapest and the cost of every tool included.
GRID_POINTS = 6
#: The grid starts at no less than this share of all tools' tokens (a filter that sends nothing
#: is the cheapest point, and a grid from 0 tokens is no grid).
FLOOR_SHARE = 0.01


@dataclass(frozen=True)
class BudgetPoint:
    """A runtime tuned within ``budget``, measured held-out (its row at that budget)."""

    budget: int
    row: RuntimeRow

    def to_json(self) -> dict[str, Any]:
        ci = self.row.ci()
        return {
            "budget": self.budget,
            "hit": self.row.hit,
            "recall": self.row.recall,
            "tokens": self.row.tokens,
            "ci95": {k: list(v) for k, v in ci.items()},
            "within_budget": self.row.within,
            "setting": self.row.setting,
        }


@dataclass(frozen=True)
class TableBudgets:
    """The three budgets every runtime is read at (module doc)."""

    defaults: int
    knee: int
    #: The runtime whose knee it is (the one that reads the ``tool_filtering`` block).
    knee_of: str

    def named(self) -> tuple[tuple[str, str, int], ...]:
        """``(key, label, budget)`` of each, in the table's order."""
        return (
            ("holodeck_defaults", "HoloDeck's defaults", self.defaults),
            ("knee", f"{self.knee_of}'s knee", self.knee),
            ("twice_knee", "twice the knee", 2 * self.knee),
        )

    def budgets(self) -> tuple[int, ...]:
        return tuple(b for _, _, b in self.named())

    def to_json(self) -> list[dict[str, Any]]:
        return [{"name": k, "label": label, "budget": b} for k, label, b in self.named()]


def defaults_tokens(
    engine: Ranker, agent: AgentConfig, catalog: Catalog, tokens: TokenTable, cases: CaseSet
) -> float:
    """Mean tool tokens per request HoloDeck's filter sends at its default setting."""
    setting = ToolFiltering(enabled=True)
    ranker = runtime_engine(engine, agent.agent)  # what the runtime runs
    report = evaluate(ranker, catalog, tokens, cases, setting)
    return report.metrics.tokens_selected_mean


def table_budgets(row_at: RowAt, block: str, defaults: float) -> TableBudgets:
    """The table's three budgets: ``defaults`` (:func:`defaults_tokens`) and the knee of
    ``block``'s row (the runtime that reads the ``tool_filtering`` block)."""
    knee = row_at(block, None).tokens
    return TableBudgets(round(defaults), round(knee), block)


def grid(cheapest: float, tokens_all: float, points: int = GRID_POINTS) -> list[int]:
    """``points`` budgets in geometric steps from ``cheapest`` (at least :data:`FLOOR_SHARE` of
    ``tokens_all``) to ``tokens_all``, rounded to whole tokens."""
    low, high = max(cheapest, FLOOR_SHARE * tokens_all, 1.0), max(float(tokens_all), 1.0)
    if low >= high or points < 2:
        return [round(high)]
    ratio = high / low
    return sorted({round(low * ratio ** (i / (points - 1))) for i in range(points)})


def front(
    row_at: RowAt, name: str, table: TableBudgets, tokens_all: float, points: int = GRID_POINTS
) -> tuple[BudgetPoint, ...]:
    """``name``'s held-out front: its row at each budget of its grid and of ``table``."""
    cheapest = row_at(name, 0).cheapest  # the tuner's own point, even where kept
    budgets = sorted({*grid(cheapest, tokens_all, points), *table.budgets()})
    return tuple(BudgetPoint(b, row_at(name, b)) for b in budgets)


def budget_mark(row: RuntimeRow) -> str:
    """``✗`` a row that cannot get within its budget (its cheapest point), ``!`` a row tuned
    within it whose held-out mean is above it, else nothing (the CLI's and the dashboard's)."""
    return "✗" if row.over else "!" if row.heldout_over else ""


def point_cell(point: BudgetPoint, recall_ci: bool = True) -> str:
    """One runtime at one budget: held-out recall (its 95% interval) and tokens, marked."""
    low, high = point.row.ci()["recall"]
    interval = f" [{low:.2f}, {high:.2f}]" if recall_ci else ""
    mark = f" {budget_mark(point.row)}" if budget_mark(point.row) else ""
    return f"{point.row.recall:.3f}{interval} {point.row.tokens:,.0f}{mark}"


def at_table(points: Sequence[BudgetPoint], table: TableBudgets) -> list[BudgetPoint]:
    """The front's points at the table's three budgets, in the table's order."""
    by_budget = {p.budget: p for p in points}
    return [by_budget[b] for b in table.budgets() if b in by_budget]


class Marked(Protocol):
    """A runtime as the plots mark it (:class:`workbench.runtimes.base.Runtime` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def marker(self) -> tuple[str, str]: ...


def front_lines(report: RuntimesReport, runtimes: Sequence[Marked]) -> tuple[FrontLine, ...]:
    """Each runtime's front as the plots draw it (one point per distinct budget's figures), marked
    as ``runtimes`` (the registered ones) mark it (``?``: a name none of them has)."""
    markers = {r.name: r.marker[0] for r in runtimes}
    out = []
    for name, points in report.fronts.items():
        marker = markers.get(name, "?")
        figures = tuple(dict.fromkeys((p.row.tokens, p.row.recall) for p in points))
        out.append(FrontLine(name, marker, figures))
    return tuple(out)
