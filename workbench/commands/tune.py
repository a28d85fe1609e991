"""``holo-tune tune AGENT.yaml [--cases FILE] [--max-tokens N | --min-reduction R] [--folds K]
[--usage FILE] [--no-what-if] [--json] [--apply]``: propose the best setting within a token
budget, with held-out figures, and what changes outside the block would gain (what-if rows).

The procedure (robust figures, budget, knee, ties) is :mod:`workbench.evaluate.tuner`'s. The
proposal's figures are k-fold held-out; the agent's current block is measured beside it on the same
cases. ``--apply`` writes the proposal back through the write-back (diff on stderr with ``--json``,
on stdout otherwise; atomic, with a backup).
"""

from __future__ import annotations

import argparse
import sys

from workbench.commands.apply import write_plan
from workbench.commands.common import (
    apply_allowed,
    print_json,
    refuse_unwritable,
    runtime_of,
    warn,
    with_runtime,
)
from workbench.commands.eval import (
    check_folds,
    describe,
    metric_line,
    open_for_cases,
    with_source,
)
from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write, render_block_text
from workbench.errors import InputError
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.metrics import Progress
from workbench.evaluate.runs import TuneReport, tune_cases
from workbench.evaluate.tuner import gap_text, knee_text
from workbench.evaluate.whatif import WhatIfReport, what_ifs
from workbench.progress import ProgressLine
from workbench.runtimes import searching_runtimes
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.delivery import runtime_engine, runtime_methods
from workbench.search.embedders.resolve import runtime_embedding
from workbench.search.usage import load_usage
from workbench.workspace import Workspace


def run(args: argparse.Namespace) -> int:
    Budget(max_tokens=args.max_tokens, min_reduction=args.min_reduction)  # checks the flags
    if args.folds < 2:
        raise InputError("k-fold needs at least 2 folds", field="--folds")
    Budget(min_hit=getattr(args, "min_hit", None))  # checks the flag
    ws, cases = open_for_cases(args)
    check_folds(cases, args.folds, given=getattr(args, "folds_given", False))
    runtime = runtime_of(args, ws.agent)
    plugin = runtime.plugin
    if getattr(args, "usage", None):
        load_usage(args.usage, ws.catalog)  # a bad file is an error whether or not it is used
        if getattr(args, "no_what_if", False) and plugin.reads_tool_filtering:
            warn(
                "--usage feeds the warm-runtime what-if, which --no-what-if leaves out: "
                "it has no effect here"
            )
    if getattr(args, "llm", None) is not None and not plugin.searches:
        raise InputError(
            "is the search call a model writes on the deferred-loading runtimes "
            f"({', '.join(searching_runtimes())}); {runtime.name} searches no model-written query",
            field="--llm",
        )
    if getattr(args, "min_hit", None) is not None and "--min-hit" not in plugin.budget_flags:
        raise InputError(
            f"is a budget of the allowlist and deferred-loading runtimes; {runtime.name} is tuned "
            "against --max-tokens or --min-reduction",
            field="--min-hit",
        )
    return plugin.tune(args, ws, cases, runtime)


def run_filter(
    args: argparse.Namespace, ws: Workspace, cases: CaseSet, runtime: RuntimeInfo
) -> int:
    """``tune`` for the runtime that reads the ``tool_filtering`` block: the block's sweep."""
    budget = Budget(max_tokens=args.max_tokens, min_reduction=args.min_reduction)
    current = ws.agent.filtering or ToolFiltering()
    embedding = runtime_embedding(ws.agent.agent).spec
    if embedding.kind != "none" and ws.embedder.embedder is None:
        warn(f"semantic and hybrid are scored as BM25 here: {ws.embedder.bm25_reason()}")
    elif embedding.kind != "none" and str(embedding) != ws.embedder.spec:
        warn(
            f"semantic scores here come from {ws.embedder.spec}, the runtime embeds with "
            f"{embedding}: a semantic threshold tuned on one model does not transfer to another"
        )
    steps = ["tuning"] if args.no_what_if else ["tuning", "what-if rows"]
    line = ProgressLine("tune", stages=steps, stage_unit="steps", quiet=args.json)
    with line:
        line.stage(steps[0])
        report = tune_cases(
            runtime_engine(ws.engine, ws.agent.agent),
            ws.catalog,
            ws.tokens,
            cases,
            current,
            budget,
            folds=args.folds,
            runtime_methods=runtime_methods(ws.agent.agent),
            on_progress=line,
        )
    outcome = report.outcome
    if not outcome.choice.within_budget:
        warn("no setting fits the budget; the cheapest setting is proposed")
    if report.only_generated:
        warn(
            "every case is generated: generated queries echo the tools' own words, which "
            "flatters bm25; label real queries before trusting this proposal"
        )
    if args.apply and report.verdict.kind == "tie":
        warn(
            "the proposal is not distinguishable from the file's setting on these cases; "
            "writing it anyway (--apply)"
        )
    extra = None
    if not args.no_what_if:
        with line:
            line.stage(steps[1])
            extra = measure_what_ifs(args, ws, cases, current, budget, on_progress=line)
    if args.json:
        obj = with_runtime(with_source(report.to_json(), cases), runtime)
        if extra is not None:
            obj["what_if"] = extra.to_json()
        print_json(obj, stream=sys.stdout)
    else:
        sys.stdout.write(human_report(report, ws))
        if extra is not None:
            sys.stdout.write(what_if_text(extra))
    if args.apply:
        refuse_unwritable(runtime, "tool_filtering", force=args.force)
        if apply_allowed(report.verdict, force=args.force):
            write_back(ws, outcome.setting, diff_to_stdout=not args.json)
    return 0


