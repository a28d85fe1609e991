"""Findings about the catalog itself (``holo-tune check``, the catalog tab): plain data.

- ``unreachable-tools``: tools the cases expect that no case gets sent under the setting;
- ``one-word-description``: a description of one word (empty ones are
  :mod:`~workbench.evaluate.diagnostics`' ``empty-description``);
- ``confusable-tools``: pairs of tools whose searchable texts (what BM25 reads and the runtime
  embeds: name, server, description, parameter names) are near duplicates, by the cosine of their
  TF-IDF vectors over the runtime's tokens;
- ``bill-dominators``: the five costliest tools, when they take more than twice their share
  (and at least a tenth) of the tool tokens.

Each is a :class:`~workbench.evaluate.diagnostics.Finding` with evidence and, where there is one,
a fix. Nothing here prints or imports UI code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer  # type: ignore[import-untyped]

from workbench.catalog.models import Catalog, Tool
from workbench.evaluate.diagnostics import DESCRIPTION_FIX, NAMES_SHOWN, Finding
from workbench.evaluate.metrics import CaseResult, TokenCounts
from workbench.search.tokenize import tokenize

#: Searchable texts at least this similar (TF-IDF cosine) are near duplicates.
CONFUSABLE_SIMILARITY = 0.85
#: At most this many pairs are reported (most similar first); the count says how many there are.
CONFUSABLE_SHOWN = 20
#: The costliest tools named; they dominate when they cost this many times their fair share
#: (``BILL_TOP / tools``) and at least ``BILL_MIN_SHARE`` of all tool tokens.
BILL_TOP = 5
BILL_DOMINANCE = 2.0
BILL_MIN_SHARE = 0.10
#: Rows of the similarity matrix computed at once (bounds memory on big catalogs).
ROWS = 512
QUERIES_SHOWN = 3


def catalog_findings(
    catalog: Catalog,
    tokens: TokenCounts,
    results: Sequence[CaseResult] | None = None,
) -> list[Finding]:
    """Every catalog finding; with ``results`` (the cases run under a setting), the unreachable
    tools too."""
    found: list[Finding] = []
    if results is not None:
        found += unreachable_tools(catalog, tokens, results)
    found += one_word_descriptions(catalog)
    found += confusable_tools(catalog)
    found += bill_dominators(catalog, tokens)
    return found


#: What to do about unreachable tools where the runtime reads the ``tool_filtering`` block.
UNREACHABLE_FIX = (
    "always_include the most needed (e.g. {tool}: {tokens:,} tokens on every request), let search "
    "reach further (a larger top_k, a lower threshold), or give their descriptions the words "
    "these queries use"
)


def unreached_by(results: Sequence[CaseResult]) -> dict[int, list[CaseResult]]:
    """Tools (catalog indices) some case expects that none of the cases expecting them was sent,
    each with those cases' results, the most needed first (ties in catalog order). Only one-tool
    expected names count (a bare name on several servers is met by any of them)."""
    needed: dict[int, list[CaseResult]] = {}
    sent: set[int] = set()
    for r in results:
        chosen = set(r.selected)
        for group in r.case.groups:
            if len(group) != 1:
                continue
            needed.setdefault(group[0], []).append(r)
            if group[0] in chosen:
                sent.add(group[0])
    missing = sorted(set(needed) - sent, key=lambda t: (-len(needed[t]), t))
    return {t: needed[t] for t in missing}


def unreachable_tools(
    catalog: Catalog,
    tokens: TokenCounts,
    results: Sequence[CaseResult],
    fix: str = UNREACHABLE_FIX,
    names: Sequence[str] | None = None,
) -> list[Finding]:
    """Tools some case expects that no case expecting them was sent (one finding, the most
    needed first). ``fix``: what to do, formatted with the most needed ``tool`` (named as
    ``names`` says, by catalog index, where the runtime's configuration names tools its own
    way; else its full name) and its ``tokens``."""
    missing = unreached_by(results)
    if not missing:
        return []
    per_tool = np.asarray(tokens.per_tool)
    rows = [
        {
            "tool": catalog.tools[t].full_name,
            "cases": len(needing),
            "queries": [r.case.query for r in needing[:QUERIES_SHOWN]],
            "tokens": int(per_tool[t]),
        }
        for t, needing in missing.items()
    ]
    head = ", ".join(f"{r['tool']} ({r['cases']})" for r in rows[:NAMES_SHOWN])
    more = f" and {len(rows) - NAMES_SHOWN} more" if len(rows) > NAMES_SHOWN else ""
    first = rows[0]
    if names is not None:
        first = {**first, "tool": names[next(iter(missing))]}
    return [
        Finding(
            "warning",
            "unreachable-tools",
            f"{len(rows)} expected tool(s) are sent for none of the cases that need them under "
            f"this setting (cases in brackets): {head}{more}",
            {"tools": rows, "count": len(rows)},
            fix=fix.format(tool=first["tool"], tokens=first["tokens"]),
        )
    ]


def one_word_descriptions(catalog: Catalog) -> list[Finding]:
    """Tools whose description is a single word (search has next to nothing to match)."""
    words = {
        t.full_name: text.strip()
        for t in catalog.tools
        if len((text := _description(t)).split()) == 1
    }
    thin = list(words)
    if not thin:
        return []
    return [
        Finding(
            "warning",
            "one-word-description",
            f"{len(thin)} tool(s) have a one-word description, so search reads little more "
            f"than their names: {_shown(thin)}",
            {"tools": thin, "descriptions": words},
            fix=DESCRIPTION_FIX,
        )
    ]


def similar_pairs(
    texts: Sequence[str], threshold: float = CONFUSABLE_SIMILARITY
) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, cosine)`` with ``i < j`` of texts at least ``threshold`` similar, most
    similar first: cosine of TF-IDF vectors over the runtime's tokens (smooth idf, l2)."""
    if len(texts) < 2:
        return []
    vectorizer = TfidfVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None)
    try:
        matrix = vectorizer.fit_transform(texts).tocsr()
    except ValueError:  # no text has a single token
        return []
    pairs: list[tuple[int, int, float]] = []
    for start in range(0, matrix.shape[0], ROWS):
        block = (matrix[start : start + ROWS] @ matrix.T).tocoo()
        rows, cols, values = block.row + start, block.col, block.data
        keep = (cols > rows) & (values >= threshold - 1e-12)
        pairs += [
            (int(i), int(j), min(1.0, float(v)))
            for i, j, v in zip(rows[keep], cols[keep], values[keep], strict=True)
        ]
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs


