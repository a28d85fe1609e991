"""``holo-tune search AGENT.yaml (QUERY | --queries FILE) [...]``: what the runtime would send.

Ranks every tool for the query as HoloDeck's filter does (the ``holodeck`` engine), selects with
the setting (the YAML's block, overridden by the flags), and prints the ranking with its cut
line and the token bill (a runtime that searches with its own engine shows that search instead:
:mod:`workbench.commands.search_ranked`); ``--json`` prints docs/json.md's ``search --json``
object, one a line with ``--queries`` (every query in one process: the catalog and the tool
embeddings are built once).

When semantic or hybrid is really BM25 at run time (no embedding service, or a fallback), it
says so loudly, on stderr with ``--json``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from workbench.commands.common import (
    open_command_workspace,
    print_json,
    runtime_of,
    setting_from_args,
    use_color,
    warn,
    warn_unmatched,
    with_runtime,
)
from workbench.commands.search_ranked import run_ranked
from workbench.config.filtering import ToolFiltering
from workbench.errors import InputError
from workbench.evaluate.diagnostics import Finding, search_cannot_vary
from workbench.evaluate.query_findings import QueryReader
from workbench.limits import query_too_long, read_input
from workbench.search.flags import SearchFlags
from workbench.search.selection import SearchCut, ranked, score_decimals, search_cut, select
from workbench.search.types import IntArray, Ranking, Selection
from workbench.search.usage import load_usage
from workbench.workspace import Workspace

#: Rows the human table shows without ``--limit`` (at least: more when the cut is further down).
DEFAULT_ROWS = 15
WHY = {"search": "search", "always_include": "always", "top_n_used": "top-n"}


@dataclass(frozen=True)
class Result:
    """One query's ranking and selection under one setting."""

    query: str
    setting: ToolFiltering
    ranking: Ranking
    selection: Selection


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        raise InputError("must be >= 0", field="--limit")
    queries = read_queries(args.queries) if args.queries else [checked_query(args.query)]
    workspace = open_for_search(args)
    runtime = runtime_of(args, workspace.agent)
    out = sys.stdout
    own = runtime.plugin.search_ranker(workspace, SearchFlags.of(vars(args)), warn)
    if own is not None:  # the runtime's own search, not HoloDeck's filter
        return run_ranked(args, queries, workspace, runtime, own, out)
    if getattr(args, "variant", None) is not None:
        warn(f"--variant: {runtime.name} is searched with HoloDeck's filter; ignored")
    for flag in ("settings", "max_tokens"):
        if getattr(args, flag, None) is not None:
            warn(
                f"--{flag.replace('_', '-')}: {runtime.name} is searched with HoloDeck's filter, "
                "which does not read it; ignored"
            )
    setting = setting_from_args(args, workspace.agent.filtering)
    warn_unmatched(setting, workspace.catalog)
    usage = load_usage(args.usage, workspace.catalog) if args.usage else None
    for finding in search_cannot_vary(workspace, setting, runtime, usage):
        warn(finding.message)
    warned: set[str] = set()
    reader = QueryReader(workspace.catalog)
    embeds = runtime_embeds(workspace, setting)
    for number, query in enumerate(queries):
        result = search(workspace, query, setting, usage)
        findings = reader.findings(query, embeds=embeds)
        if args.json:
            for line in warnings(workspace, result):
                if line not in warned:  # each warning once, not once per query
                    warn(line)
                    warned.add(line)
            obj = with_runtime(search_json(workspace, result, args.limit), runtime)
            obj["findings"] = [f.to_json() for f in findings]
            print_json(obj, stream=out, lines=args.queries is not None)
            continue
        if number:
            out.write("\n")
        print_human(workspace, result, args.limit, out, color=use_color(out))
        out.write(findings_lines(findings))
    return 0


def runtime_embeds(workspace: Workspace, setting: ToolFiltering) -> bool:
    """The runtime scores queries with embeddings too (semantic or hybrid with a service)."""
    return setting.search_method != "bm25" and workspace.embedder.runtime != "none"


def findings_lines(findings: list[Finding]) -> str:
    """A query's findings (:mod:`workbench.evaluate.query_findings`) as text, each with its fix."""
    lines = []
    for f in findings:
        lines.append(f"{f.severity}: {f.code}: {f.message}")
        if f.fix:
            lines.append(f"  fix: {f.fix}")
    return "".join(line + "\n" for line in lines)


def open_for_search(args: argparse.Namespace) -> Workspace:
    """The workspace (agent, catalog, tokens, embedder, engine), composed by
    :func:`~workbench.commands.common.open_command_workspace` as for every command that ranks (a
    failed server stops it unless ``--allow-partial``); a missing ``${VAR}`` only warns.

    Ranking needs no secret that the catalog does not: like ``tools``, a missing variable becomes
    a warning, and an embedder that needs the key says so itself. Tool embeddings go through the
    user's disk cache, so a second search over the same catalog embeds only the query.
    """
    return open_command_workspace(args)


def checked_query(query: str) -> str:
    """``QUERY`` as given, or InputError when it is over the query limit (named by its length:
    the query itself is never echoed)."""
    too_long = query_too_long(query)
    if too_long is not None:
        raise InputError(too_long, field="QUERY")
    return query


