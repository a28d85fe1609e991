"""``argus``: argus-mcp's optimizer, two meta tools in place of the catalog.

Reproduces diaz3618/argus-mcp (``argus_mcp/bridge/optimizer/search.py`` and ``meta_tools.py``):
the model is given ``find_tool(query, limit=5)`` and ``call_tool(name, arguments)``, plus the
``keep_tools`` that are always listed. ``find_tool`` ranks every tool by scikit-learn TF-IDF
cosine over ``"<name> <description>"`` (``TfidfVectorizer(token_pattern=r"[a-zA-Z0-9_]+",
lowercase=True, stop_words=None)``), keeps scores > 0, best first (stable), and returns the best
``limit`` with their schemas. Without scikit-learn argus falls back to a word-overlap scorer
(``scorer="overlap"`` here): the query and the text split on ``[_\\-\\s]+`` lowercased; each query
token scores 1.0 when it is a token of the text, else 0.5 when it is inside a token, else 0.25 when
it is inside the text; the sum is divided by the number of query tokens.

Tokens sent: the two meta tools' schemas, the keep tools' definitions, and the definitions of the
tools ``find_tool`` returns (it returns their schemas; they are billed as definitions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from workbench.catalog.models import Catalog
from workbench.errors import InputError

if TYPE_CHECKING:  # scikit-learn takes about a second to import: only engines that run need it
    from sklearn.feature_extraction.text import TfidfVectorizer
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    definitions_tokens,
    exposed_names,
    full_scores,
    matches_name,
    request_tokens,
    source_description,
)
from workbench.search.strategies.registry import Engine, register
from workbench.search.types import FloatArray, IntArray

Scorer = Literal["tfidf", "overlap"]
SCORERS: tuple[Scorer, ...] = ("tfidf", "overlap")

_SPLIT = re.compile(r"[_\-\s]+")
#: The ``limit`` values ``run_grid`` covers.
GRID_LIMITS: tuple[int, ...] = tuple(range(1, 11))

FIND_TOOL: dict[str, Any] = {
    "name": "find_tool",
    "description": (
        "Search across all available tools by keyword or description. "
        "Returns the top matching tool definitions with their schemas. "
        "Use this first to discover relevant tools before calling them."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Search query — keywords matching tool names or descriptions.",
            },
            "limit": {
                "type": "integer",
                "description": "Maximum number of results to return (default: 5).",
                "default": 5,
            },
        },
        "required": ["query"],
    },
}

CALL_TOOL: dict[str, Any] = {
    "name": "call_tool",
    "description": (
        "Call any tool by its exact name with the given arguments. "
        "Use find_tool first to discover the tool name and required arguments."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The exact name of the tool to call."},
            "arguments": {
                "type": "object",
                "description": "Arguments to pass to the tool.",
                "default": {},
            },
        },
        "required": ["name"],
    },
}


@dataclass(frozen=True)
class ArgusParams:
    """argus's optimizer knobs (defaults: argus's)."""

    #: ``find_tool``'s ``limit`` (default 5).
    limit: int = 5
    #: Tools always listed next to the meta tools (full or bare names).
    keep_tools: tuple[str, ...] = field(default_factory=tuple)
    #: ``tfidf`` (scikit-learn installed) or ``overlap`` (argus's fallback without it).
    scorer: Scorer = "tfidf"

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise InputError("must be at least 1", field="limit")
        if self.scorer not in SCORERS:
            raise InputError(f"must be one of {', '.join(SCORERS)}", field="scorer")


def split_tokens(text: str) -> list[str]:
    """argus's fallback tokenizer: lowercase, split on ``_``, ``-`` and white space."""
    return [t for t in _SPLIT.split(text.lower()) if t]


def overlap_score(query_tokens: Sequence[str], doc_tokens: Sequence[str]) -> float:
    """argus's word-overlap score: 1.0 / 0.5 / 0.25 per query token, over the query's tokens."""
    if not query_tokens or not doc_tokens:
        return 0.0
    doc_set = set(doc_tokens)
    doc_text = " ".join(doc_tokens)
    hits = 0.0
    for token in query_tokens:
        if token in doc_set:
            hits += 1.0
        elif any(token in d for d in doc_tokens):
            hits += 0.5
        elif token in doc_text:
            hits += 0.25
    return hits / len(query_tokens)


#: The most queries an index keeps the ranking of (:meth:`ArgusIndex.ranking`).
KEPT_RANKINGS = 8192


