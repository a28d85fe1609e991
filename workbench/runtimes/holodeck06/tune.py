"""HoloDeck 0.6's tuner as data: the block's sweep (:func:`workbench.evaluate.runs.tune_cases`)
and the what-if rows (:mod:`workbench.evaluate.whatif`) on the same cases and folds, with the
report's text and JSON and the block's write for ``--apply``
(:meth:`workbench.runtimes.holodeck06.HoloDeck06.tune`)."""

from __future__ import annotations

from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write, render_block_text
from workbench.evaluate.budget import Budget
from workbench.evaluate.runs import TuneReport, tune_cases
from workbench.evaluate.runtimes import filter_row
from workbench.evaluate.tuner import gap_text, knee_text
from workbench.evaluate.whatif import WhatIfReport, measure_what_ifs
from workbench.evaluate.words import describe, metric_line
from workbench.progress import ProgressLine
from workbench.runtimes.base import ConfigWrite, TuneOutcome, TuneRequest, plan_config_write
from workbench.search.delivery import runtime_engine, runtime_methods
from workbench.search.embedders.resolve import runtime_embedding
from workbench.workspace import Workspace


def tune_filter(request: TuneRequest) -> TuneOutcome:
    """``tune`` for the runtime that reads the ``tool_filtering`` block: the block's sweep."""
    ws, cases = request.ws, request.cases
    budget = Budget(max_tokens=request.max_tokens, min_reduction=request.min_reduction)
    current = ws.agent.filtering or ToolFiltering()
    notes: list[str] = []
    embedding = runtime_embedding(ws.agent.agent).spec
    if embedding.kind != "none" and ws.embedder.embedder is None:
        notes.append(f"semantic and hybrid are scored as BM25 here: {ws.embedder.bm25_reason()}")
    elif embedding.kind != "none" and str(embedding) != ws.embedder.spec:
        notes.append(
            f"semantic scores here come from {ws.embedder.spec}, the runtime embeds with "
            f"{embedding}: a semantic threshold tuned on one model does not transfer to another"
        )
    steps = ["tuning", "what-if rows"] if request.what_if else ["tuning"]
    line = ProgressLine("tune", stages=steps, stage_unit="steps", quiet=request.quiet)
    progress = line if request.on_progress is None else request.on_progress
    with line:
        line.stage(steps[0])
        report = tune_cases(
            runtime_engine(ws.engine, ws.agent.agent),
            ws.catalog,
            ws.tokens,
            cases,
            current,
            budget,
            folds=request.folds,
            runtime_methods=runtime_methods(ws.agent.agent),
            on_progress=progress,
        )
    outcome = report.outcome
    if not outcome.choice.within_budget:
        notes.append("no setting fits the budget; the cheapest setting is proposed")
    if report.only_generated:
        notes.append(
            "every case is generated: generated queries echo the tools' own words, which "
            "flatters bm25; label real queries before trusting this proposal"
        )
    if request.apply and report.verdict.kind == "tie":
        notes.append(
            "the proposal is not distinguishable from the file's setting on these cases; "
            "writing it anyway (--apply)"
        )
    extra = None
    if request.what_if:
        with line:
            line.stage(steps[1])
            extra = measure_what_ifs(
                ws,
                cases,
                current,
                budget,
                usage_file=request.usage,
                folds=request.folds,
                on_progress=line,
            )
    obj = report.to_json()
    if cases.source is not None:
        obj["cases_source"] = cases.source.to_json()
    text = human_report(report, ws)
    if extra is not None:
        obj["what_if"] = extra.to_json()
        text += what_if_text(extra)

    def writes(forced: bool) -> tuple[ConfigWrite, ...]:
        agent = ws.agent
        plan = plan_write(agent.path, outcome.setting, original=agent.raw, current=agent.filtering)
        return (
            plan_config_write(
                plan, unchanged="the block already says that", written="tool_filtering written"
            ),
        )

    return TuneOutcome(
        report,
        text,
        obj,
        filter_row(request.info.name, report, request.cap()),
        notes=tuple(notes),
        verdict=report.verdict,
        change="tool_filtering",
        writes=writes,
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
        f"current   {describe(report.block)}",
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
