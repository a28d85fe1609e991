"""``fastmcp``: FastMCP's tool search transforms over a proxy of the agent's MCP servers.

Reproduces ``fastmcp`` 4.1.6 (``fastmcp/server/transforms/search/{base,bm25,regex}.py``; the code
is in ``fastmcp-slim``) as FastMCP serves it from ``create_proxy`` of the agent's MCP entries plus
``add_transform(BM25SearchTransform(...))`` or ``RegexSearchTransform``:

- The proxy's tools: every MCP entry's ``tools/list`` in config order, each server's tools in its
  listing order, under the name the proxy lists: ``<server>_<tool>`` (the MCP tool name, not
  HoloDeck's rewritten one) when the config has several servers, the bare tool name with one.
- The listing becomes the ``always_visible`` tools + ``search_tools`` + ``call_tool``; the pinned
  tools are left out of what is searched (out of the BM25 index too, so they change its figures).
- A tool's document: its name, its description, then each top-level ``inputSchema`` property's
  name and description, joined by spaces.
- ``bm25``: tokens are the NFKC-normalised, casefolded text's runs of two or more Unicode letters
  or digits; Okapi BM25 with k1 1.5, b 0.75 and idf ``ln((N - df + 0.5) / (df + 0.5) + 1)``
  over the searched tools, a query token counted each time it appears; tools scoring > 0, best
  first by a stable sort (ties in listing order), at most ``max_results``.
- ``regex``: the query is a pattern for pydantic-core's Rust regex engine (FastMCP's matcher),
  made case-insensitive and searched anywhere in the document; matches in listing order, the first
  ``max_results``. A pattern longer than 1,000 characters or one the engine refuses (lookarounds,
  backreferences) finds nothing. FastMCP also stops a search after about a second of matching;
  that time limit is not reproduced.

Tokens: the two meta tools' schemas and the pinned tools' definitions, plus the search result as
text (the found tools' definitions as ``list_tools`` JSON); the found tools are called through
``call_tool``, so their schemas are never definitions. The agent's tools that are not MCP tools
stay outside the proxy: always sent, never searched.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic_core import SchemaError, SchemaValidator, core_schema

from workbench.catalog.models import Catalog, Tool
from workbench.errors import InputError
from workbench.search.hybrid import best_first
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    definitions_tokens,
    full_scores,
    request_tokens,
    text_tokens,
)
from workbench.search.strategies.registry import Engine, register
from workbench.search.types import FloatArray, IntArray

Variant = Literal["bm25", "regex"]
VARIANTS: tuple[Variant, ...] = ("bm25", "regex")
#: FastMCP's BM25 constants.
K1, B = 1.5, 0.75
#: The longest pattern the regex transform searches with.
PATTERN_MAX = 1000
#: The ``max_results`` values ``run_grid`` covers.
GRID_MAX_RESULTS: tuple[int, ...] = tuple(range(1, 11))

_TOKEN = re.compile(r"[^\W_]{2,}")

_CALL_TOOL: dict[str, Any] = {
    "name": "call_tool",
    "description": (
        "Call a tool by name with the given arguments.\n\n"
        "Use this to execute tools discovered via search_tools."
    ),
    "inputSchema": {
        "additionalProperties": False,
        "properties": {
            "name": {"description": "The name of the tool to call", "type": "string"},
            "arguments": {
                "anyOf": [{"additionalProperties": True, "type": "object"}, {"type": "null"}],
                "default": None,
                "description": "Arguments to pass to the tool",
            },
        },
        "required": ["name"],
        "type": "object",
    },
}


def _search_tool(description: str, argument: str, about: str) -> dict[str, Any]:
    return {
        "name": "search_tools",
        "description": description,
        "inputSchema": {
            "additionalProperties": False,
            "properties": {argument: {"description": about, "type": "string"}},
            "required": [argument],
            "type": "object",
        },
    }


#: The listing's meta tools per variant, as FastMCP 4.1.6 lists them (name, description, schema).
META_TOOLS: dict[Variant, tuple[dict[str, Any], dict[str, Any]]] = {
    "bm25": (
        _search_tool(
            "Search for tools using natural language.\n\nReturns matching tool definitions "
            "ranked by relevance,\nin the same format as list_tools.",
            "query",
            "Natural language query to search for tools",
        ),
        _CALL_TOOL,
    ),
    "regex": (
        _search_tool(
            "Search for tools matching a regex pattern.\n\nReturns matching tool definitions "
            "in the same format as list_tools.\nInvalid, unsupported, or overlong patterns "
            "return an empty list.",
            "pattern",
            "Case-insensitive regex pattern for tool names, descriptions, and parameters, "
            "up to 1000 characters; lookarounds and backreferences are not supported",
        ),
        _CALL_TOOL,
    ),
}


@dataclass(frozen=True)
class FastMCPParams:
    """The search transform's knobs (defaults: FastMCP's)."""

    #: ``bm25`` (``BM25SearchTransform``) or ``regex`` (``RegexSearchTransform``).
    variant: Variant = "bm25"
    #: Tools one search returns (``max_results``, default 5).
    max_results: int = 5
    #: Tools listed next to the meta tools and never searched: the proxy's names
    #: (``server_tool``) or holo-tune's full names (``server-tool``).
    always_visible: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InputError(f"must be one of {', '.join(VARIANTS)}", field="variant")
        if self.max_results < 1:
            raise InputError("must be at least 1", field="max_results")


# ------------------------------------------------------------------------------- the proxy


@dataclass(frozen=True)
class ProxiedTool:
    """One tool as the proxy lists it: its name there, its MCP definition, its catalog index
    (None for a tool the agent's runtime skips but the proxy lists)."""

    name: str
    definition: Mapping[str, Any]
    index: int | None


def proxy_name(server: str, tool: str, several: bool) -> str:
    """The name FastMCP's proxy of an MCPConfig lists: namespaced when it mounts several."""
    return f"{server}_{tool}" if several else tool


def proxy_servers(catalog: Catalog) -> list[str]:
    """The agent's MCP entries in config order (those that failed to list too: the proxy's
    config still has them, so they still count for the namespacing)."""
    named = [s.name for s in catalog.servers if s.transport != "local"]
    if named or catalog.servers:
        return named
    return list(dict.fromkeys(t.plugin for t in catalog.tools if t.kind == "mcp"))


def proxied_tools(catalog: Catalog) -> list[ProxiedTool]:
    """The proxy's tools in its listing order (a name listed twice is kept once, first)."""
    servers = proxy_servers(catalog)
    several = len(servers) > 1
    out: list[ProxiedTool] = []
    seen: set[str] = set()
    for server in servers:
        for definition, index in _listing(catalog, server):
            name = proxy_name(server, str(definition.get("name", "")), several)
            if name not in seen:
                seen.add(name)
                out.append(ProxiedTool(name, definition, index))
    return out


def _listing(catalog: Catalog, server: str) -> list[tuple[Mapping[str, Any], int | None]]:
    """A server's ``tools/list`` in its order, each with its catalog index."""
    by_name = {
        str(tool.definition.get("name", tool.name)): i
        for i, tool in enumerate(catalog.tools)
        if tool.plugin == server and tool.kind == "mcp"
    }
    listing = catalog.listings.get(server)
    if listing is None:  # a catalog built in code: its tools are the listing
        return [(_definition(catalog.tools[i]), i) for i in by_name.values()]
    return [(raw, by_name.get(str(raw.get("name", "")))) for raw in listing]


def _definition(tool: Tool) -> Mapping[str, Any]:
    if tool.definition:
        return tool.definition
    return {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}


def searchable_text(name: str, definition: Mapping[str, Any]) -> str:
    """What both transforms search: the name, the description, then each top-level
    ``inputSchema`` property's name and its description, joined by spaces."""
    parts = [name]
    description = definition.get("description")
    if isinstance(description, str) and description:
        parts.append(description)
    schema = definition.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for key, spec in properties.items():
            parts.append(str(key))
            about = spec.get("description") if isinstance(spec, Mapping) else None
            if isinstance(about, str) and about:
                parts.append(about)
    return " ".join(parts)


def listed_definition(tool: ProxiedTool) -> dict[str, Any]:
    """The tool's definition under the proxy's name (what a search result carries)."""
    return {**tool.definition, "name": tool.name}


def result_text(found: Sequence[ProxiedTool]) -> str:
    """What the model reads from ``search_tools``: the found tools as ``list_tools`` JSON."""
    defs = [listed_definition(t) for t in found]
    return json.dumps(defs, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------------------------- BM25


def tokenize(text: str) -> list[str]:
    """FastMCP's BM25 tokens: NFKC, casefold, runs of two or more Unicode letters or digits."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


@dataclass(frozen=True)
class Bm25Index:
    """Okapi BM25 over tokenised documents: per term its documents and term counts, and per
    document the length part of the denominator, ``k1 * (1 - b + b * dl / avgdl)``."""

    size: int
    terms: Mapping[str, int]
    postings: tuple[tuple[IntArray, FloatArray], ...]
    norms: FloatArray


def bm25_index(documents: Sequence[Sequence[str]]) -> Bm25Index:
    """The index of ``documents`` (each a list of tokens)."""
    size = len(documents)
    lengths = [len(doc) for doc in documents]
    average = sum(lengths) / size if size else 0.0
    counts: dict[str, dict[int, int]] = {}
    for i, doc in enumerate(documents):
        for token in doc:
            per_doc = counts.setdefault(token, {})
            per_doc[i] = per_doc.get(i, 0) + 1
    postings = tuple(
        (np.fromiter(c.keys(), np.int64, len(c)), np.fromiter(c.values(), np.float64, len(c)))
        for c in counts.values()
    )
    dl = np.asarray(lengths, dtype=np.float64)
    norms = K1 * (1 - B + B * dl / average) if average else np.zeros(size, dtype=np.float64)
    return Bm25Index(size, {t: k for k, t in enumerate(counts)}, postings, norms)


def bm25_scores(index: Bm25Index, query_tokens: Sequence[str]) -> FloatArray:
    """Every document's score, summed over the query's tokens in order (a repeated token
    counts again), in the same floating-point steps as FastMCP's loop."""
    scores = np.zeros(index.size, dtype=np.float64)
    for token in query_tokens:
        term = index.terms.get(token)
        if term is None:
            continue
        docs, tf = index.postings[term]
        df = int(docs.size)
        idf = math.log((index.size - df + 0.5) / (df + 0.5) + 1.0)
        scores[docs] += idf * (tf * (K1 + 1)) / (tf + index.norms[docs])
    return scores


def positive_best_first(scores: FloatArray) -> IntArray:
    """The documents scoring > 0, best first, ties in document order."""
    return best_first(scores, np.flatnonzero(scores > 0.0).astype(np.int64))


# ------------------------------------------------------------------------------------ regex


def regex_matches(pattern: str, texts: Sequence[str]) -> IntArray:
    """The texts the pattern matches (case-insensitive, anywhere), in order; nothing for a
    pattern too long or one pydantic-core's Rust regex engine refuses."""
    if len(pattern) > PATTERN_MAX:
        return np.zeros(0, dtype=np.int64)
    try:
        matcher = SchemaValidator(
            core_schema.str_schema(pattern=f"(?i){pattern}", regex_engine="rust-regex")
        )
    except SchemaError:
        return np.zeros(0, dtype=np.int64)
    hits = [i for i, text in enumerate(texts) if matcher.isinstance_python(text)]
    return np.asarray(hits, dtype=np.int64)


# ------------------------------------------------------------------------------------ engine


class FastMCPStrategy:
    """FastMCP's search transform over a proxy of the catalog's MCP servers."""

    name: ClassVar[str] = "fastmcp"
    #: Why its request can outweigh every tool's definition (``compare`` says it of such a row).
    over_all_why: ClassVar[str] = (
        "the found tools come back from search_tools as their list_tools JSON text (outputSchema, "
        "annotations and all), which can weigh far more than their definitions"
    )

    def __init__(
        self, catalog: Catalog, bill: TokenBill, params: FastMCPParams | None = None
    ) -> None:
        self._params = params or FastMCPParams()
        self.size = len(catalog)
        self.proxied = proxied_tools(catalog)
        wanted = set(self._params.always_visible)
        self.pinned = [
            t for t in self.proxied if t.name in wanted or _full_name(catalog, t) in wanted
        ]
        pinned = {t.name for t in self.pinned}
        #: The searched tools, in listing order (positions below index this list).
        self.searched = [t for t in self.proxied if t.name not in pinned]
        self.texts = [searchable_text(t.name, t.definition) for t in self.searched]
        self.index = bm25_index([tokenize(text) for text in self.texts])
        outside = [i for i, tool in enumerate(catalog.tools) if tool.kind != "mcp"]
        self.listed = tuple(outside + [t.index for t in self.pinned if t.index is not None])
        self.bill = bill
        #: The meta tools' schemas, and any pinned tool the catalog lacks (billed by definition).
        unlisted = [listed_definition(t) for t in self.pinned if t.index is None]
        self.meta_tokens = definitions_tokens(bill, [*META_TOOLS[self._params.variant], *unlisted])

    @property
    def params(self) -> FastMCPParams:
        return self._params

    def search(self, query: str) -> tuple[IntArray, FloatArray]:
        """What ``search_tools`` would return with no ``max_results``: positions in
        ``searched``, in its order, and their scores (1.0 for a regex match)."""
        if self._params.variant == "regex":
            hits = regex_matches(query, self.texts)
            return hits, np.ones(hits.size, dtype=np.float64)
        scores = bm25_scores(self.index, tokenize(query))
        order = positive_best_first(scores)
        return order, scores[order]

    def found_names(self, query: str) -> list[str]:
        """The names ``search_tools`` answers with, in its order."""
        order, _ = self.search(query)
        return [self.searched[i].name for i in order[: self._params.max_results]]

    def run(self, query: str) -> StrategyResult:
        return self.result(query, *self.search(query), self._params.max_results)

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        """The catalog's tools the search finds, best first, and every catalog tool's score (0
        for the rest): what the search-tool tuner asks of an engine."""
        return self._in_catalog(*self.search(query))

    def _in_catalog(self, order: IntArray, values: FloatArray) -> tuple[IntArray, FloatArray]:
        ranked = [(self.searched[p].index, float(v)) for p, v in zip(order, values, strict=True)]
        kept = [(i, v) for i, v in ranked if i is not None]
        indices = np.asarray([i for i, _ in kept], dtype=np.int64)
        return indices, full_scores(self.size, indices, np.asarray([v for _, v in kept]))

    def result(self, query: str, order: IntArray, values: FloatArray, limit: int) -> StrategyResult:
        """The search at ``max_results`` = ``limit`` and the request after it."""
        indices, scores = self._in_catalog(order, values)
        found = [self.searched[p] for p in order[:limit]]
        sent = self.listed + tuple(t.index for t in found if t.index is not None)
        meta_tokens = self.meta_tokens + text_tokens(self.bill, result_text(found))
        return StrategyResult(
            query=query,
            engine=self.name,
            order=indices,
            scores=scores,
            sent=sent,
            meta_tokens=meta_tokens,
            tokens=request_tokens(self.bill, self.listed, meta_tokens),
        )

    def grid(self) -> list[FastMCPParams]:
        """The settings ``run_grid`` covers: ``max_results`` 1 to 10."""
        return [replace(self._params, max_results=k) for k in GRID_MAX_RESULTS]

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One result per ``grid()`` setting, from one search."""
        order, values = self.search(query)
        return [self.result(query, order, values, p.max_results) for p in self.grid()]


def _full_name(catalog: Catalog, tool: ProxiedTool) -> str | None:
    return None if tool.index is None else catalog.tools[tool.index].full_name


register(
    Engine(
        name=FastMCPStrategy.name,
        params=FastMCPParams,
        build=lambda catalog, bill, params, _: FastMCPStrategy(catalog, bill, params),
        mark=("▽", "bright_green"),
        shown=("variant", "max_results"),
        place=60,
    )
)