class ArgusIndex:
    """argus's ``ToolIndex`` over the tools' texts: the TF-IDF fit (made on the first TF-IDF
    search), each text's words for the overlap scorer, and the rankings of the queries searched
    so far. Every engine over the same texts shares one (:func:`argus_index`): the tuners build
    an engine per setting they measure, and argus ranks the same whatever the setting (the
    index holds every tool; the keep tools and the limit only shape what is sent)."""

    def __init__(self, texts: tuple[str, ...]) -> None:
        self.texts = texts
        self.size = len(texts)
        self.doc_tokens = [split_tokens(text) for text in texts]
        self._fitted = False
        self.vectorizer: TfidfVectorizer | None = None
        self.matrix: Any = None
        #: (query, scorer) -> the tools scoring > 0, best first, and their scores.
        self._ranked = lru_cache(maxsize=KEPT_RANKINGS)(self._rank)

    def _fit(self) -> None:
        """The TF-IDF fit, as argus makes it (none when no text holds a token: argus fails to
        build, and nothing is found)."""
        self._fitted = True
        if not self.size:
            return
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(
            token_pattern=r"[a-zA-Z0-9_]+", lowercase=True, stop_words=None
        )
        try:
            self.matrix = vectorizer.fit_transform(list(self.texts))
            self.vectorizer = vectorizer
        except ValueError:
            self.vectorizer = None

    def scores(self, query: str, scorer: Scorer) -> FloatArray:
        """Every tool's score under ``scorer``."""
        if not self.size:
            return np.zeros(0, dtype=np.float64)
        if scorer == "overlap":
            tokens = split_tokens(query)
            return np.array([overlap_score(tokens, d) for d in self.doc_tokens], dtype=np.float64)
        if not self._fitted:
            self._fit()
        if self.vectorizer is None:
            return np.zeros(self.size, dtype=np.float64)
        from sklearn.metrics.pairwise import cosine_similarity

        query_vec = self.vectorizer.transform([query])
        return np.asarray(cosine_similarity(query_vec, self.matrix), dtype=np.float64).ravel()

    def ranking(self, query: str, scorer: Scorer) -> tuple[IntArray, FloatArray]:
        """Tools scoring > 0, best first, ties in catalog order, and every tool's score (0 for
        those that do not score > 0); each query scored once per scorer."""
        order, values = self._ranked(query, scorer)
        return order.copy(), full_scores(self.size, order, values)

    def _rank(self, query: str, scorer: Scorer) -> tuple[IntArray, FloatArray]:
        scores = self.scores(query, scorer)
        hits = np.flatnonzero(scores > 0.0)
        order = hits[np.argsort(-scores[hits], kind="stable")].astype(np.int64)
        return order, scores[order]


@lru_cache(maxsize=8)
def argus_index(texts: tuple[str, ...]) -> ArgusIndex:
    """The index over ``texts``, one per texts (the engines over the same catalog share it)."""
    return ArgusIndex(texts)


class ArgusStrategy:
    """argus's ``find_tool`` / ``call_tool`` optimizer over a catalog."""

    name: ClassVar[str] = "argus"

    def __init__(
        self,
        catalog: Catalog,
        bill: TokenBill,
        params: ArgusParams | None = None,
        *,
        names: Sequence[str] | None = None,
    ) -> None:
        """``names``: each tool's name as the gateway lists it (default: :func:`exposed_names`;
        argus's ``prefix`` conflict strategy names them ``<backend>_<tool>``)."""
        self._params = params or ArgusParams()
        self.size = len(catalog)
        names = list(exposed_names(catalog) if names is None else names)
        texts = tuple(
            f"{n} {source_description(t)}".strip()
            for n, t in zip(names, catalog.tools, strict=True)
        )
        self.index = argus_index(texts)
        self.keep = tuple(
            i for i, tool in enumerate(catalog.tools) if matches_name(tool, self._params.keep_tools)
        )
        self.bill = bill
        self.meta_tokens = definitions_tokens(bill, [FIND_TOOL, CALL_TOOL])

    @property
    def params(self) -> ArgusParams:
        return self._params

    def scores(self, query: str) -> FloatArray:
        """Every tool's score under the configured scorer."""
        return self.index.scores(query, self._params.scorer)

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        """Tools scoring > 0, best first, ties in catalog order, and every tool's score."""
        return self.index.ranking(query, self._params.scorer)

    def result(self, query: str, order: IntArray, scores: FloatArray, limit: int) -> StrategyResult:
        """The keep tools plus what ``find_tool`` returns at ``limit``, and the bill."""
        found = order[:limit].tolist()
        sent = list(self.keep) + [i for i in found if i not in self.keep]
        return StrategyResult(
            query=query,
            engine=self.name,
            order=order,
            scores=scores,
            sent=tuple(sent),
            meta_tokens=self.meta_tokens,
            tokens=request_tokens(self.bill, sent, self.meta_tokens),
        )

    def run(self, query: str) -> StrategyResult:
        return self.result(query, *self.ranking(query), self._params.limit)

    def grid(self) -> list[ArgusParams]:
        """The settings ``run_grid`` covers: ``limit`` 1 to 10."""
        return [replace(self._params, limit=limit) for limit in GRID_LIMITS]

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One result per ``grid()`` setting, from one ranking."""
        order, scores = self.ranking(query)
        return [self.result(query, order, scores, p.limit) for p in self.grid()]


register(
    Engine(
        name=ArgusStrategy.name,
        params=ArgusParams,
        build=lambda catalog, bill, params, _: ArgusStrategy(catalog, bill, params),
        mark=("×", "yellow"),
        shown=("limit", "scorer"),
        place=20,
    )
)
