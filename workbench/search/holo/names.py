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
from collections.abc import Sequence

import numpy as np

from workbench.catalog.models import Catalog
from workbench.search.holo.text import name_words, stem
from workbench.search.selection import match_always_include
from workbench.search.types import FloatArray

SELECT = "select:"
#: What a name is written with in a query: letters, digits and the name separators.
_IDENT = re.compile(r"[\w.\-/]+", re.UNICODE)


class NameIndex:
    """Each tool's name as words and as written (lower case), built once per catalog, with the
    tools of each word (a query's words reach only the tools that have them: a search of a
    1,000-tool catalog never walks every name)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.words = [tuple(_stems(t.name)) for t in catalog.tools]
        self.written = [t.name.lower() for t in catalog.tools]
        self.full = [t.full_name.lower() for t in catalog.tools]
        postings: dict[str, list[int]] = {}
        for i, name in enumerate(self.words):
            for word in set(name):
                postings.setdefault(word, []).append(i)
        self._postings = {w: np.asarray(ids, dtype=np.int64) for w, ids in postings.items()}
        self._distinct = np.asarray([len(set(n)) for n in self.words], dtype=np.float64)
        self._as_written: dict[str, list[int]] = {}
        self._as_full: dict[str, list[int]] = {}
        for i, (written, full) in enumerate(zip(self.written, self.full, strict=True)):
            self._as_written.setdefault(written, []).append(i)
            self._as_full.setdefault(full, []).append(i)
        self._identifier = [_identifier(w) for w in self.written]

    def _matched(self, said: set[str]) -> FloatArray:
        """Per tool: how many of its name's distinct words are in ``said``."""
        counts = np.zeros(len(self.words), dtype=np.float64)
        for word in said:
            ids = self._postings.get(word)
            if ids is not None:
                counts[ids] += 1.0
        return counts

    def _phrases(self, said: list[str], counts: FloatArray, shortest: int) -> list[int]:
        """The tools of ``shortest`` name words or more whose words are all in ``said`` in
        order (only a tool with every word in the query can be one)."""
        complete = np.flatnonzero((counts > 0.0) & (counts == self._distinct))
        return [
            int(i)
            for i in complete
            if len(self.words[i]) >= shortest and _phrase(said, self.words[i])
        ]

    def scores(self, query: str) -> FloatArray:
        """Per tool: the share of its name's words in the query, +1 when the query has them all
        in order or writes the name itself."""
        said = _stems(query)
        said_set = set(said)
        out = np.zeros(len(self.words), dtype=np.float64)
        if not said_set:
            return out
        counts = self._matched(said_set)
        hit = np.flatnonzero(counts)
        out[hit] = counts[hit] / self._distinct[hit]
        whole = set(self._phrases(said, counts, 1))
        for ident in {m.lower() for m in _IDENT.findall(query)}:
            whole.update(self._as_written.get(ident, ()))
            whole.update(self._as_full.get(ident, ()))
        for i in whole:
            if counts[i] > 0.0:
                out[i] += 1.0
        return out

    def named(self, query: str) -> list[int]:
        """The tools the query names outright, in catalog order: written as the name is (or as
        the full name), or, for a name of two words or more, its words in order as a phrase."""
        said = _stems(query)
        found: set[int] = set()
        for ident in {m.lower() for m in _IDENT.findall(query)}:
            found.update(self._as_full.get(ident, ()))
            found.update(i for i in self._as_written.get(ident, ()) if self._identifier[i])
        if said:
            found.update(self._phrases(said, self._matched(set(said)), 2))
        return sorted(found)


def _stems(text: str) -> list[str]:
    """A text's name words with a plural's ending off (``symbols`` meets ``symbol``)."""
    return [stem(word) for word in name_words(text)]


def _identifier(name: str) -> bool:
    """A name written as an identifier (``find_symbol``, ``getUser``, ``web-search``), not a plain
    word such as ``search``, which a query uses as a word."""
    return len(name_words(name)) >= 2


def _phrase(said: Sequence[str], name: Sequence[str]) -> bool:
    """Whether ``name``'s words appear in ``said`` consecutively and in order."""
    n = len(name)
    if n == 0 or n > len(said):
        return False
    first = name[0]
    return any(
        said[i] == first and tuple(said[i : i + n]) == tuple(name) for i in range(len(said) - n + 1)
    )


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
