"""``holo-tune tune --runtime anthropic|claude-code|openai [--max-tokens N | --min-hit H]
[--usage F] [--apply]``.

What stays loaded beside the provider's search tool, the search variant and the results per
search, chosen from the cases by :mod:`workbench.evaluate.deferred_tune` with k-fold held-out
figures; the figures are an approximation of an unpublished ranker and say so. ``--llm SPEC``
searches each case with the query that model writes (:mod:`workbench.evaluate.search_queries`),
else the message itself is searched, and the output says which. ``--apply``:
for Claude Code, ``.mcp.json`` beside the agent gets ``alwaysLoad`` on the servers kept loaded
(diff, backup, atomic); Anthropic's and OpenAI's tools live in the user's code, so the tuned
``tools`` JSON is printed to paste there (nothing written).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from workbench.commands.apply import show_and_write
from workbench.commands.common import (
    max_tokens_of,
    print_json,
    search_queries,
    warn,
    with_runtime,
)
from workbench.config.writeback_mcp_json import apply_mcp_json, plan_mcp_json
from workbench.deferred import anthropic_tools, mcp_json, openai_tools
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.deferred_tune import (
    ENGINE,
    DeferredBudget,
    DeferredReport,
    approximation,
    entry_descriptions,
    loaded_servers,
    tune_deferred,
)
from workbench.evaluate.metrics import Metrics
from workbench.runtime import RuntimeInfo
from workbench.search.usage import load_usage
from workbench.workspace import Workspace

MCP_JSON = ".mcp.json"


def run_deferred(
    args: argparse.Namespace, ws: Workspace, cases: CaseSet, runtime: RuntimeInfo
) -> int:
    budget = DeferredBudget(max_tokens=max_tokens_of(args, ws.tokens.all), min_hit=args.min_hit)
    usage = load_usage(args.usage, ws.catalog) if getattr(args, "usage", None) else None
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
    )
    if not report.within_budget:
        warn("no loaded set reaches the budget; the closest one is proposed")
    config = runtime_config(report, ws)
    if args.json:
        print_json(with_runtime(report_json(report, ws, config), runtime), stream=sys.stdout)
    else:
        sys.stdout.write(human(report, ws, runtime))
    if args.apply:
        if runtime.name == "claude-code":
            write_mcp_json(args, ws, report)
        else:
            where = "Messages API request" if runtime.name == "anthropic" else "Responses request"
            print(
                f"holo-tune: nothing written: {runtime.name}'s tools are set in your code; "
                f"paste this as the {where}'s tools (export --runtime {runtime.name} prints the "
                "same)",
                file=sys.stderr,
            )
            if not args.json:
                sys.stdout.write(json.dumps(config, ensure_ascii=False, indent=2) + "\n")
    return 0


def _entries(ws: Workspace) -> list[dict[str, Any]]:
    raw = yaml.safe_load(ws.agent.text) or {}
    return [t for t in raw.get("tools") or [] if isinstance(t, dict) and t.get("type") == "mcp"]


def runtime_config(report: DeferredReport, ws: Workspace) -> Any:
    """What the runtime is given with the tuned knobs (``export --runtime``'s output)."""
    kept = set(report.setting.names(ws.catalog))
    if report.runtime == "anthropic":
        return anthropic_tools(ws.catalog, kept, report.setting.variant)
    if report.runtime == "openai":
        return openai_tools(ws.catalog, kept, entry_descriptions(ws.agent.agent))
    doc, _ = mcp_json(_entries(ws), set(loaded_servers(report.setting, ws.catalog)))
    return doc


def _metrics(m: Metrics) -> dict[str, Any]:
    return m.to_json()


def report_json(report: DeferredReport, ws: Workspace, config: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "cases": report.heldout.cases,
        "engine": ENGINE[report.runtime],
        "approximation": approximation(report.queries),
        "tokens": "per task: the search round trip included (evaluate.deferred_tune)",
        "search_query": report.queries.to_json(),
        "budget": report.budget.to_json(),
        "setting": report.setting.to_json(ws.catalog),
        "heldout": _metrics(report.heldout),
        "insample": _metrics(report.insample),
        "default": _metrics(report.default),
        "within_budget": report.within_budget,
        "folds": [s.to_json(ws.catalog) for s in report.fold_settings],
    }
    if report.runtime == "claude-code":
        out["always_load"] = loaded_servers(report.setting, ws.catalog)
        out["config"] = config
    else:
        out["export"] = export_command(report, ws)
    return out


def export_command(report: DeferredReport, ws: Workspace) -> str:
    keep = " ".join(f"--keep {name}" for name in report.setting.names(ws.catalog))
    variant = f" --variant {report.setting.variant}" if report.runtime == "anthropic" else ""
    return f"holo-tune export {ws.agent.path} --runtime {report.runtime}{variant} {keep}".rstrip()


def line(m: Metrics) -> str:
    change = m.token_reduction
    than = f"{change:.1%} fewer" if change >= 0 else f"{-change:.1%} more"
    return (
        f"hit {m.hit:.3f}  recall {m.recall:.3f}  tokens {m.tokens_selected_mean:,.0f} per "
        f"task ({than} than all {m.tokens_all:,} in one request)"
    )


def _budget_text(budget: DeferredBudget) -> str:
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"at most {budget.max_tokens:,} tokens per task on average")
    if budget.min_hit is not None:
        parts.append(f"the fewest tokens with hit >= {budget.min_hit:g}")
    return " and ".join(parts) or "the knee (as tune's default: best recall within 30% of all)"


