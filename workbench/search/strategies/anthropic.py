"""``anthropic``: Anthropic's tool search tool over deferred tools.

Reproduces the published behaviour of the Claude API's server-side tool search
(platform.claude.com, "Tool search tool"; ``tool_search_tool_bm25_20251119`` and
``tool_search_tool_regex_20251119``): tools marked ``defer_loading`` (per tool, or per MCP server
through ``mcp_toolset``'s ``default_config``/``configs``) are not sent; the model calls the search
tool and the API expands the 3-5 tools it finds into full definitions. The search covers tool
names, descriptions, argument names and argument descriptions.

- ``bm25``: the query in natural language, scored by BM25 over those texts. Anthropic does not
  publish its BM25's parameters or tokenizer; this uses ``bm25s``'s Lucene BM25 (k1 1.5, b 0.75,
  English stop words, ``\\w\\w+`` tokens). Tools scoring > 0, best first, ties in catalog order.
- ``regex``: the query is a Python regular expression (``re.search``) matched against each of
  those texts; a tool matches when any of them does; matches come in catalog order. An invalid
  pattern, or one longer than 200 characters (the documented limit), finds nothing.

Tokens: the search tool's definition, every tool not deferred, and the returned tools'
definitions. The search tool is a server tool whose system-prompt cost Anthropic does not publish;
it is billed as a small stand-in definition (name, one ``query`` argument).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np

from workbench.catalog.models import Catalog, Tool
from workbench.errors import InputError
from workbench.search.bm25s_lib import bm25s
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    argument_texts,
    bm25s_index,
    definitions_tokens,
    exposed_names,
    full_scores,
    request_tokens,
    source_description,
)
from workbench.search.strategies.registry import Engine, EngineVariant, register
from workbench.search.types import FloatArray, IntArray

Variant = Literal["bm25", "regex"]
VARIANTS: tuple[Variant, ...] = ("bm25", "regex")
#: Documented range of tools one search returns.
MIN_RESULTS, MAX_RESULTS = 3, 5
#: Documented maximum length of a regex query.
PATTERN_MAX = 200


@dataclass(frozen=True)
class AnthropicParams:
    """The tool search tool's variant, result count and ``defer_loading`` choices."""

    variant: Variant = "bm25"
    #: Tools one search returns (the documentation says 3-5).
    max_results: int = 5
    #: ``defer_loading`` for tools with no other setting (an ``mcp_toolset``'s default_config).
    default_defer: bool = True
    #: ``defer_loading`` per MCP server (overrides the default).
    server_defer: Mapping[str, bool] = field(default_factory=dict)
    #: ``defer_loading`` per tool, by full or bare name (overrides the server's).
    tool_defer: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InputError(f"must be one of {', '.join(VARIANTS)}", field="variant")
        if not MIN_RESULTS <= self.max_results <= MAX_RESULTS:
            raise InputError(f"must be {MIN_RESULTS} to {MAX_RESULTS}", field="max_results")

    def deferred(self, tool: Tool) -> bool:
        for key in (tool.full_name, tool.name):
            if key in self.tool_defer:
                return self.tool_defer[key]
        return self.server_defer.get(tool.plugin, self.default_defer)


def search_fields(name: str, tool: Tool) -> list[str]:
    """The texts the search covers: name, description, argument names and descriptions."""
    arg_names, arg_descriptions = argument_texts(tool)
    return [name, source_description(tool), *arg_names, *arg_descriptions]


def regex_matches(pattern: str, fields: Sequence[Sequence[str]]) -> list[int]:
    """Indices whose texts ``re.search`` the pattern, in order (none for an invalid pattern)."""
    if len(pattern) > PATTERN_MAX:
        return []
    try:
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return []
    return [i for i, texts in enumerate(fields) if any(compiled.search(t) for t in texts)]


