"""``holo-tune check AGENT.yaml [--catalog FILE] [--cases FILE] [setting flags] [--json]``.

Lists what the runtime will do differently from what the config suggests (the findings of
:mod:`workbench.evaluate.diagnostics`), each with its evidence. The labelled queries (the one
default order of :mod:`workbench.evaluate.casesource`) are ranked so that the checks that read
scores read real ones. Exit 1 when any finding is an
error (the block would be rejected or ignored), so it can gate a CI job.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from workbench.catalog.enumerate import load_catalog
from workbench.commands.common import print_json, setting_from_args, use_color, warn_catalog
from workbench.config import load_agent
from workbench.errors import CheckFailed
from workbench.evaluate.cases import resolve_cases
from workbench.evaluate.casesource import CasesSource, find_cases_source
from workbench.evaluate.diagnostics import Finding, diagnose, has_errors
from workbench.search.types import Ranking
from workbench.workspace import Workspace, build_workspace

_COLOURS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_RESET = "\x1b[0m"


def open_checked(args: argparse.Namespace) -> Workspace:
    """The workspace, loaded leniently: the loader's warnings become findings, not stderr lines.

    A missing ``${VAR}`` gets a placeholder so the tools can still be listed, and a stdio command
    HoloDeck does not start is started anyway; both are errors among the findings (HoloDeck would
    refuse the file), with the file, line and variable or command as evidence.
    """
    agent = load_agent(args.agent, missing_env="warn")
    catalog = load_catalog(agent, catalog_file=args.catalog, timeout=args.timeout)
    warn_catalog(catalog)
    return build_workspace(agent, catalog, embedder_spec=getattr(args, "embedder", None))


def case_rankings(
    args: argparse.Namespace, ws: Workspace, method: str
) -> tuple[CasesSource | None, list[Ranking]]:
    """The labelled queries of the one default order (``--cases``, the agent's test_cases, the
    cases file beside it) ranked by ``method``, for the checks that read real scores; said on
    stderr. No cases is no error here: those checks then fall back on what is usual."""
    found = find_cases_source(ws.agent, getattr(args, "cases", None))
    if found is None:
        print("holo-tune: cases: none (the checks use typical scores)", file=sys.stderr)
        return None, []
    source, raw = found
    print(f"holo-tune: cases: {source.describe()}", file=sys.stderr)
    cases = resolve_cases(raw, ws.catalog)
    return source, [ws.engine.rank(case.query, method) for case in cases.cases]


def run(args: argparse.Namespace) -> int:
    ws = open_checked(args)
    setting = setting_from_args(args, ws.agent.filtering)
    source, rankings = case_rankings(args, ws, setting.search_method)
    findings = diagnose(ws, setting, rankings=rankings)
    counts = Counter(f.severity for f in findings)
    if args.json:
        print_json(
            {
                "agent": str(ws.agent.path),
                "setting": setting.block(),
                "findings": [f.to_json() for f in findings],
                "errors": counts["error"],
                "warnings": counts["warning"],
                "cases_source": source.to_json() if source is not None else None,
            },
            stream=sys.stdout,
        )
    else:
        sys.stdout.write(human(findings, colour=use_color(sys.stdout)))
    if has_errors(findings):
        what = "agent" if any(f.code.startswith("config-") for f in findings) else "block"
        raise CheckFailed(f"{counts['error']} error(s): the runtime will not run this {what}")
    return 0


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
    counts = Counter(f.severity for f in findings)
    lines.append(
        f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info"
    )
    return "\n".join(lines) + "\n"