def confusable_tools(catalog: Catalog) -> list[Finding]:
    """Pairs of near-duplicate searchable texts: search cannot tell them apart."""
    texts = [t.search_text for t in catalog.tools]
    pairs = similar_pairs(texts)
    if not pairs:
        return []
    evidence: list[dict[str, Any]] = []
    for i, j, similarity in pairs[:CONFUSABLE_SHOWN]:
        a, b = set(tokenize(texts[i])), set(tokenize(texts[j]))
        evidence.append(
            {
                "tools": [catalog.tools[i].full_name, catalog.tools[j].full_name],
                "similarity": round(similarity, 4),
                "only_first": sorted(a - b),
                "only_second": sorted(b - a),
            }
        )
    head = "; ".join(
        f"{e['tools'][0]} ~ {e['tools'][1]} ({e['similarity']:.2f})" for e in evidence[:3]
    )
    more = f" and {len(pairs) - 3} more" if len(pairs) > 3 else ""
    return [
        Finding(
            "warning",
            "confusable-tools",
            f"{len(pairs)} pair(s) of tools have near-duplicate searchable texts (cosine >= "
            f"{CONFUSABLE_SIMILARITY:g}), so search ranks them together and the model may pick "
            f"the wrong one: {head}{more}",
            {"pairs": evidence, "count": len(pairs), "threshold": CONFUSABLE_SIMILARITY},
            fix=(
                "make each description say what sets the tool apart (the evidence lists the words "
                "only one of them has), or drop the duplicate server"
            ),
        )
    ]


def bill_dominators(catalog: Catalog, tokens: TokenCounts) -> list[Finding]:
    """The :data:`BILL_TOP` costliest tools when they cost over twice their share of the bill."""
    per_tool = np.asarray(tokens.per_tool, dtype=np.int64)
    total = int(per_tool.sum())
    if len(catalog) <= BILL_TOP or total <= 0:
        return []
    top = np.argsort(-per_tool, kind="stable")[:BILL_TOP].tolist()
    share = float(per_tool[top].sum()) / total
    fair = BILL_TOP / len(catalog)
    if share < max(BILL_DOMINANCE * fair, BILL_MIN_SHARE):
        return []
    rows = [
        {
            "tool": catalog.tools[i].full_name,
            "tokens": int(per_tool[i]),
            "share": float(per_tool[i]) / total,
        }
        for i in top
    ]
    head = ", ".join(f"{r['tool']} {r['tokens']:,} ({r['share']:.1%})" for r in rows)
    return [
        Finding(
            "info",
            "bill-dominators",
            f"{BILL_TOP} of {len(catalog)} tools take {share:.0%} of the tool tokens: {head}",
            {"tools": rows, "share": share, "tokens_tools": total},
            fix=(
                "each time one of them is sent it costs this much: shorten their schemas' "
                "descriptions, or keep them out of always_include"
            ),
        )
    ]


def _description(tool: Tool) -> str:
    """The description the tool gave (an MCP tool without one gets the runtime's stand-in)."""
    if tool.kind == "mcp":
        return str(tool.definition.get("description") or "")
    return tool.description


def _shown(names: Sequence[str]) -> str:
    head = ", ".join(names[:NAMES_SHOWN])
    return head + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


__all__ = [
    "bill_dominators",
    "catalog_findings",
    "confusable_tools",
    "one_word_descriptions",
    "similar_pairs",
    "unreachable_tools",
    "unreached_by",
]
