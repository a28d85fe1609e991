"""``holo-tune search`` when the runtime ranks with a search of its own
(:meth:`workbench.runtimes.base.Runtime.search_ranker`): what that search returns, in its order,
and every tool that scored, best first, under the names the runtime lists.

``--json`` keeps ``search --json``'s keys (and adds the search's own: serve's ``confidence``,
``refused`` and each row's ``shares``): ``selected`` is what the search returns in its order
(``"order": "ranked"`` says so; HoloDeck's is sorted by name), ``ranking`` every tool that scored
(the first N with ``--limit N``), ``method``/``top_k``/``similarity_threshold`` the runtime's
variant, results per search and no threshold (its ``setting`` has the rest), ``tokens.selected``
the returned tools' definitions and ``tokens.request`` the request after the search as the
runtime bills it; ``findings`` is empty (the query findings are about HoloDeck's BM25).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from workbench.commands.common import print_json, with_runtime
from workbench.runtimes.base import SearchRanking
from workbench.runtimes.detect import RuntimeInfo
from workbench.workspace import Workspace

#: Rows the text shows without ``--limit`` (more when the search returns more).
DEFAULT_ROWS = 15


def run_ranked(
    args: argparse.Namespace,
    queries: Sequence[str],
    workspace: Workspace,
    runtime: RuntimeInfo,
    ranker: Callable[[str], SearchRanking],
    out: TextIO,
) -> int:
    for number, query in enumerate(queries):
        found = ranker(query)
        if args.json:
            obj = with_runtime(ranked_json(workspace, found, args.limit), runtime)
            print_json(obj, stream=out, lines=args.queries is not None)
            continue
        if number:
            out.write("\n")
        out.write(ranked_text(workspace, found, args.limit, runtime.name))
    return 0


def ranked_json(workspace: Workspace, found: SearchRanking, limit: int | None) -> dict[str, Any]:
    setting = dict(found.setting)
    tokens = workspace.tokens
    return {
        "query": found.query,
        "method": setting.get("method"),
        "top_k": setting.get("top_k"),
        "similarity_threshold": setting.get("similarity_threshold"),
        "setting": setting,
        "order": "ranked",
        "selected": list(found.selected),
        "ranking": [
            {"tool": name, "score": score, **_shares(found, position)}
            for position, (name, score) in enumerate(found.ranking[:limit])
        ],
        "tokens": {
            "all": tokens.all,
            "selected": tokens.total(list(found.indices)),
            "request": found.request_tokens,
            "encoding": tokens.encoding,
            "exact": tokens.exact,
        },
        "findings": [],
        **found.extra,
    }


def _shares(found: SearchRanking, position: int) -> dict[str, Any]:
    """A ranking row's ``shares`` (what its score is made of), where the search gives them."""
    if position >= len(found.shares):
        return {}
    return {"shares": {k: round(float(v), 6) for k, v in found.shares[position].items()}}


def ranked_text(workspace: Workspace, found: SearchRanking, limit: int | None, name: str) -> str:
    rows = limit if limit is not None else max(DEFAULT_ROWS, len(found.selected) + 3)
    shown = found.ranking[:rows]
    width = max([len("tool")] + [len(tool) for tool, _ in shown])
    lines = [found.query, f"{name}: {found.heading}"]
    if found.note:
        lines.append(found.note)
    why = "  made of" if found.shares else ""
    lines.append(f"{'#':>5}  {'tool':<{width}}  score{why}")
    for position, (tool, score) in enumerate(shown):
        if position == len(found.selected):
            lines.append(f"{'':>5}  {f' returned: {position} ':─^{width + 9}}")
        made = ""
        if position < len(found.shares):
            parts = sorted(found.shares[position].items(), key=lambda kv: -abs(kv[1]))
            made = "  " + " ".join(f"{k} {v:+.2f}" for k, v in parts)
        lines.append(f"{position + 1:>5}  {tool:<{width}}  {score:.4f}{made}".rstrip())
    if not found.ranking:
        lines.append(f"{'':>5}  no tool matches: the search returns nothing")
    tokens = workspace.tokens
    kind = "exact" if tokens.exact else "estimate"
    lines.append(
        f"tokens: the request after the search {found.request_tokens:,} · every tool in one "
        f"request {tokens.all:,} · {tokens.encoding} ({kind})"
    )
    return "\n".join(lines) + "\n"
