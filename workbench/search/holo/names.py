"""A query that names a tool: the name signal, the tools named outright, and ``select:``.

Users of the runtimes report exact names not found ("find symbol" misses ``find_symbol``). Here a
tool's name counts three ways:

- :func:`name_scores`, a signal fused with the others: the share of the name's words the query
  has, plus 1 when it has them all in order (or the name itself, as one word);
- :func:`named`, the tools a query names outright (their name as written, or a name of two words
  or more as a phrase): with ``name_first`` they are returned first;
- :func:`selected`: ``select:NAME[,NAME...]`` returns exactly those tools (full names or bare
  names), in that order, and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

from workbench.catalog.models import Catalog
from workbench.search.holo.text import name_words
from workbench.search.selection import match_always_include
from workbench.search.types import FloatArray

SELECT = "select:"
#: What a name is written with in a query: letters, digits and the name separators.
_IDENT = re.compile(r"[\w.\-/]+", re.UNICODE)


class NameIndex:
    """Each tool's name as words and as written (lower case), built once per catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.words = [tuple(name_words(t.name)) for t in catalog.tools]
        self.written = [t.name.lower() for t in catalog.tools]
        self.full = [t.full_name.lower() for t in catalog.tools]

    def scores(self, query: str) -> FloatArray:
        """Per tool: the share of its name's words in the query, +1 when the query has them all
        in order or writes the name itself."""
        said = name_words(query)
        said_set = set(said)
        idents = {m.lower() for m in _IDENT.findall(query)}
        out = np.zeros(len(self.words), dtype=np.float64)
        if not said_set:
            return out
        starts = _starts(said)
        for i, name in enumerate(self.words):
            if not name:
                continue
            share = sum(1 for w in set(name) if w in said_set) / len(set(name))
            if share == 0.0:
                continue
            whole = (
                self.written[i] in idents or self.full[i] in idents or _phrase(said, name, starts)
            )
            out[i] = share + (1.0 if whole else 0.0)
        return out

    def named(self, query: str) -> list[int]:
        """The tools the query names outright, in catalog order: written as the name is (or as
        the full name), or, for a name of two words or more, its words in order as a phrase."""
        said = name_words(query)
        idents = {m.lower() for m in _IDENT.findall(query)}
        starts = _starts(said)
        found: list[int] = []
        for i, name in enumerate(self.words):
            written = self.written[i]
            as_written = self.full[i] in idents or (written in idents and _identifier(written))
            if as_written or (len(name) >= 2 and _phrase(said, name, starts)):
                found.append(i)
        return found


def _identifier(name: str) -> bool:
    """A name written as an identifier (``find_symbol``, ``getUser``, ``web-search``), not a plain
    word such as ``search``, which a query uses as a word."""
    return len(name_words(name)) >= 2


def _starts(said: Sequence[str]) -> dict[str, list[int]]:
    """Where each word of ``said`` stands (to find a phrase without scanning every word)."""
    at: dict[str, list[int]] = {}
    for i, word in enumerate(said):
        at.setdefault(word, []).append(i)
    return at


def _phrase(
    said: Sequence[str], name: Sequence[str], starts: Mapping[str, Sequence[int]] | None = None
) -> bool:
    """Whether ``name``'s words appear in ``said`` consecutively and in order (``starts``:
    :func:`_starts` of ``said``, computed once per query)."""
    n = len(name)
    if n == 0 or n > len(said):
        return False
    at = starts if starts is not None else _starts(said)
    wanted = tuple(name)
    return any(tuple(said[i : i + n]) == wanted for i in at.get(name[0], ()))


def selected(query: str, catalog: Catalog) -> list[int] | None:
    """``select:A,B``: the catalog indices of the tools named (full or bare names, as pins are
    matched), in the order written, each once; None when the query is not a ``select:``."""
    text = query.strip()
    if not text.lower().startswith(SELECT):
        return None
    picked: list[int] = []
    for entry in text[len(SELECT) :].split(","):
        name = entry.strip()
        if not name:
            continue
        index = match_always_include(catalog, name)
        if index is not None and index not in picked:
            picked.append(index)
    return picked