def read_queries(path: str) -> list[str]:
    """One query a line; blank lines are skipped. A line over the query limit is refused with
    its line number (before any server starts)."""
    raw = read_input(path, InputError, "queries file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"cannot read the queries: {err}", file=path) from None
    queries = []
    for number, line in enumerate(text.splitlines(), start=1):
        query = line.strip()
        too_long = query_too_long(query)
        if too_long is not None:
            raise InputError(too_long, file=path, line=number)
        if query:
            queries.append(query)
    if not queries:
        raise InputError("no queries in the file (one a line)", file=path)
    return queries


def search(
    workspace: Workspace, query: str, setting: ToolFiltering, usage: IntArray | None = None
) -> Result:
    ranking = workspace.engine.rank(query, setting.search_method)
    selection = select(ranking, setting, workspace.catalog, usage)
    return Result(query, setting, ranking, selection)


def search_json(workspace: Workspace, result: Result, limit: int | None) -> dict[str, Any]:
    """docs/json.md's ``search --json`` object."""
    catalog, tokens, setting = workspace.catalog, workspace.tokens, result.setting
    indices = list(result.selection.indices)
    return {
        "query": result.query,
        "method": setting.search_method,
        "top_k": setting.top_k,
        "similarity_threshold": setting.similarity_threshold,
        "selected": sorted(catalog.tools[i].full_name for i in indices),
        "ranking": [
            {"tool": name, "score": score} for name, score in ranked(result.ranking, catalog, limit)
        ],
        "tokens": {
            "all": tokens.all,
            "selected": tokens.total(indices),
            "encoding": tokens.encoding,
            "exact": tokens.exact,
        },
    }


def warnings(workspace: Workspace, result: Result) -> list[str]:
    """What makes these scores differ from what the method's name suggests (loud lines)."""
    method = result.setting.search_method
    choice = workspace.embedder
    lines: list[str] = []
    if method != "bm25":
        fallback = result.ranking.fallback
        if choice.runtime == "none":
            lines.append(f"{method} is BM25 at run time: {choice.note or fallback}")
        elif workspace.engine.embedder is None:
            lines.append(f"{method} is shown as BM25 here: {choice.note or fallback}")
        elif fallback:
            lines.append(f"{method} fell back to BM25 as HoloDeck would: {fallback}")
        elif choice.note:
            lines.append(choice.note)
    if not result.setting.enabled:
        lines.append(
            "tool_filtering is not enabled: the runtime sends every tool; "
            "shown is what it would select if enabled"
        )
    return lines


def print_human(
    workspace: Workspace, result: Result, limit: int | None, out: TextIO, *, color: bool
) -> None:
    catalog, tokens, setting = workspace.catalog, workspace.tokens, result.setting
    ranking, selection = result.ranking, result.selection
    bold, warn, dim, reset = ("\033[1m", "\033[33;1m", "\033[2m", "\033[0m") if color else ("",) * 4
    source = ranking.model_id or ranking.method
    out.write(
        f"{bold}{result.query}{reset}\n"
        f"{setting.search_method} (scores: {source}) · top_k {setting.top_k} · "
        f"threshold {setting.similarity_threshold:g} · {len(catalog)} tools\n"
    )
    for line in warnings(workspace, result):
        out.write(f"{warn}⚠ {line}{reset}\n")
    cut = search_cut(ranking, selection)
    cuts = cut_lines(cut, setting)
    rows = limit if limit is not None else max(DEFAULT_ROWS, cut.position + 3)
    order = ranking.order.tolist()
    shown = order[:rows]
    on_show = set(shown)
    extra = [i for i in selection.indices if i not in on_show]
    width = max([len("tool")] + [len(catalog.tools[i].full_name) for i in shown + extra])
    digits = score_decimals(
        (float(ranking.scores[i]) for i in shown + extra), setting.similarity_threshold, 4
    )
    score_width = max(len("score"), digits + 3)
    out.write(
        f"{dim}{'#':>5}  {'tool':<{width}}  {'score':>{score_width}}  {'tokens':>6}  why{reset}\n"
    )

    def cut_line(position: int) -> None:
        text = f" {cuts[position]} "
        out.write(f"{dim}{'':>5}  {text.center(width + score_width + 16, '─')}{reset}\n")

    for position, index in enumerate(shown):
        if position in cuts:
            cut_line(position)
        out.write(_row(position + 1, index, workspace, result, width, digits) + "\n")
    if len(shown) in cuts and len(shown) < len(order):
        cut_line(len(shown))
    if extra:
        out.write(f"{dim}{'…':>5}{reset}\n")
        for index in sorted(extra, key=ranking.rank_of):
            out.write(_row(ranking.rank_of(index), index, workspace, result, width, digits) + "\n")
    chosen = tokens.total(list(selection.indices))
    saved = 1 - chosen / tokens.all if tokens.all else 0.0
    kind = "exact" if tokens.exact else "estimate"
    out.write(
        f"{bold}tokens{reset} all {tokens.all:,} · selected {chosen:,} "
        f"({len(selection.indices)} tools) · saved {saved:.1%} · {tokens.encoding} ({kind})\n"
    )


def _row(
    rank: int, index: int, workspace: Workspace, result: Result, width: int, digits: int
) -> str:
    tool = workspace.catalog.tools[index]
    score = float(result.ranking.scores[index])
    why = WHY.get(result.selection.reasons.get(index, ""), "")
    count = int(workspace.tokens.per_tool[index])
    shown = f"{score:>{max(len('score'), digits + 3)}.{digits}f}"
    return f"{rank:>5}  {tool.full_name:<{width}}  {shown}  {count:>6,}  {why}".rstrip()


def cut_lines(cut: SearchCut, setting: ToolFiltering) -> dict[int, str]:
    """The cut lines as ``{ranked tools above the line: label}``: where top_k stops tools that
    pass the threshold (only when it does), and where the scores fall under the threshold."""
    lines: dict[int, str] = {}
    if cut.top_k is not None:
        lines[cut.top_k] = f"top_k {setting.top_k}"
    label = f"threshold {setting.similarity_threshold:g}: {cut.threshold} pass"
    lines[cut.threshold] = f"{lines[cut.threshold]} · {label}" if cut.threshold in lines else label
    return lines
