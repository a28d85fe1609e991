"""``holo-tune compare AGENT.yaml --runtimes [--max-tokens N] [--cases FILE] [--json]``: which
runtime?

Every runtime tuned on the same cases by its own tuner (:mod:`workbench.runtimes.compare`: the
rows are what ``tune --runtime NAME`` finds), held-out. With
``--max-tokens N`` each within N tool tokens per task: a table with 95 % error bars (a runtime
that cannot get within N marked at its cheapest point) and one text plot (recall against tokens
per task, a bar per runtime for its recall interval). Without, each at its knee, then each
runtime at three budgets and every runtime's front on one plot (:mod:`workbench.evaluate.fronts`).
Or ``--json``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

from workbench.commands.common import print_json, runtime_of, search_queries, with_runtime
from workbench.errors import InputError
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.front_grid import DOT, free_column, front_grid
from workbench.evaluate.fronts import at_table, budget_mark, front_lines, point_cell
from workbench.evaluate.generalise import BARS, MAX_GAP
from workbench.evaluate.runtimes import RuntimeRow, RuntimesReport
from workbench.progress import ProgressLine
from workbench.runtimes import all_runtimes, get_runtime, runtime_names
from workbench.runtimes.compare import compare_runtimes
from workbench.workspace import Workspace


def mark(runtime: str) -> str:
    """The runtime's letter in the plot (its own, ``?`` for a name no runtime has)."""
    try:
        return get_runtime(runtime).marker[0]
    except InputError:
        return "?"


def _interval(low: float, high: float, fmt: str) -> str:
    return f"[{format(low, fmt)}, {format(high, fmt)}]"


def _columns(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *body]
    ]


def budget_lines(report: RuntimesReport) -> list[str]:
    """What the rows' budget marks mean, for the marks there are."""
    if report.budget is None:
        return []
    lines = [
        f"✗ {row.runtime} cannot get within {report.budget:,} tokens per task: the row is its "
        f"cheapest point ({row.tokens:,.0f})"
        for row in report.rows
        if row.over
    ]
    if any(row.heldout_over for row in report.rows):
        lines.append(
            "! tuned within the budget on the training folds; on the cases left out the mean "
            "is above it"
        )
    return lines


def gap_cell(row: RuntimeRow) -> str:
    """The row's in-sample minus held-out hit and recall (blank when the row has none)."""
    g = row.gap
    return "" if g is None else f"{g['hit']:+.3f} {g['recall']:+.3f}"


def bar_cell(row: RuntimeRow) -> str:
    """The cases of each training set what the row keeps needed (blank: it keeps no set)."""
    return "" if row.bars is None else str(row.bars.chosen)


def bar_lines(report: RuntimesReport) -> list[str]:
    """What the bar column means, and why each row above the first bar is there."""
    bars = [(row.runtime, row.bars) for row in report.rows if row.bars is not None]
    if not bars:
        return []
    return [
        f"bar: cases of each training set that must expect a tool or server it keeps ({BARS[0]}; "
        f"{', then '.join(map(str, BARS[1:]))} while the gap is over {MAX_GAP:g})",
        *(f"{name} kept {kept.text()}" for name, kept in bars if kept.text()),
    ]


def table(report: RuntimesReport, ws: Workspace) -> str:
    header = (
        "runtime",
        "tuned setting",
        "hit (95% CI)",
        "recall (95% CI)",
        "tokens (95% CI)",
        "gap hit recall",
        "bar",
    )
    body = []
    for row in report.rows:
        ci = row.ci()
        body.append(
            (
                row.runtime,
                row.setting,
                f"{row.hit:.3f} {_interval(*ci['hit'], '.3f')}",
                f"{row.recall:.3f} {_interval(*ci['recall'], '.3f')}",
                f"{row.tokens:,.0f} {_interval(*ci['tokens'], ',.0f')} {budget_mark(row)}",
                gap_cell(row),
                bar_cell(row),
            )
        )
    lines = [
        f"{ws.agent.name}: {report.cases} cases, {len(ws.catalog)} tools, all tools "
        f"{report.tokens_all:,} tokens; {report.how()}",
        *_columns(header, body),
        *budget_lines(report),
    ]
    lines.append("95% CI: Wilson for hit, bootstrap (2,000 resamples) for recall and tokens")
    lines.append("tokens: tool tokens per task (one user message)")
    lines.append(
        "gap: the tuner's in-sample hit and recall (its proposal on the cases it was chosen on) "
        "minus the held-out ones"
    )
    lines += bar_lines(report)
    lines.append(f"deferred rows' search: {report.queries.describe()}")
    lines += [f"{row.runtime}: {row.note}" for row in report.rows if row.note]
    lines += [f"{row.runtime}: current setting kept: {row.kept}" for row in report.rows if row.kept]
    return "\n".join(lines) + "\n"