def human(report: DeferredReport, ws: Workspace, runtime: RuntimeInfo) -> str:
    s = report.setting
    names = s.names(ws.catalog)
    loaded = (
        f"servers {', '.join(loaded_servers(s, ws.catalog))} ({len(names)} tools)"
        if report.runtime == "claude-code" and names
        else (", ".join(names) or "nothing")
    )
    out = [
        f"{ws.agent.name}: {report.heldout.cases} cases, {len(ws.catalog)} tools, "
        f"{report.folds}-fold; {runtime.line()}",
        f"engine    {ENGINE[report.runtime]}",
        f"note      {approximation(report.queries)}",
        f"query     {report.queries.describe()}",
        "bill      per task: loaded tools + the search tool"
        + (" + every namespace's name and description" if report.extra_tokens else "")
        + "; when the loaded tools do not cover the task, a second request after the search "
        "with the same and the tools it returned",
        f"budget    {_budget_text(report.budget)}",
        f"proposed  {s.variant} search, {s.max_results} results per search (assumed: the "
        "provider takes no setting), loaded: " + loaded,
        f"  held-out  {line(report.heldout)}",
        f"  in-sample {line(report.insample)}",
        f"default   nothing loaded, bm25, 5 results: {line(report.default)}",
    ]
    if report.runtime == "claude-code":
        out.append(f"write     --apply sets alwaysLoad in {MCP_JSON} beside the agent")
    else:
        out.append(f"export    {export_command(report, ws)}")
    return "\n".join(out) + "\n"


def write_mcp_json(args: argparse.Namespace, ws: Workspace, report: DeferredReport) -> None:
    path = Path(ws.agent.path).parent / MCP_JSON
    rendered, notes = mcp_json(_entries(ws), set())
    for note in notes:
        warn(note)
    plan = plan_mcp_json(path, rendered, set(loaded_servers(report.setting, ws.catalog)))
    if not plan.changed:
        print(f"{path}: no change (alwaysLoad already says that)", file=sys.stderr)
        return
    show_and_write(
        path,
        plan.diff,
        lambda: apply_mcp_json(plan),
        to_stdout=not args.json,
        written="alwaysLoad written",
        no_backup="a new file",
    )
