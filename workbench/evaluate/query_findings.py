"""Findings about a query (``holo-tune search``, the query lab, ``eval``'s misses): plain data.

HoloDeck's BM25 reads the lowercase runs of ``[a-z0-9]`` (docs/holodeck-filter.md, Scoring), so:

- ``query-unreadable``: a query with no such run (Chinese, Japanese, Cyrillic, emoji ...) scores 0
  for every tool: BM25 sends nothing above a threshold, or the first ``top_k`` catalog tools at 0;
- ``query-parameter-only``: a query whose tokens meet no tool's name, server or description, only
  parameter names (``path``, ``query``, ``url``): the ranking rests on how tools are called, not on
  what they do.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from workbench.catalog.models import Catalog
from workbench.evaluate.diagnostics import NAMES_SHOWN, Finding, Severity
from workbench.search.tokenize import tokenize

#: Unicode categories of emoji and other pictographs.
SYMBOL_CATEGORIES = ("So", "Sk", "Sm")


def scripts(text: str) -> list[str]:
    """The writing systems of ``text``'s non-ASCII letters and symbols, in order of appearance
    (``CJK``, ``HIRAGANA``, ``CYRILLIC``, ``emoji or symbols`` ...)."""
    seen: dict[str, None] = {}
    for ch in text:
        if ch.isascii():
            continue
        category = unicodedata.category(ch)
        if category in SYMBOL_CATEGORIES:
            seen["emoji or symbols"] = None
        elif category.startswith(("L", "N")):
            name = unicodedata.name(ch, "")
            seen[name.split(" ")[0] if name else "unnamed"] = None
    return list(seen)


class QueryReader:
    """What the runtime's BM25 can read of a query, against one catalog (built once)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._core: set[str] = set()
        self._params: dict[str, list[int]] = {}
        for index, tool in enumerate(catalog.tools):
            self._core.update(tokenize(" ".join([tool.name, tool.plugin, tool.description])))
            for token in set(tokenize(" ".join(tool.parameters))):
                self._params.setdefault(token, []).append(index)

    def findings(self, query: str, *, embeds: bool = False) -> list[Finding]:
        """The query's findings; ``embeds``: the runtime scores this query with embeddings too
        (semantic or hybrid with an embedding service), so only its BM25 half is blind."""
        if not query.strip():
            return []
        tokens = tokenize(query)
        if not tokens:
            return [_unreadable(query, embeds)]
        if self._core.intersection(tokens):
            return []
        matched = sorted({t for t in tokens if t in self._params})
        if not matched:
            return []
        tools = sorted({i for t in matched for i in self._params[t]})
        names = [self.catalog.tools[i].full_name for i in tools]
        shown = ", ".join(names[:NAMES_SHOWN]) + (
            f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
        )
        return [
            Finding(
                "warning",
                "query-parameter-only",
                f"the query meets tools only on parameter names ({', '.join(matched)}): no word "
                "of it is in any tool's name, server or description, so BM25 ranks tools by how "
                f"they are called, not by what they do ({shown})",
                {"query": query, "tokens": tokens, "matched": matched, "tools": names},
                fix=(
                    "say what should be done in the words the tools' descriptions use; if users "
                    "do ask this way, put those words in the descriptions"
                ),
            )
        ]

    def many(self, queries: Sequence[str], *, embeds: bool = False) -> list[Finding]:
        """The findings of several queries, in order (each names its query in its evidence)."""
        return [f for q in queries for f in self.findings(q, embeds=embeds)]


def _unreadable(query: str, embeds: bool) -> Finding:
    found = scripts(query)
    what = ", ".join(found) or "punctuation"
    severity: Severity
    if embeds:
        effect = "its BM25 scores are 0 for every tool (the semantic half still reads it)"
        severity = "info"
    else:
        effect = (
            "every tool scores 0: the runtime sends no tool above a threshold > 0, or the first "
            "top_k tools of the catalog at threshold 0"
        )
        severity = "warning"
    return Finding(
        severity,
        "query-unreadable",
        f"the runtime's BM25 reads no token of this query ({what}): it reads only runs of "
        f"a-z and 0-9; {effect}",
        {"query": query, "scripts": found, "tokens": []},
        fix=(
            "give the query's key words in ASCII (e.g. English) if users ask in them; "
            "search_method semantic alone reads it at run time (bm25 and hybrid's BM25 half "
            "do not)"
            if embeds
            else "give the query's key words in ASCII (e.g. English), or give the agent an "
            "embedding service (a vectorstore tool) and use search_method semantic, which reads "
            "the scripts its embedding model knows"
        ),
    )
