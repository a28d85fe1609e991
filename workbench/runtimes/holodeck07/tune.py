"""HoloDeck 0.7's tuner as data: the MCP tools the agent exposes, chosen from the cases (and
usage counts) by :mod:`workbench.evaluate.allowlist` with k-fold held-out figures, the report's
text and JSON, and the allowlists' write for ``--apply`` (as that backend reads them:
``config.allowed_tools`` per MCP entry on the OpenAI Agents backend, ``claude.allowed_tools`` on
the Claude backend). The runtime's traps are printed with the proposal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.config.writeback.allowlist import plan_allowlists
from workbench.evaluate.allowlist import (
    AllowlistReport,
    StaticMetrics,
    allowlists,
    traps,
    tune_allowlist,
)
from workbench.evaluate.budget import SET_FIELDS, Budget
from workbench.evaluate.generalise import bars_lines
from workbench.evaluate.runtimes import allowlist_row
from workbench.evaluate.tuner import gap, gap_text
from workbench.runtimes.base import ConfigWrite, TuneOutcome, TuneRequest, plan_config_write
from workbench.search.usage import load_usage
from workbench.workspace import Workspace

if TYPE_CHECKING:
    from workbench.runtimes.detect import RuntimeInfo


def tune_static(request: TuneRequest) -> TuneOutcome:
    """``tune`` for HoloDeck 0.7: the allowlists within the budget, held out."""
    ws = request.ws
    budget = Budget(max_tokens=request.cap(), min_hit=request.min_hit)
    usage = load_usage(request.usage, ws.catalog) if request.usage else None
    report = tune_allowlist(
        ws.agent,
        ws.catalog,
        ws.tokens,
        request.cases,
        budget,
        folds=request.folds,
        usage=usage,
        as_entries=request.figures_only,
    )
    notes = list(report.surface.notes)
    if not report.within_budget:
        notes.append("no exposed set reaches the budget; the closest one is proposed")

    def writes(forced: bool) -> tuple[ConfigWrite, ...]:
        agent = ws.agent
        lists = _lists(report, ws)
        every = {s: [t.name for t in ws.catalog.tools_of(s)] for s in lists}
        plan = plan_allowlists(
            agent.path, report.surface.backend, lists, every=every, original=agent.raw
        )
        after = (
            (
                f"{agent.path} still has a tool_filtering block, which HoloDeck 0.7 refuses to "
                "load: delete it (holo-tune check lists it as filtering-removed-0.7)",
            )
            if "tool_filtering" in agent.data
            else ()
        )
        return (
            plan_config_write(
                plan,
                unchanged="the allowlists already say that",
                written=f"{', '.join(plan.changes)} written",
                warnings=after,
            ),
        )

    return TuneOutcome(
        report,
        human(report, ws, request.info),
        report_json(report, ws),
        allowlist_row(request.info.name, report, request.cap()),
        notes=tuple(notes),
        verdict=report.verdict,
        change="allowlists",
        writes=writes,
    )


def _lists(report: AllowlistReport, ws: Workspace) -> dict[str, list[str]]:
    return allowlists(ws.catalog, report.surface, report.setting)


def report_json(report: AllowlistReport, ws: Workspace) -> dict[str, Any]:
    lists = _lists(report, ws)
    return {
        "backend": report.surface.backend,
        "cases": report.heldout.cases,
        "budget": report.budget.to_json(SET_FIELDS),
        "exposed": report.names(ws.catalog),
        "allowlists": {s: kept for s, kept in lists.items() if kept},
        "dropped_servers": [s for s, kept in lists.items() if not kept],
        "heldout": report.heldout.to_json(),
        "insample": report.insample.to_json(),
        "gap": gap(report.insample, report.heldout),
        "recurrence": report.bars.to_json(),
        "current": report.default.to_json(),
        "verdict": report.verdict.to_json(),
        "within_budget": report.within_budget,
        "traps": traps(report.surface.backend),
        "notes": list(report.surface.notes),
    }


def line(m: StaticMetrics) -> str:
    return (
        f"hit {m.hit:.3f}  recall {m.recall:.3f}  tokens {m.tokens:,} per request "
        f"({m.token_reduction:.1%} fewer)"
    )


def _budget_text(budget: Budget, tokens_all: int) -> str:
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"at most {budget.max_tokens:,} tokens per request")
    if budget.min_hit is not None:
        parts.append(f"the fewest tokens with hit >= {budget.min_hit:g}")
    return " and ".join(parts) or "the knee of the front (as tune's default)"


def human(report: AllowlistReport, ws: Workspace, runtime: RuntimeInfo) -> str:
    lists = _lists(report, ws)
    kept = sum(len(v) for v in lists.values())
    total = int(report.surface.candidate.sum())
    dropped = [s for s, v in lists.items() if not v]
    out = [
        f"{ws.agent.name}: {report.heldout.cases} cases, {len(ws.catalog)} tools, "
        f"{report.folds}-fold; {runtime.line()}",
        f"backend   {report.surface.backend} (model.provider {ws.agent.agent.model.provider}): "
        "static allowlists, the same tools on every request",
        f"budget    {_budget_text(report.budget, ws.tokens.all)}",
        f"{report.verdict.label}  {kept} of {total} MCP tools exposed"
        + (f"; {len(dropped)} server(s) dropped" if dropped else ""),
        f"  held-out  {line(report.heldout)}",
        f"  in-sample {line(report.insample)}",
        f"  gap       {gap_text(report.insample, report.heldout)}",
        *bars_lines(report.bars),
        f"current   {line(report.default)}",
        *report.verdict.lines(),
        *(
            ["          every tool: no allowlists (every MCP tool exposed)"]
            if report.verdict.kind == "keep-all"
            else []
        ),
        "traps",
        *(f"  - {t}" for t in traps(report.surface.backend)),
        "",
    ]
    for server, tools in lists.items():
        out.append(f"{server}: {', '.join(tools) if tools else '(dropped)'}")
    return "\n".join(out) + "\n"
