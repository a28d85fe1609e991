"""What every strategy engine shares: the result of one query, the interface, token accounting.

A *strategy* is another runtime's tool-search design reproduced on our catalog (StackOne's hybrid
search, argus's meta tools, PizzaPi's deferred tools, Anthropic's tool search tool, a toolkit
router). Each is built once per catalog and token table; ``run(query)`` then says what that runtime
would rank, which tools the model could call afterwards, and what the request would cost.

Token accounting is the engine's own, because the designs differ in what they put in front of the
model: meta tools' schemas, search results as text, the schemas a search returns. Every bill is one
request *after* the search ran: the definitions it carries (``per_tool`` of the sent tools plus the
meta definitions) plus, where the design returns text, that text, plus the once-per-request
``func_end`` overhead of the token table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog, Tool
from workbench.search.bm25s_lib import bm25s, new_index
from workbench.search.types import FloatArray, IntArray
from workbench.tokens import text_count


class TokenBill(Protocol):
    """What the strategies need of a token table (``workbench.tokens.TokenTable``)."""

    @property
    def encoding(self) -> str: ...

    @property
    def per_tool(self) -> npt.NDArray[np.int64]: ...

    @property
    def overhead(self) -> int: ...

    def count_definitions(self, defs: Iterable[Mapping[str, Any]]) -> int: ...


@dataclass(frozen=True)
class StrategyResult:
    """One query through one strategy.

    ``order`` lists the catalog indices the engine ranks, best first, in its own tie order; it may
    be shorter than the catalog (engines that return only matches or candidates), and a tool not
    in it counts as not found. ``scores[i]`` is tool ``i``'s score (0 where unranked). ``sent`` are
    the tools the model can call after the search, in the order they were added; ``meta_tokens``
    is everything billed besides their definitions (meta tool schemas, search results as text);
    ``tokens`` is the request's total: the sent tools' definitions, ``meta_tokens`` and
    ``func_end``, except where a design never sends the found tools' schemas (``stackone`` calls
    them through ``tool_execute``: only its meta tokens and ``func_end`` are billed).
    """

    query: str
    engine: str
    order: IntArray
    scores: FloatArray
    sent: tuple[int, ...]
    meta_tokens: int
    tokens: int

    def rank_of(self, index: int) -> int | None:
        """1-based rank of catalog tool ``index`` (None when the engine does not rank it)."""
        hits = np.flatnonzero(self.order == index)
        return int(hits[0]) + 1 if hits.size else None


class Strategy(Protocol):
    """A tool-search design, built for one catalog and one token table."""

    name: ClassVar[str]

    @property
    def params(self) -> Any:
        """The frozen parameter dataclass the engine was built with."""
        ...

    def run(self, query: str) -> StrategyResult: ...

    def grid(self) -> list[Any]:
        """The settings ``run_grid`` covers: the engine's cheap knobs, build-time ones fixed."""
        ...

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One result per ``grid()`` setting (the same as ``run`` with it), in one search."""
        ...


# ------------------------------------------------------------------------------- token accounting


def definitions_tokens(bill: TokenBill, defs: Sequence[Mapping[str, Any]]) -> int:
    """Tokens the definitions add to a request that carries other tools too (no ``func_end``)."""
    if not defs:
        return 0
    return bill.count_definitions(defs) - bill.overhead


def text_tokens(bill: TokenBill, text: str) -> int:
    """Tokens of a plain text (a search result the model reads) in the table's encoding."""
    return _text_tokens(bill.encoding, text) if text else 0


@lru_cache(maxsize=1 << 16)
def _text_tokens(encoding: str, text: str) -> int:
    """The tuners bill the same search results again and again (one per setting tried); a
    one-shot command's first texts come from the disk cache of token counts (``text_count``)."""
    return text_count(text, encoding)


def request_tokens(bill: TokenBill, sent: Sequence[int], meta_tokens: int) -> int:
    """The request's bill: the sent tools' definitions, the meta tokens, ``func_end`` once."""
    schemas = int(np.asarray(bill.per_tool)[list(sent)].sum()) if sent else 0
    total = schemas + meta_tokens
    return total + bill.overhead if total > 0 else 0


# ------------------------------------------------------------------------------------- scores


def full_scores(size: int, indices: Sequence[int] | IntArray, values: FloatArray) -> FloatArray:
    """A catalog-sized score array: ``values`` at ``indices``, 0 elsewhere."""
    out = np.zeros(size, dtype=np.float64)
    if len(indices):
        out[np.asarray(indices, dtype=np.int64)] = values
    return out


# ------------------------------------------------------------------------------------- bm25s


def bm25s_index(texts: Sequence[str], **tokenize: Any) -> bm25s.BM25 | None:
    """A ``bm25s`` index of ``texts`` (``bm25s.tokenize(texts, **tokenize)``), or None when no
    text has a single token: ``bm25s`` cannot index that corpus (it fails), and a search of it
    finds nothing."""
    if not texts:
        return None
    tokens = bm25s.tokenize(list(texts), show_progress=False, **tokenize)
    if not any(tokens.ids):
        return None
    retriever = new_index()
    retriever.index(tokens, show_progress=False)
    return retriever


# ---------------------------------------------------------------------------------- tool texts


def exposed_names(catalog: Catalog) -> list[str]:
    """The name each tool is searched and listed under in runtimes that use the MCP tool name.

    That is the bare ``name`` (``list_employees``); a name that several servers share would
    collide in those runtimes' name-keyed maps, so such tools keep their full name instead.
    """
    counts: dict[str, int] = {}
    for tool in catalog.tools:
        counts[tool.name] = counts.get(tool.name, 0) + 1
    return [tool.name if counts[tool.name] == 1 else tool.full_name for tool in catalog.tools]


def source_description(tool: Tool) -> str:
    """The description the tool's source gave (not HoloDeck's stand-in for a missing one)."""
    if tool.definition:
        description = tool.definition.get("description")
        return description if isinstance(description, str) else ""
    return tool.description


def argument_texts(tool: Tool) -> tuple[list[str], list[str]]:
    """The top-level argument names and the argument descriptions of a tool's input schema."""
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, Mapping):
        return list(tool.parameters), []
    names = [str(name) for name in properties]
    descriptions = [
        spec["description"]
        for spec in properties.values()
        if isinstance(spec, Mapping) and isinstance(spec.get("description"), str)
    ]
    return names, descriptions


def matches_name(tool: Tool, names: Iterable[str]) -> bool:
    """Whether a configured name designates the tool (full ``server-tool`` name or bare name)."""
    wanted = set(names)
    return tool.full_name in wanted or tool.name in wanted


class SearchEngine(Protocol):
    """What the search-tool tuners ask of the engine standing for a runtime's search (a lab
    strategy): its ranking of a query, its result, and its meta tools' tokens."""

    meta_tokens: int

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]: ...

    def run(self, query: str) -> StrategyResult: ...
