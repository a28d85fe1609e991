"""``holo-tune check AGENT.yaml [--catalog FILE] [setting flags] [--cases FILE] [--usage FILE]
[--no-what-if] [--write-fixes] [--json]``.

Lists what the runtime will do differently from what the config suggests (the findings of
:mod:`workbench.evaluate.diagnostics`), what is wrong with the catalog
(:mod:`workbench.evaluate.catalog_findings`) and, with labelled cases (the one default order of
:mod:`workbench.evaluate.casesource`: ``--cases``, the agent's test_cases, the cases file beside
it), the expected tools no case reaches and the what-if rows (changes outside the block,
:mod:`workbench.evaluate.whatif`), each with its evidence and fix. The cases are ranked so that
the checks that read scores read real ones. A runtime that does not read the block runs the
cases through its own search instead (:meth:`~workbench.runtimes.base.Runtime.case_findings`),
and ``--write-fixes`` writes the fixes it can write itself
(:meth:`~workbench.runtimes.base.Runtime.fix_write`). Exit 1 when any finding is an
error (the block would be rejected or ignored), so it can gate a CI job.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from workbench.commands.apply import show_config_write
from workbench.commands.common import (
    open_command_workspace,
    print_json,
    runtime_of,
    setting_from_args,
    use_color,
)
from workbench.commands.eval import read_cases
from workbench.config.filtering import ToolFiltering
from workbench.errors import CheckFailed
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet, CasesSource
from workbench.evaluate.catalog_findings import catalog_findings
from workbench.evaluate.diagnostics import SEVERITIES, Finding, diagnose, has_errors
from workbench.evaluate.metrics import evaluate
from workbench.evaluate.whatif import measure_what_ifs
from workbench.progress import ProgressLine
from workbench.runtimes.detect import RuntimeInfo
from workbench.search.delivery import runtime_engine
from workbench.search.usage import load_usage
from workbench.workspace import Workspace

_COLOURS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_RESET = "\x1b[0m"


def open_checked(args: argparse.Namespace) -> Workspace:
    """The workspace, loaded leniently: the loader's warnings become findings, not stderr lines.

    A missing ``${VAR}`` gets a placeholder so the tools can still be listed, and a stdio command
    HoloDeck does not start is started anyway; both are errors among the findings (HoloDeck would
    refuse the file), with the file, line and variable or command as evidence.
    """
    return open_command_workspace(args, agent_warnings=False)


def check_cases(
    args: argparse.Namespace, ws: Workspace
) -> tuple[CasesSource | None, CaseSet | None]:
    """The labelled queries of the one default order (:func:`~workbench.commands.eval.read_cases`).
    No cases is no error here: the checks that read scores then fall back on what is usual, and
    the case-based findings are left out."""
    return read_cases(ws, getattr(args, "cases", None), required=False)


def all_findings(
    args: argparse.Namespace,
    ws: Workspace,
    setting: ToolFiltering,
    runtime: RuntimeInfo,
    cases: CaseSet | None,
) -> list[Finding]:
    """The diagnostics, the catalog findings and, with cases, unreachable tools and what-ifs.

    Unreachable tools and what-ifs measure the ``tool_filtering`` block's filter where the
    runtime reads the block; where it does not (it never runs that filter), the runtime's own
    case findings stand in for them."""
    usage = load_usage(args.usage, ws.catalog) if getattr(args, "usage", None) else None
    filtered = cases if runtime.reads_tool_filtering else None
    given = runtime.plugin.runs_given_embedder
    engine = runtime_engine(ws.engine, ws.agent.agent, given=given)  # what the runtime runs
    rankings = (
        [engine.rank(case.query, setting.search_method) for case in filtered.cases]
        if filtered is not None
        else []
    )
    found = diagnose(ws, setting, rankings=rankings, usage=usage, runtime=runtime)
    results = None
    if filtered is not None:
        results = evaluate(engine, ws.catalog, ws.tokens, filtered, setting, usage=usage)
    found += catalog_findings(ws.catalog, ws.tokens, results.per_case if results else None)
    if (
        filtered is not None
        and not getattr(args, "no_what_if", False)
        and len(filtered) >= args.folds
    ):
        with ProgressLine("check: what-if rows", quiet=getattr(args, "json", False)) as line:
            report = measure_what_ifs(
                ws,
                filtered,
                setting,
                Budget(),
                usage_file=getattr(args, "usage", None),
                folds=args.folds,
                on_progress=line,
            )
        found += [row.finding() for row in report.listed]
    if cases is not None and filtered is None:
        found += runtime.plugin.case_findings(
            ws,
            cases,
            folds=args.folds,
            what_if=not getattr(args, "no_what_if", False),
            quiet=bool(getattr(args, "json", False)),
        )
    return sorted(found, key=lambda f: SEVERITIES.index(f.severity))


def run(args: argparse.Namespace) -> int:
    ws = open_checked(args)
    setting = setting_from_args(args, ws.agent.filtering)
    runtime = runtime_of(args, ws.agent)
    source, cases = check_cases(args, ws)
    findings = all_findings(args, ws, setting, runtime, cases)
    counts = Counter(f.severity for f in findings)
    if args.json:
        print_json(
            {
                "agent": str(ws.agent.path),
                "runtime": runtime.to_json(),
                "setting": setting.block(),
                "findings": [f.to_json() for f in findings],
                "errors": counts["error"],
                "warnings": counts["warning"],
                "cases_source": source.to_json() if source is not None else None,
            },
            stream=sys.stdout,
        )
    else:
        sys.stdout.write(f"{runtime.line()}\n")
        sys.stdout.write(human(findings, colour=use_color(sys.stdout)))
    if getattr(args, "write_fixes", False):
        write_fixes(args, ws, runtime, findings)
    if has_errors(findings):
        what = "agent" if any(f.code.startswith("config-") for f in findings) else "block"
        raise CheckFailed(f"{counts['error']} error(s): the runtime will not run this {what}")
    return 0


def write_fixes(
    args: argparse.Namespace, ws: Workspace, runtime: RuntimeInfo, findings: list[Finding]
) -> None:
    """``--write-fixes``: the runtime writes the fixes it can (or one line says there is none)."""
    plan = runtime.plugin.fix_write(ws, findings)
    if plan is not None:
        show_config_write(plan, to_stdout=not args.json)
        return
    why = (
        "no finding has a fix it writes"
        if runtime.plugin.fixes
        else "it writes no fix of its own (apply or tune --apply write the block)"
    )
    print(f"holo-tune: nothing written for {runtime.name}: {why}", file=sys.stderr)


def human(findings: list[Finding], *, colour: bool) -> str:
    if not findings:
        return "no findings: the runtime will do what the config says\n"
    lines = []
    for f in findings:
        label = f"{f.severity:<7}"
        if colour:
            label = f"{_COLOURS[f.severity]}{label}{_RESET}"
        where = f.evidence.get("file")
        if where and f.evidence.get("line"):
            where = f"{where}:{f.evidence['line']}"
        lines.append(f"{label} {f.code}: {f.message}" + (f" [{where}]" if where else ""))
        if f.fix:
            lines.append(f"        fix: {f.fix}")
    counts = Counter(f.severity for f in findings)
    lines.append(
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
    )
    return "\n".join(lines) + "\n"
