"""``compare --runtimes`` and the dashboard's ``w``: every runtime's own tuner on the same cases.

A runtime's row is what its :meth:`~workbench.runtimes.base.Runtime.tune` returns
(:attr:`~workbench.runtimes.base.TuneOutcome.row`), asked with the comparison's budget as
``max_tokens``, its folds, what its cases are searched as, a cache the tuners share between
budgets and ``figures_only`` (only the row is read; no what-if rows): ``tune --runtime NAME``
and the row are one computation. The rows, the fronts and the three budgets' table
(:mod:`workbench.evaluate.fronts`) are made here; the rows' figures and their words in
:mod:`workbench.evaluate.runtimes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from workbench.evaluate.cases import CaseSet
from workbench.evaluate.fronts import (
    BudgetPoint,
    defaults_tokens,
    front,
    table_budgets,
)
from workbench.evaluate.metrics import Progress
from workbench.evaluate.runtimes import RuntimeRow, RuntimesReport
from workbench.evaluate.search_queries import MESSAGE, SearchQueries
from workbench.evaluate.tuner import DEFAULT_FOLDS
from workbench.runtimes.base import Runtime, TuneRequest
from workbench.runtimes.detect import RuntimeInfo
from workbench.workspace import Workspace

#: The reason a comparison's rows give for their runtime (each is asked by name).
WHY = "compare --runtimes"


def runtime_row(
    runtime: Runtime,
    ws: Workspace,
    cases: CaseSet,
    budget: int | None = None,
    *,
    folds: int = DEFAULT_FOLDS,
    queries: SearchQueries = MESSAGE,
    cache: dict[Any, Any] | None = None,
    on_progress: Progress | None = None,
) -> RuntimeRow:
    """``runtime``'s row: its tuner within ``budget`` tool tokens per task (None: its own rule,
    the knee), held out on ``folds`` folds of ``cases`` (each case searched as ``queries``
    says). ``cache``: what its tuner keeps between budgets on these cases."""
    request = TuneRequest(
        ws,
        cases,
        RuntimeInfo(runtime.name, WHY, "flag"),
        max_tokens=budget,
        folds=folds,
        what_if=False,
        queries=queries,
        quiet=True,
        cache=cache,
        on_progress=on_progress,
        figures_only=True,
    )
    return runtime.tune(request).row


def compare_runtimes(
    ws: Workspace,
    cases: CaseSet,
    *,
    registry: Sequence[Runtime],
    runtimes: Sequence[str] | None = None,
    folds: int = DEFAULT_FOLDS,
    queries: SearchQueries = MESSAGE,
    budget: int | None = None,
    on_runtime: Callable[[str], None] | None = None,
    on_progress: Progress | None = None,
    cache: dict[Any, Any] | None = None,
) -> RuntimesReport:
    """Every runtime of ``runtimes`` (names; default: every one of ``registry``, the registered
    runtimes, :func:`workbench.runtimes.all_runtimes`, in display order) tuned within ``budget``
    tool tokens per task, held-out, on ``cases`` (the search-tool rows search each case as
    ``queries`` says: its message, or the query a model wrote). With no budget each row is its
    tuner's knee, and the report holds each runtime's front and the three budgets' table
    (:mod:`workbench.evaluate.fronts`).

    ``on_runtime(name)`` is called as each runtime starts; ``on_progress(done, total)`` counts
    the cases the block's tuner has scored (the longest part). ``cache``: what the tuners keep
    between calls on the same cases (a caller that asks one runtime at a time passes the same
    dict to each call)."""
    memo: dict[Any, Any] = {} if cache is None else cache
    by_name = {r.name: r for r in registry}

    def row_at(name: str, at: int | None) -> RuntimeRow:
        """``name``'s row within ``at`` (None: its knee), once per comparison."""
        key = ("row", name, at)
        if key not in memo:
            memo[key] = runtime_row(
                by_name[name],
                ws,
                cases,
                at,
                folds=folds,
                queries=queries,
                cache=memo,
                on_progress=on_progress,
            )
        return cast("RuntimeRow", memo[key])

    table = None
    if budget is None:
        if "table-budgets" not in memo:
            block = next(r.name for r in registry if r.reads_tool_filtering)
            defaults = defaults_tokens(ws.engine, ws.agent, ws.catalog, ws.tokens, cases)
            memo["table-budgets"] = table_budgets(row_at, block, defaults)
        table = memo["table-budgets"]
    chosen = [r.name for r in registry] if runtimes is None else list(runtimes)
    rows: list[RuntimeRow] = []
    fronts: dict[str, tuple[BudgetPoint, ...]] = {}
    for name in chosen:
        if on_runtime is not None:
            on_runtime(name)
        rows.append(row_at(name, budget))
        if table is not None:
            fronts[name] = front(row_at, name, table, float(ws.tokens.all))
    return RuntimesReport(
        len(cases), int(ws.tokens.all), folds, rows, queries, budget, fronts, table
    )
