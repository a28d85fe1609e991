"""``holo-tune check AGENT.yaml [--catalog FILE] [setting flags] [--json]``.

Lists what the runtime will do differently from what the config suggests (the findings of
:mod:`workbench.evaluate.diagnostics`), each with its evidence. Exit 1 when any finding is an
error (the block would be rejected or ignored), so it can gate a CI job.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from workbench.commands.common import print_json, setting_from_args, use_color
from workbench.commands.eval import open_agent
from workbench.errors import CheckFailed
from workbench.evaluate.diagnostics import Finding, diagnose, has_errors

_COLOURS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_RESET = "\x1b[0m"


def run(args: argparse.Namespace) -> int:
    ws = open_agent(args)
    setting = setting_from_args(args, ws.agent.filtering)
    findings = diagnose(ws, setting)
    counts = Counter(f.severity for f in findings)
    if args.json:
        print_json(
            {
                "agent": str(ws.agent.path),
                "setting": setting.block(),
                "findings": [f.to_json() for f in findings],
                "errors": counts["error"],
                "warnings": counts["warning"],
            },
            stream=sys.stdout,
        )
    else:
        sys.stdout.write(human(findings, colour=use_color(sys.stdout)))
    if has_errors(findings):
        raise CheckFailed(f"{counts['error']} error(s): the runtime will not run this block")
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
