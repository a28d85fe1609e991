"""``holo-tune cases generate AGENT.yaml [-o FILE] [--per-tool N] [--llm SPEC] [--tools GLOB]
[--seed S] [--catalog FILE]``: a first case set, written by a chat model.

The work is :func:`workbench.evaluate.generate.generate_cases`; this module picks the tools,
shows a progress bar on stderr (on a terminal), and writes the cases into the cases file
(default ``<agent stem>.cases.yaml`` beside the agent, the file every command reads by default)
through :mod:`workbench.evaluate.casestore`: the generated cases of an earlier run are replaced,
hand labels stay, and a query already in the file is not added again.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
from pathlib import Path

from workbench.catalog.models import Tool
from workbench.commands.common import load_command_agent, open_catalog, warn
from workbench.errors import InputError
from workbench.evaluate.casesource import default_cases_path
from workbench.evaluate.casestore import GENERATED, load_sources, set_many
from workbench.evaluate.chat import AnswerCache, resolve_endpoint
from workbench.evaluate.generate import default_cache_dir, generate_cases
from workbench.progress import ProgressLine

#: Skipped tools named one by one before "... and N more".
SKIPPED_SHOWN = 10
MAX_PER_TOOL = 20


def pick_tools(tools: list[Tool], pattern: str | None) -> list[Tool]:
    """The tools whose full name (``server-tool``) or bare name matches the glob."""
    if pattern is None:
        return tools
    return [
        t
        for t in tools
        if fnmatch.fnmatchcase(t.full_name, pattern) or fnmatch.fnmatchcase(t.name, pattern)
    ]


def run(args: argparse.Namespace) -> int:
    if args.action == "from-log":
        from workbench.commands import cases_log

        return cases_log.run(args)
    if getattr(args, "logs", None):
        raise InputError(f"cases generate takes no LOG files (got {args.logs[0]!r})")
    if not 1 <= args.per_tool <= MAX_PER_TOOL:
        raise InputError(f"must be between 1 and {MAX_PER_TOOL}", field="--per-tool")
    agent = load_command_agent(args)
    endpoint = resolve_endpoint(args.llm, agent.agent.model, agent.env or None)
    catalog = open_catalog(args, agent, refuse=False)
    tools = pick_tools(list(catalog.tools), args.tools)
    if not tools:
        raise InputError(f"no tool matches {args.tools!r}", field="--tools")
    output = Path(args.output) if args.output else default_cases_path(agent.path)
    kept = [q for q, source in load_sources(output).items() if source != GENERATED]
    print(
        f"holo-tune: asking {endpoint.spec} for {args.per_tool} queries per tool, "
        f"{len(tools)} tools",
        file=sys.stderr,
    )
    with ProgressLine("generating", "tools") as line:
        report = generate_cases(
            tools,
            endpoint,
            per_tool=args.per_tool,
            seed=args.seed,
            cache=AnswerCache(default_cache_dir(agent.env or None)),
            existing=kept,
            on_progress=line,
        )
    if report.cases or len({reason for _, reason in report.skipped}) > 1:
        # (every tool skipped for one reason: the error below says it once)
        for name, reason in report.skipped[:SKIPPED_SHOWN]:
            warn(f"{name}: skipped: {reason}")
        if len(report.skipped) > SKIPPED_SHOWN:
            warn(f"... and {len(report.skipped) - SKIPPED_SHOWN} more tools skipped")
    if not report.cases:
        first = report.skipped[0][1] if report.skipped else "every query was a duplicate"
        raise InputError(f"no query generated ({first}); nothing written", file=output)
    set_many(
        output,
        [(query, [tool]) for query, tool in report.cases],
        source=GENERATED,
        drop_source=GENERATED,
        agent_name=agent.path.name,
    )
    print(
        f"{output}: {len(report.cases)} generated cases for "
        f"{len(tools) - len(report.skipped)} of {len(tools)} tools "
        f"({report.requests} requests, {report.cached} answers from the cache, "
        f"{report.duplicates} duplicates dropped, {len(report.skipped)} tools skipped)"
    )
    return 0
