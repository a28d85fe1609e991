"""``holo-tune eval AGENT.yaml [--cases FILE] [setting flags | --engine NAME --param K=V] [--json]
[--min-recall R]``.

Measures one setting (the flags over the file's block, then HoloDeck's defaults) on labelled
queries: every case is ranked as the runtime ranks it (semantic with no embedding service at run
time is BM25, whatever ``--embedder`` says: :mod:`workbench.search.delivery`; the ``note`` line
and ``measured_as`` say so) and run through the runtime's selection. Without ``--cases`` the
agent's own ``test_cases`` are used. ``--engine`` measures another design of the strategy lab at
its defaults with ``--param`` changes, under its own token accounting. Problems with the cases
(unknown tool names, skipped cases) go to stderr as warnings; ``--min-recall R`` turns the run
into a gate (exit 1 below R).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from workbench.commands.common import (
    open_command_workspace,
    print_json,
    runtime_of,
    search_queries,
    setting_from_args,
    warn,
    warn_unmatched,
    with_runtime,
)
from workbench.config.filtering import ToolFiltering
from workbench.errors import CheckFailed, InputError
from workbench.evaluate.cases import CaseSet, CasesSource, resolve_cases
from workbench.evaluate.casesource import find_cases_source, no_cases_message
from workbench.evaluate.compare import params_text
from workbench.evaluate.diagnostics import Finding
from workbench.evaluate.engines import EngineReport, evaluate_engine
from workbench.evaluate.intervals import Interval, interval_text
from workbench.evaluate.metrics import (
    CaseResult,
    EvalReport,
    aggregate,
    by_origin,
    ci95,
    evaluate,
    only_generated,
)
from workbench.evaluate.query_findings import QueryReader
from workbench.evaluate.words import describe, metric_line
from workbench.runtimes.base import CaseSearch
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.delivery import MethodRun, method_run, runtime_engine
from workbench.search.flags import SearchFlags
from workbench.search.strategies import build_strategy
from workbench.search.strategies.anthropic import Variant
from workbench.search.strategies.params import parse_params
from workbench.search.strategies.registry import engines, get_engine
from workbench.workspace import Workspace

#: Warning lines about unknown names printed before "... and N more".
WARNINGS_SHOWN = 10
MISSES_SHOWN = 5


def open_agent(args: argparse.Namespace) -> Workspace:
    """The workspace for measuring: a variable the environment lacks is a warning, not an error.

    Measuring needs the tools, not the servers' credentials (and with ``--catalog`` no server is
    started at all), so as ``tools`` does, a missing ``${VAR}`` gets a placeholder and a warning.
    """
    return open_command_workspace(args)


def open_for_cases(args: argparse.Namespace) -> tuple[Workspace, CaseSet]:
    """The workspace and the resolved cases, from the one default order of
    :mod:`workbench.evaluate.casesource` (``--cases``, the agent's test_cases, the cases file
    beside it); which one was used is said on stderr and kept as ``cases.source``."""
    ws = open_agent(args)
    _, cases = read_cases(ws, getattr(args, "cases", None), required=True)
    assert cases is not None  # required: none is an InputError
    return ws, cases


def read_cases(
    ws: Workspace, path: str | None, *, required: bool
) -> tuple[CasesSource | None, CaseSet | None]:
    """The cases of the one default order (:mod:`workbench.evaluate.casesource`) resolved against
    the catalog, which source was used said on stderr (and kept as ``cases.source``), problems
    with them as warnings. A ``--cases`` file that names no tool of the catalog is an error;
    otherwise no usable cases is an error only when ``required`` (else ``None``)."""
    found = find_cases_source(ws.agent, path)
    if found is None:
        if required:
            raise InputError(no_cases_message(ws.agent.path), file=ws.agent.path)
        print("holo-tune: cases: none (the checks use typical scores)", file=sys.stderr)
        return None, None
    source, raw = found
    print(f"holo-tune: cases: {source.describe()}", file=sys.stderr)
    cases = resolve_cases(raw, ws.catalog)
    cases.source = source
    report_case_problems(cases)
    if not len(cases):
        if required or source.kind == "flag":
            raise InputError("no case names a tool of this catalog", file=source.path)
        return source, None
    return source, cases


def check_folds(cases: CaseSet, folds: int, *, given: bool) -> None:
    """Enough cases for the k-fold held-out figures, or one line saying why not: how many cases
    name a tool of the catalog, how many were dropped for unknown names, from which file; the
    ``--folds`` flag is named only when the user passed it."""
    if len(cases) >= folds:
        return
    source = cases.source
    dropped = (
        f"; {len(cases.skipped)} more were dropped: none of their expected tools is in the "
        "catalog (the names warned about above)"
        if cases.skipped
        else ""
    )
    need = f"--folds {folds} needs" if given else f"the held-out figures ({folds}-fold) need"
    raise InputError(
        f"only {len(cases)} case(s) name a tool of this catalog{dropped}: {need} at least "
        f"{folds}, one per fold",
        file=source.path if source is not None else None,
    )


def report_case_problems(cases: CaseSet) -> None:
    lines = cases.warnings()
    unknown = [line for line in lines if "unknown expected tool" in line]
    rest = [line for line in lines if line not in unknown]
    for line in unknown[:WARNINGS_SHOWN]:
        warn(line)
    if len(unknown) > WARNINGS_SHOWN:
        warn(f"... and {len(unknown) - WARNINGS_SHOWN} more unknown expected tool names")
    for line in rest:
        warn(line)


def measured_setting(args: argparse.Namespace, ws: Workspace) -> ToolFiltering:
    setting = setting_from_args(args, ws.agent.filtering)
    warn_unmatched(setting, ws.catalog)
    return setting


def run(args: argparse.Namespace) -> int:
    if args.min_recall is not None and not 0.0 <= args.min_recall <= 1.0:
        raise InputError("must be between 0 and 1", field="--min-recall")
    engine = getattr(args, "engine", "holodeck")
    params = getattr(args, "param", [])
    if engine == "holodeck":
        if params:
            raise InputError(
                "holodeck takes the setting flags (--top-k ...), not --param", field="--param"
            )
        report: EvalReport | EngineReport = run_holodeck(args)
    else:
        report = run_engine(args, engine)
    recall = report.metrics.recall
    if args.min_recall is not None and recall < args.min_recall:
        raise CheckFailed(f"recall {recall:.4f} is below --min-recall {args.min_recall:g}")
    return 0


def run_engine(args: argparse.Namespace, engine: str) -> EngineReport:
    """A strategy engine at ``--param`` over its defaults, on the same cases and token table."""
    given = [flag for key, flag in _SETTING_FLAGS.items() if getattr(args, key, None) is not None]
    if given:
        raise InputError(
            f"{given[0]} is a holodeck setting; {engine} takes --param KEY=VALUE", field=given[0]
        )
    params = parse_params(engine, args.param)
    model_query = get_engine(engine).model_query
    if getattr(args, "llm", None) is not None and not model_query:
        writers = " or ".join(e.name for e in engines() if e.model_query)
        raise InputError(
            f"is the search call a model writes for the {writers} engine; {engine} searches the "
            "message",
            field="--llm",
        )
    ws, cases = open_for_cases(args)
    strategy = build_strategy(engine, ws.catalog, ws.tokens, params, embedder=ws.embedder.embedder)
    queries = search_queries(args, ws.agent, cases) if model_query else None
    variant: Variant = "regex" if getattr(strategy.params, "variant", "") == "regex" else "bm25"
    report = evaluate_engine(
        strategy,
        cases,
        int(ws.tokens.all),
        search_as=None if queries is None else (lambda m: queries.query(m, variant)),
    )
    warn_generated(report.per_case)
    if args.json:
        obj = report.to_json(ws.catalog)
        if queries is not None:
            obj["search_query"] = queries.to_json()
            if queries.llm is not None:
                for row in obj["per_case"]:
                    row["search_query"] = queries.query(row["query"], variant)
        obj = with_runtime(with_source(obj, cases), runtime_of(args, ws.agent))
        print_json(obj, stream=sys.stdout)
    else:
        sys.stdout.write(engine_report(report, ws))
        if queries is not None:
            sys.stdout.write(f"query     {queries.describe()}\n")
    return report


def with_source(obj: dict[str, Any], cases: CaseSet) -> dict[str, Any]:
    """A ``--json`` object with ``cases_source`` (``{"kind", "path"}``: which cases were used)."""
    if cases.source is not None:
        obj["cases_source"] = cases.source.to_json()
    return obj


def warn_generated(results: Sequence[CaseResult]) -> None:
    """Every case was written by a model: say the verdict rests on them alone."""
    if only_generated(results):
        warn(
            "every case is generated: generated queries echo the tools' own words, which "
            "flatters bm25; label real queries before trusting this verdict"
        )


_SETTING_FLAGS = {
    "method": "--method",
    "top_k": "--top-k",
    "threshold": "--threshold",
    "always_include": "--always-include",
    "top_n_used": "--top-n-used",
    "enabled": "--enabled",
}


def run_holodeck(args: argparse.Namespace) -> EvalReport | EngineReport:
    ws, cases = open_for_cases(args)
    runtime = runtime_of(args, ws.agent)
    own = runtime.plugin.case_search(ws, SearchFlags.of(vars(args)), warn)
    if own is not None:  # the runtime's own search (serve: holo-tune's engine), as it runs
        return run_own(args, ws, cases, runtime, own)
    for flag in ("settings", "max_tokens"):
        if getattr(args, flag, None) is not None:
            warn(
                f"--{flag.replace('_', '-')}: {runtime.name} is measured with HoloDeck's filter, "
                "which does not read it; ignored"
            )
    setting = measured_setting(args, ws)
    if not setting.enabled:
        warn(
            "tool_filtering is disabled: the runtime sends every tool, and that is what is "
            "measured (--enabled true measures the filter)"
        )
    # what the runtime runs: semantic scored with --embedder is BM25 where it has no embedding
    given = runtime.plugin.runs_given_embedder
    engine = runtime_engine(ws.engine, ws.agent.agent, given=given)
    report = evaluate(engine, ws.catalog, ws.tokens, cases, setting)
    warn_generated(report.per_case)
    findings = miss_findings(report, ws)
    run = method_run(ws.agent.agent, setting.search_method, ws.embedder, given=given)
    if args.json:
        obj = with_runtime(with_source(report.to_json(ws.catalog), cases), runtime)
        obj["measured_as"] = run.to_json()
        obj["findings"] = [f.to_json() for f in findings]
        print_json(obj, stream=sys.stdout)
    else:
        sys.stdout.write(human_report(report, ws, run))
        if findings:
            sys.stdout.write(miss_findings_text(findings))
    return report


def run_own(
    args: argparse.Namespace, ws: Workspace, cases: CaseSet, runtime: RuntimeInfo, own: CaseSearch
) -> EngineReport:
    """The runtime's own search (:meth:`~workbench.runtimes.base.Runtime.case_search`) on every
    case, billed as the runtime bills a task; ``--json`` as ``eval --engine``'s, its ``engine``
    the runtime's search and its ``setting`` the settings searched with."""
    report = evaluate_engine(own.strategy, cases, int(ws.tokens.all))
    warn_generated(report.per_case)
    if args.json:
        obj = with_runtime(with_source(report.to_json(ws.catalog), cases), runtime)
        print_json({**obj, **own.extra}, stream=sys.stdout)
    else:
        head = [
            f"{ws.agent.name}: {report.metrics.cases} cases, {len(ws.catalog)} tools",
            f"search    {runtime.name}: {own.heading}",
        ]
        sys.stdout.write(_report_lines(head, report, ws))
    return report