def budgets_table(report: RuntimesReport) -> str:
    """Each runtime at the three budgets (no budget given): held-out recall and tokens."""
    if report.table is None:
        return ""
    header = ("runtime", *(f"{label} ({b:,})" for _, label, b in report.table.named()))
    body = [
        (name, *(point_cell(p) for p in at_table(points, report.table)))
        for name, points in report.fronts.items()
    ]
    lines = [
        "at three budgets (max tool tokens per task), each runtime tuned within each, held-out: "
        "recall [95% CI] tokens",
        *_columns(header, body),
        f"HoloDeck's defaults: what its filter sends at its default tool_filtering; "
        f"{report.table.knee_of}'s knee: its row above; ✗ cannot get within (its cheapest "
        "point); ! held-out mean above the budget",
    ]
    return "\n".join(lines) + "\n"


def plot(rows: list[RuntimeRow], width: int = 64, height: int = 14) -> str:
    """Recall (y, from 1 down to the lowest bar's tenth) against mean tokens per task (x):
    each runtime's marker at its figures and a ``|`` bar over its recall interval."""
    top = max((r.ci()["tokens"][1] for r in rows), default=1.0) or 1.0
    lowest = min((r.ci()["recall"][0] for r in rows), default=0.0)
    floor = min(math.floor(lowest * 10) / 10, 0.9)  # zoom: the lowest bar's tenth
    grid = [[" "] * width for _ in range(height)]

    def y_of(recall: float) -> int:
        return min(max(round((1.0 - recall) / (1.0 - floor) * (height - 1)), 0), height - 1)

    taken: set[tuple[int, int]] = set()
    for row in rows:
        x = min(max(round(row.tokens / top * (width - 1)), 0), width - 1)
        low, high = row.ci()["recall"]
        for y in range(y_of(high), y_of(low) + 1):
            if grid[y][x] == " ":
                grid[y][x] = "|"
        y = y_of(row.recall)
        x = free_column(taken, x, y, width)  # two runtimes in one cell: side by side
        taken.add((x, y))
        grid[y][x] = mark(row.runtime)
    out = []
    for y, cells in enumerate(grid):
        label = "1.0 " if y == 0 else f"{floor:.1f} " if y == height - 1 else "    "
        out.append(label + ("┤" if y == 0 else "│") + "".join(cells).rstrip())
    out.append("    └" + f"0 … {top:,.0f} tokens per task (mean)".rjust(width, "─"))
    out.append(
        "recall; "
        + "  ".join(f"{mark(r.runtime)} {r.runtime}" for r in rows)
        + "  (| 95% CI of recall)"
    )
    return "\n".join(out) + "\n"


def front_plot(report: RuntimesReport, width: int = 64, height: int = 14) -> str:
    """Recall against tokens per task (log scale): each runtime's front, its points joined."""
    lines = front_lines(report, all_runtimes())
    grid = front_grid(lines, width, height)
    (x0, x1), (y0, y1) = grid.tokens, grid.recall
    out = []
    for y, cells in enumerate(grid.cells):
        label = f"{y1:.1f} " if y == 0 else f"{y0:.1f} " if y == height - 1 else "    "
        out.append(label + ("┤" if y == 0 else "│") + "".join(c for c, _ in cells).rstrip())
    out.append("    └" + f"{x0:,.0f} … {x1:,.0f} tokens per task (log scale)".rjust(width, "─"))
    out.append(
        "held-out recall at each budget; "
        + "  ".join(f"{line.marker} {line.runtime}" for line in lines)
        + f"  ({DOT} joins a runtime's budgets)"
    )
    return "\n".join(out) + "\n"


def max_tokens(args: argparse.Namespace) -> int | None:
    """``--max-tokens``: a budget of at least 0 (``compare`` takes it with ``--runtimes`` only)."""
    value: int | None = getattr(args, "max_tokens", None)
    if value is None:
        return None
    if value < 0:
        raise InputError("must be at least 0", field="--max-tokens")
    return value


def run_runtimes(args: argparse.Namespace, ws: Workspace, cases: CaseSet) -> int:
    budget = max_tokens(args)
    queries = search_queries(args, ws.agent, cases)
    with ProgressLine(
        "compare --runtimes", stages=runtime_names(), stage_unit="runtimes", quiet=args.json
    ) as line:
        report = compare_runtimes(
            ws,
            cases,
            registry=all_runtimes(),
            queries=queries,
            budget=budget,
            on_runtime=line.stage,
            on_progress=line,
        )
    if args.json:
        print_json(with_runtime(report.to_json(), runtime_of(args, ws.agent)))
    elif report.table is not None:
        parts = (table(report, ws), budgets_table(report), front_plot(report))
        sys.stdout.write("\n".join(parts))
    else:
        sys.stdout.write(table(report, ws) + "\n" + plot(report.rows))
    return 0
