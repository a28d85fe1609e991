"""``holo-tune tune --runtime R [--max-tokens N | --min-hit H] [--usage F] [--apply]`` for a
runtime whose model finds tools through a search tool (:mod:`workbench.runtimes.search_tool`).

What stays loaded beside the provider's search tool, the search variant and the results per
search, chosen from the cases by :mod:`workbench.evaluate.deferred_tune` with k-fold held-out
figures; the figures stand on the engine the runtime names and say whether it is exact.
``--llm SPEC`` searches each case with the query that model writes
(:mod:`workbench.evaluate.search_queries`), else the message itself is searched, and the output
says which. ``--apply`` writes the runtime's file where it has one (Claude Code's ``.mcp.json``)
or prints the configuration to paste where it lives in the user's code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from workbench.commands.common import (
    apply_allowed,
    max_tokens_of,
    print_json,
    search_queries,
    warn,
    with_runtime,
)
from workbench.errors import InputError
from workbench.evaluate.budget import SET_FIELDS, Budget
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.deferred_tune import (
    DeferredReport,
    DeferredSetting,
    entry_descriptions,
    search_tool,
    tune_deferred,
)
from workbench.evaluate.generalise import bars_lines
from workbench.evaluate.metrics import Metrics
from workbench.evaluate.tuner import gap, gap_text
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.usage import load_usage
from workbench.workspace import Workspace


def run_deferred(
    args: argparse.Namespace, ws: Workspace, cases: CaseSet, runtime: RuntimeInfo
) -> int:
    budget = Budget(max_tokens=max_tokens_of(args, ws.tokens.all), min_hit=args.min_hit)
    usage = load_usage(args.usage, ws.catalog) if getattr(args, "usage", None) else None
    plugin = search_tool(runtime.name)
    report = tune_deferred(
        runtime.name,
        ws.catalog,
        ws.tokens,
        cases,
        budget,
        tokens_all=int(ws.tokens.all),
        folds=args.folds,
        usage=usage,
        described=entry_descriptions(ws.agent.agent),
        queries=search_queries(args, ws.agent, cases),
        ranker=ws.engine,
        current=plugin.current_setting(ws),
    )
    if not report.within_budget:
        warn("no loaded set reaches the budget; the closest one is proposed")
    for message in plugin.tuner_notes(ws):
        warn(message)
    config = _config(plugin.tuned_doc, report, ws, apply=args.apply)
    if args.json:
        print_json(with_runtime(report_json(report, ws, config), runtime), stream=sys.stdout)
    else:
        sys.stdout.write(human(report, ws, runtime, forced=getattr(args, "force", False)))
    if args.apply and apply_allowed(report.verdict, force=getattr(args, "force", False)):
        plugin.apply(args, ws, report, config)
    return 0


def _config(
    tuned_doc: Callable[[DeferredReport, Workspace], Any],
    report: DeferredReport,
    ws: Workspace,
    *,
    apply: bool,
) -> Any:
    """The runtime's configuration for the proposal, or None when the agent cannot have one
    (a data set's agent with no MCP entry to proxy, names a provider's namespace refuses): the
    figures still stand, so the report is printed with the reason on stderr; ``--apply`` has
    nothing to write and stops with the reason (exit 2)."""
    try:
        return tuned_doc(report, ws)
    except InputError as exc:
        if apply:
            raise
        warn(f"{exc}; the figures below stand, but there is no configuration to write")
        return None


def report_json(report: DeferredReport, ws: Workspace, config: Any) -> dict[str, Any]:
    plugin = search_tool(report.runtime)
    return {
        "cases": report.heldout.cases,
        "engine": plugin.engine.text,
        "approximation": plugin.figures_note(report.queries),
        "tokens": "per task: the search round trip included (evaluate.deferred_tune)",
        "search_query": report.queries.to_json(),
        "budget": report.budget.to_json(SET_FIELDS),
        "setting": report.setting.to_json(ws.catalog),
        "heldout": report.heldout.to_json(),
        "insample": report.insample.to_json(),
        "gap": gap(report.insample, report.heldout),
        "recurrence": report.bars.to_json(),
        "default": report.default.to_json(),
        "within_budget": report.within_budget,
        "folds": [s.to_json(ws.catalog) for s in report.fold_settings],
        "current": {
            "setting": None if report.current is None else report.current.to_json(ws.catalog),
            **report.verdict.to_json()["current"],
        },
        "verdict": report.verdict.to_json(),
        **plugin.report_json(report, ws, config),
    }


def line(m: Metrics) -> str:
    change = m.token_reduction
    than = f"{change:.1%} fewer" if change >= 0 else f"{-change:.1%} more"
    return (
        f"hit {m.hit:.3f}  recall {m.recall:.3f}  tokens {m.tokens_selected_mean:,.0f} per "
        f"task ({than} than all {m.tokens_all:,} in one request)"
    )


def _budget_text(budget: Budget) -> str:
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"at most {budget.max_tokens:,} tokens per task on average")
    if budget.min_hit is not None:
        parts.append(f"the fewest tokens with hit >= {budget.min_hit:g}")
    return " and ".join(parts) or "the knee of the front (as tune's default)"


def human(
    report: DeferredReport, ws: Workspace, runtime: RuntimeInfo, *, forced: bool = False
) -> str:
    plugin = search_tool(report.runtime)
    out = [
        f"{ws.agent.name}: {report.heldout.cases} cases, {len(ws.catalog)} tools, "
        f"{report.folds}-fold; {runtime.line()}",
        f"engine    {plugin.engine.text}",
        f"note      {plugin.figures_note(report.queries)}",
        f"query     {report.queries.describe()}",
        f"bill      {plugin.bill_text(report.extra_tokens)}",
        f"budget    {_budget_text(report.budget)}",
        f"{report.verdict.label}  {plugin.setting_text(report, ws)}",
        f"  held-out  {line(report.heldout)}",
        f"  in-sample {line(report.insample)}",
        f"  gap       {gap_text(report.insample, report.heldout)}",
        *bars_lines(report.bars),
        f"default   {plugin.default_text()}: {line(report.default)}",
        *current_lines(report, ws),
        *report.verdict.lines(),
        *keep_all_lines(report),
        plugin.write_line(report, ws)
        if forced or not report.verdict.kept
        else not_recommended(report),
    ]
    return "\n".join(out) + "\n"


def current_lines(report: DeferredReport, ws: Workspace) -> list[str]:
    """The current setting's line when the runtime's configuration sets one (else it is the
    default line above)."""
    plugin = search_tool(report.runtime)
    now = report.current
    if now is None or now == DeferredSetting(plugin.variants[0], plugin.default_results, ()):
        return []
    m = report.verdict.current
    return [
        f"current   {plugin.row_text(now)} (its configuration): hit {m['hit']:.3f}  "
        f"recall {m['recall']:.3f}  tokens {m['tokens']:,.0f} per task"
    ]


def keep_all_lines(report: DeferredReport) -> list[str]:
    if report.verdict.kind != "keep-all":
        return []
    return ["          every tool: no search tool, every tool loaded in the request"]


def not_recommended(report: DeferredReport) -> str:
    return (
        f"export    nothing to export: the verdict is {report.verdict.kind} "
        "(--apply writes nothing; --apply --force writes the proposal)"
    )