def search_tool_definition(variant: Variant) -> dict[str, Any]:
    """A stand-in for the server tool's unpublished prompt: its name and a ``query`` argument."""
    return {
        "name": f"tool_search_tool_{variant}",
        "description": "",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }


class AnthropicStrategy:
    """Deferred tools and Anthropic's tool search tool over a catalog."""

    name: ClassVar[str] = "anthropic"

    def __init__(
        self, catalog: Catalog, bill: TokenBill, params: AnthropicParams | None = None
    ) -> None:
        self._params = params or AnthropicParams()
        self.size = len(catalog)
        names = exposed_names(catalog)
        self.fields = [search_fields(n, t) for n, t in zip(names, catalog.tools, strict=True)]
        self.deferred = np.array([self._params.deferred(t) for t in catalog.tools], dtype=np.bool_)
        self.always = tuple(int(i) for i in np.flatnonzero(~self.deferred))
        #: The BM25 index holds the deferred tools only (what the search tool searches).
        self.indexed = np.flatnonzero(self.deferred).astype(np.int64)
        self.retriever: bm25s.BM25 | None = None
        if self._params.variant == "bm25":
            self.retriever = bm25s_index([" ".join(self.fields[i]) for i in self.indexed.tolist()])
        self.bill = bill
        self.meta_tokens = definitions_tokens(bill, [search_tool_definition(self._params.variant)])

    @property
    def params(self) -> AnthropicParams:
        return self._params

    def bm25_scores(self, query: str) -> FloatArray:
        """BM25 of every tool over the index of deferred tools (0 for tools not deferred)."""
        out = np.zeros(self.size, dtype=np.float64)
        if self.retriever is None:
            return out
        words = bm25s.tokenize([query], return_ids=False, show_progress=False)[0]
        known = [w for w in words if w in self.retriever.vocab_dict]
        if known:
            out[self.indexed] = np.asarray(self.retriever.get_scores(known), dtype=np.float64)
        return out

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        """The deferred tools the search finds, best first, and every tool's score."""
        if self._params.variant == "regex":
            hits = [i for i in regex_matches(query, self.fields) if self.deferred[i]]
            order = np.array(hits, dtype=np.int64)
            return order, full_scores(self.size, order, np.ones(order.size))
        scores = self.bm25_scores(query)
        hits_arr = np.flatnonzero(scores > 0)
        order = hits_arr[np.argsort(-scores[hits_arr], kind="stable")].astype(np.int64)
        return order, scores

    def result(self, query: str, order: IntArray, scores: FloatArray, limit: int) -> StrategyResult:
        """The tools not deferred plus the first ``limit`` found, and the bill."""
        sent = self.always + tuple(order[:limit].tolist())
        return StrategyResult(
            query=query,
            engine=self.name,
            order=order,
            scores=scores,
            sent=sent,
            meta_tokens=self.meta_tokens,
            tokens=request_tokens(self.bill, sent, self.meta_tokens),
        )

    def run(self, query: str) -> StrategyResult:
        return self.result(query, *self.ranking(query), self._params.max_results)

    def grid(self) -> list[AnthropicParams]:
        """The settings ``run_grid`` covers: 3, 4 and 5 results (the variant is fixed at build)."""
        return [replace(self._params, max_results=k) for k in range(MIN_RESULTS, MAX_RESULTS + 1)]

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One result per ``grid()`` setting, from one search."""
        order, scores = self.ranking(query)
        return [self.result(query, order, scores, p.max_results) for p in self.grid()]


register(
    Engine(
        name=AnthropicStrategy.name,
        params=AnthropicParams,
        build=lambda catalog, bill, params, _: AnthropicStrategy(catalog, bill, params),
        mark=("■", "bright_blue"),
        shown=("variant", "max_results"),
        place=40,
        # compare measures the regex tool too, a series of its own on the plot
        variants=(EngineVariant("regex", {"variant": "regex"}, ("□", "blue")),),
        # the search call is the model's (eval --llm)
        model_query=True,
    )
)