def miss_findings(report: EvalReport, ws: Workspace) -> list[Finding]:
    """The query findings of the missed cases (each names its query in its evidence)."""
    embeds = report.setting.search_method != "bm25" and ws.embedder.runtime != "none"
    reader = QueryReader(ws.catalog)
    return reader.many([r.case.query for r in report.misses], embeds=embeds)


def miss_findings_text(findings: list[Finding]) -> str:
    lines = [f"queries   {len(findings)} missed case(s) with a query finding; first:"]
    for f in findings[:MISSES_SHOWN]:
        query = str(f.evidence.get("query", ""))
        query = query if len(query) <= 60 else query[:57] + "..."
        lines.append(f"  {query!r}: {f.code}: {f.message}")
    if findings and findings[0].fix:
        lines.append(f"  fix: {findings[0].fix}")
    return "\n".join(lines) + "\n"


def ci_line(intervals: dict[str, Interval]) -> str:
    """The 95 % intervals under :func:`metric_line`'s figures."""
    return "  ".join(f"{name} {interval_text(intervals[name])}" for name in _CI_ORDER)


_CI_ORDER = ("recall", "hit", "top1", "mrr")


def engine_report(report: EngineReport, ws: Workspace) -> str:
    m = report.metrics
    head = [
        f"{ws.agent.name}: {m.cases} cases, {len(ws.catalog)} tools",
        f"engine    {report.engine} {params_text(report.engine, report.params)}",
    ]
    return _report_lines(head, report, ws)