def measure_what_ifs(
    args: argparse.Namespace,
    ws: Workspace,
    cases: CaseSet,
    current: ToolFiltering,
    budget: Budget,
    on_progress: Progress | None = None,
) -> WhatIfReport:
    """The what-if rows (:mod:`workbench.evaluate.whatif`) on the tuner's cases and folds."""
    usage = load_usage(args.usage, ws.catalog) if getattr(args, "usage", None) else None
    embedder = ws.embedder.spec if ws.embedder.embedder is not None else None
    return what_ifs(
        ws.engine,
        ws.catalog,
        ws.tokens,
        cases,
        current,
        budget,
        agent=ws.agent.agent,
        embedder_spec=embedder,
        usage=usage,
        folds=args.folds,
        on_progress=on_progress,
    )


def what_if_text(report: WhatIfReport) -> str:
    """The what-if rows as text: the listed ones with their fix, then those inside the bars."""
    base = report.baseline.heldout
    lines = [f"what-if   changes outside the block, held-out like the proposal ({base.recall:.3f})"]
    for row in report.listed:
        lines.append(f"  {row.finding().message}")
        lines.append(f"    setting  {describe(row.setting)}")
        lines.append(f"    how      {row.how}")
    for row in report.rows:
        if not row.significant:
            low, high = row.interval
            lines.append(
                f"  (not listed) {row.change}: {row.gain:+.3f} recall, inside the error bars "
                f"(95% CI {low:+.3f}..{high:+.3f})"
            )
    lines += [f"  (not measured) {why}" for why in report.unmeasured]
    if len(lines) == 1:
        lines.append("  none applies to this agent")
    return "\n".join(lines) + "\n"


def budget_text(budget: Budget, tokens_all: int) -> str:
    if not budget.explicit:
        return knee_text(tokens_all)
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"at most {budget.max_tokens:,} tokens per request on average")
    if budget.min_reduction is not None:
        parts.append(f"at least {budget.min_reduction:.0%} fewer tokens")
    return " and ".join(parts)


def human_report(report: TuneReport, ws: Workspace) -> str:
    o = report.outcome
    lines = [
        f"{ws.agent.name}: {report.cases} cases, {len(ws.catalog)} tools, {o.folds}-fold",
        f"budget    {budget_text(o.budget, ws.tokens.all)}",
        f"{report.verdict.label}  {describe(o.setting)}",
        f"  held-out  {metric_line(o.heldout)}",
        f"  in-sample {metric_line(o.insample)}",
        f"  gap       {gap_text(o.insample, o.heldout)}",
        f"current   {describe(report.current)}",
        f"            {metric_line(report.default)}",
        "folds     "
        + ", ".join(
            f"{s.search_method}/{s.top_k}/{s.similarity_threshold:.2f}" for s in o.fold_choices
        ),
        f"front     {len(o.front)} settings no other beats on recall and tokens "
        "(--json lists them)",
    ]
    lines += verdict_lines(report)
    for name, (heldout, default) in report.by_origin().items():
        lines.append(
            f"  {name:<9} n={heldout.cases:<4} proposed (held-out) recall {heldout.recall:.3f}"
            f" tokens {heldout.tokens_selected_mean:,.0f}  current recall {default.recall:.3f}"
            f" tokens {default.tokens_selected_mean:,.0f}"
        )
    if report.disguised:
        what = " and ".join(report.disguised)
        if ws.embedder.runtime_fallback:
            why = f"{what} run as BM25 at run time (no embedding service)"
        else:
            why = f"{what} could not be scored here as HoloDeck scores them (no local embedder)"
        lines.append(f"note      {why}: not proposed")
    lines.append("")
    if report.verdict.kept:
        lines.append(f"# the proposal, not recommended (verdict: {report.verdict.kind})")
    lines.append(render_block_text(o.setting).rstrip("\n"))
    return "\n".join(lines) + "\n"


def verdict_lines(report: TuneReport) -> list[str]:
    """Whether the proposal is worth a change (:mod:`workbench.evaluate.verdict`, the rule every
    tuner shares): the 95 % intervals of the paired difference (proposal held-out minus
    current, per case) of recall, hit and tokens."""
    verdict = report.verdict
    lines = verdict.lines()
    if verdict.kind == "keep-all":
        lines.append("          every tool: tool_filtering enabled: false (or no block)")
    return lines


def write_back(ws: Workspace, setting: ToolFiltering, *, diff_to_stdout: bool) -> None:
    agent = ws.agent
    plan = plan_write(agent.path, setting, original=agent.raw, current=agent.filtering)
    write_plan(
        plan,
        unchanged="the block already says that",
        written="tool_filtering written",
        to_stdout=diff_to_stdout,
    )
