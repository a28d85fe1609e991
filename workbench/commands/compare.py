"""``holo-tune compare AGENT.yaml [--cases FILE] [--catalog FILE] [--embedder SPEC] [--json]``.

Every tool-search engine on the same labelled queries and the same token table, printed as a
table (or ``--json``). The figures come from :func:`workbench.evaluate.compare.compare` (the
dashboard's Compare-engines view shows the same); this module only reads the arguments and prints.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from workbench.commands.common import print_json, runtime_of, with_runtime
from workbench.commands.eval import check_folds, open_for_cases, with_source
from workbench.errors import InputError
from workbench.evaluate.compare import CompareReport, CompareRow, compare, params_text, stages
from workbench.evaluate.intervals import interval_text
from workbench.evaluate.tuner import DEFAULT_FOLDS, knee_text
from workbench.progress import ProgressLine
from workbench.workspace import Workspace


def table(report: CompareReport, ws: Workspace) -> str:
    header = (
        "engine",
        "setting",
        "parameters",
        "hit",
        "hit 95%",
        "recall",
        "recall 95%",
        "top1",
        "mrr",
        "tokens",
        "saved",
    )
    body = [
        (
            row.engine,
            row.setting + ("*" if row.heldout else ""),
            params_text(row.engine, row.params),
            f"{row.metrics.hit:.3f}",
            _ci(row, "hit"),
            f"{row.metrics.recall:.3f}",
            _ci(row, "recall"),
            f"{row.metrics.top1:.3f}",
            f"{row.metrics.mrr:.3f}",
            f"{row.metrics.tokens_selected_mean:,.0f}",
            row.metrics.saved_text(),
        )
        for row in report.rows
    ]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    right = {3, 5, 7, 8, 9, 10}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    lines = [
        f"{ws.agent.name}: {report.cases} cases, {len(ws.catalog)} tools, all tools "
        f"{report.tokens_all:,} tokens ({report.encoding}, "
        f"{'exact' if report.exact else 'estimate'})",
        line(header),
        *(line(r) for r in body),
        (
            f"* best: {knee_text(report.tokens_all)}; held-out: chosen on "
            f"{report.folds - 1} of {report.folds} folds of the cases, measured on the other "
            "(every fold in turn); the parameters shown are chosen on every case"
            if any(row.setting.startswith("best") for row in report.rows)
            else f"no best settings: they need at least {DEFAULT_FOLDS} cases (one per fold)"
        ),
        "tokens: mean per request under each engine's own accounting (docs/strategies.md); "
        "95%: Wilson interval of hit, bootstrap interval of recall",
        *(f"{row.engine} {row.setting}: {row.note}" for row in report.rows if row.note),
    ]
    return "\n".join(lines) + "\n"


def _ci(row: CompareRow, name: str) -> str:
    interval = row.ci95.get(name)
    return interval_text(interval) if interval is not None else "-"


def run(args: argparse.Namespace) -> int:
    if getattr(args, "llm", None) is not None and not getattr(args, "runtimes", False):
        raise InputError("goes with --runtimes (the deferred-loading rows)", field="--llm")
    if getattr(args, "max_tokens", None) is not None and not getattr(args, "runtimes", False):
        raise InputError(
            "goes with --runtimes (every runtime tuned within it)", field="--max-tokens"
        )
    ws, cases = open_for_cases(args)
    if getattr(args, "runtimes", False):
        from workbench.commands.compare_runtimes import run_runtimes

        check_folds(cases, DEFAULT_FOLDS, given=False)  # compare has no --folds

        return run_runtimes(args, ws, cases)
    with ProgressLine("compare", stages=stages(), quiet=args.json) as line:
        report = compare(ws, cases, on_engine=line.stage, on_progress=line)
    if args.json:
        obj = with_runtime(with_source(report.to_json(), cases), runtime_of(args, ws.agent))
        print_json(obj, stream=sys.stdout)
    else:
        sys.stdout.write(table(report, ws))
    return 0