def human_report(report: EvalReport, ws: Workspace, run: MethodRun | None = None) -> str:
    m = report.metrics
    lines = [
        f"{ws.agent.name}: {m.cases} cases, {len(ws.catalog)} tools",
        f"setting   {describe(report.setting)}",
    ]
    said = run.line() if run is not None else None
    if said:
        lines.append(f"note      {said}")
    elif report.fallback:
        lines.append(f"note      {report.setting.search_method} at run time: {report.fallback}")
    return _report_lines(lines, report, ws)


def _report_lines(head: list[str], report: EvalReport | EngineReport, ws: Workspace) -> str:
    m = report.metrics
    tokens = ws.tokens
    lines = list(head)
    lines += [
        f"metrics   {metric_line(m)}",
        f"95% CI    {ci_line(ci95(report.per_case))}  ({m.cases} cases)",
        f"tokens    {tokens.encoding} ({'exact' if tokens.exact else 'estimate'}), "
        "mean per request",
    ]
    if len(report.by_category) > 1:
        lines.append("by category")
        width = max(len(c) for c in report.by_category)
        for name, cm in report.by_category.items():
            lines.append(
                f"  {name:<{width}}  n={cm.cases:<5} recall {cm.recall:.3f}  hit {cm.hit:.3f}  "
                f"tokens {cm.tokens_selected_mean:,.0f}"
            )
    split = by_origin(report.per_case, m.tokens_all)
    if split:
        lines.append("by source (generated queries echo the tools' words: trust labelled first)")
        for name, part in split.items():
            pm = aggregate(part, m.tokens_all)
            ci = ci95(part)
            lines.append(
                f"  {name:<9}  n={pm.cases:<5} recall {pm.recall:.3f} "
                f"({interval_text(ci['recall'])})  hit {pm.hit:.3f} "
                f"({interval_text(ci['hit'])})  tokens {pm.tokens_selected_mean:,.0f}"
            )
    misses = report.misses
    if misses:
        lines.append(f"misses    {len(misses)} case(s) with an expected tool not sent; first:")
        for r in misses[:MISSES_SHOWN]:
            rank = f"first expected at rank {r.rank_of_first}" if r.rank_of_first else "unranked"
            query = r.case.query if len(r.case.query) <= 60 else r.case.query[:57] + "..."
            lines.append(f"  {query!r}: missed {', '.join(r.missed)} ({rank})")
    return "\n".join(lines) + "\n"
