"""``stackone``: StackOne AI SDK's local tool search, a BM25 + TF-IDF hybrid.

Reproduces ``ToolIndex`` of the Python SDK (StackOneHQ/stackone-ai-python,
``stackone_ai/local_search.py`` and ``stackone_ai/utils/tfidf_index.py``):

- each tool gets two texts built from its name and description: for BM25 ``name, description,
  category, the name's parts, its action words`` and for TF-IDF ``name`` three times (a boost),
  then ``category actions``, the description and the parts (category = the name's first
  ``_``-part; actions = parts among create/update/delete/get/list/search);
- BM25 is the ``bm25s`` package at its defaults (Lucene BM25, k1 1.5, b 0.75, float32), tokenised
  by ``bm25s.tokenize(..., stemmer=None)`` (English stop words removed, ``\\w\\w+`` tokens), and its
  50 best tools are fetched as the SDK's ``retrieve`` fetches them, exactly equal scores in
  catalog order (``retrieve``'s own tie order varies with the CPU: see ``BM25Side.retrieve``);
- TF-IDF is the SDK's own: lowercase, ``[^a-z0-9_\\s]`` to spaces, 46 stop words out, term
  frequency ``count / tokens``, smoothed idf ``ln((n + 1) / (df + 1)) + 1``, cosine, scores > 0,
  best 50 (stable order);
- fusion ``alpha * bm25 + (1 - alpha) * tfidf`` over the union of both candidate lists (a tool
  missing from one list scores 0 there), BM25 normalised by ``1 / (1 + exp(-s / 10))`` (Python
  SDK, in float32 as numpy computes it there) or clamped to [0, 1] (TypeScript SDK); stable sort,
  ``min_score`` filter, ``limit`` results.

What the model sees: the ``tool_search`` and ``tool_execute`` meta tools, then the search result
as JSON text (name, description, score of each hit). Found tools are called through
``tool_execute``; their schemas are never sent, so they are billed as that text.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog
from workbench.errors import InputError
from workbench.search.bm25s_lib import bm25s
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    bm25s_index,
    definitions_tokens,
    exposed_names,
    full_scores,
    request_tokens,
    source_description,
    text_tokens,
)
from workbench.search.strategies.registry import Engine, register
from workbench.search.types import FloatArray, IntArray

BM25Norm = Literal["sigmoid", "clamp"]
BM25_NORMS: tuple[BM25Norm, ...] = ("sigmoid", "clamp")

#: The SDK's action words, picked out of a tool name's ``_``-parts.
ACTION_WORDS = ("create", "update", "delete", "get", "list", "search")

#: The SDK TF-IDF index's stop words (``stackone_ai/utils/tfidf_index.py``).
_STOPWORD_TEXT = (
    "a an the and or but if then else for of in on to from by with as at is are was were be "
    "been it this that these those not no can could should would may might do does did have "
    "has had you your"
)
TFIDF_STOPWORDS = frozenset(_STOPWORD_TEXT.split(" "))
_NON_WORD = re.compile(r"[^a-z0-9_\s]")


@dataclass(frozen=True)
class StackOneParams:
    """StackOne's search knobs (defaults: the SDK's)."""

    #: Weight of BM25 in the fusion (``DEFAULT_HYBRID_ALPHA``), 0 to 1 (the SDK clamps others).
    alpha: float = 0.2
    #: ``sigmoid``: the Python SDK's ``1 / (1 + exp(-s / 10))``; ``clamp``: the TS SDK's [0, 1].
    bm25_norm: BM25Norm = "sigmoid"
    #: Results the search returns (``tool_search``'s ``limit``, default 5).
    limit: int = 5
    #: Results scoring below this are dropped (``minScore``, default 0.0).
    min_score: float = 0.0
    #: Candidates fetched from each side before fusion (``max(50, limit)`` in the SDK).
    fetch: int = 50

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:  # NaN fails too
            raise InputError(
                f"must be between 0 and 1, got {self.alpha} (the SDK would clamp it)", field="alpha"
            )
        if self.bm25_norm not in BM25_NORMS:
            raise InputError(f"must be one of {', '.join(BM25_NORMS)}", field="bm25_norm")
        if self.limit < 1:
            raise InputError("must be at least 1", field="limit")
        if self.fetch < 1:
            raise InputError("must be at least 1", field="fetch")


# ------------------------------------------------------------------------------------ texts


def index_texts(name: str, description: str) -> tuple[str, str]:
    """The SDK's (BM25 text, TF-IDF text) of one tool."""
    parts = name.split("_")
    category = parts[0] if parts else ""
    actions = [p for p in parts if p in ACTION_WORDS]
    tfidf = " ".join(
        [f"{name} {name} {name}", f"{category} {' '.join(actions)}", description, " ".join(parts)]
    )
    bm25 = " ".join([name, description, category, " ".join(parts), " ".join(actions)])
    return bm25, tfidf


def tfidf_tokenize(text: str) -> list[str]:
    """The SDK TF-IDF tokenizer: lowercase, punctuation to spaces, stop words out."""
    cleaned = _NON_WORD.sub(" ", text.lower())
    return [t for t in cleaned.split() if t and t not in TFIDF_STOPWORDS]


# ------------------------------------------------------------------------------------ tf-idf


class TfidfIndex:
    """The SDK's TF-IDF cosine index, vectorised over tools with the SDK's float operations.

    A document's cosine numerator is a sum over the smaller of (query vector, document vector),
    in that vector's insertion order. For documents with at least as many terms as the query, the
    query's order is kept by adding one query term at a time over all documents (adding 0.0 to a
    document without the term is exact); the few shorter documents are summed in their own order.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        docs = [tfidf_tokenize(text) for text in texts]
        self.vocab: dict[str, int] = {}
        for tokens in docs:
            for token in tokens:
                self.vocab.setdefault(token, len(self.vocab))
        df = [0] * len(self.vocab)
        for tokens in docs:
            for term in {self.vocab[t] for t in tokens}:
                df[term] += 1
        n = len(docs)
        self.idf = [math.log((n + 1) / (d + 1)) + 1 for d in df]
        self.vectors: list[dict[int, float]] = [self._weigh(tokens) for tokens in docs]
        self.norms = np.array([_norm(vec) for vec in self.vectors], dtype=np.float64)
        self.terms = np.array([len(vec) for vec in self.vectors], dtype=np.int64)
        self.postings = _postings(self.vectors, len(self.vocab))

    def _weigh(self, tokens: list[str]) -> dict[int, float]:
        counts: dict[int, int] = {}
        for token in tokens:
            term = self.vocab.get(token)
            if term is not None:
                counts[term] = counts.get(term, 0) + 1
        size = len(tokens)
        vec: dict[int, float] = {}
        for term, freq in counts.items():
            weight = (freq / size) * self.idf[term] if size else 0.0
            if weight > 0:
                vec[term] = weight
        return vec

    def scores(self, query: str) -> FloatArray:
        """Cosine of every tool with the query (0 where the SDK finds no positive similarity)."""
        out = np.zeros(len(self.vectors), dtype=np.float64)
        tokens = tfidf_tokenize(query)
        if not tokens or not self.vocab:
            return out
        qvec = self._weigh(tokens)
        if not qvec:
            return out
        q_norm = _norm(qvec)
        dot = np.zeros(len(self.vectors), dtype=np.float64)
        for term, weight in qvec.items():
            docs, weights = self.postings[term]
            dot[docs] += weight * weights
        for doc in np.flatnonzero(self.terms < len(qvec)):
            dot[doc] = _sparse_dot(self.vectors[doc], qvec)
        sim = dot / (q_norm * self.norms)
        return np.where(sim > 0, np.minimum(sim, 1.0), 0.0)

    def search(self, query: str, k: int) -> IntArray:
        """The SDK's ``search``: tools with similarity > 0, best first (stable), at most ``k``."""
        scores = self.scores(query)
        hits = np.flatnonzero(scores > 0)
        return hits[np.argsort(-scores[hits], kind="stable")][:k].astype(np.int64)


def _norm(vec: dict[int, float]) -> float:
    total = 0.0
    for weight in vec.values():
        total += weight * weight
    return math.sqrt(total) if total > 0 else 1.0


def _sparse_dot(doc: dict[int, float], query: dict[int, float]) -> float:
    """The SDK's dot product when the document vector is the smaller one: its order."""
    total = 0.0
    for term, weight in doc.items():
        other = query.get(term)
        if other is not None:
            total += weight * other
    return total


def _postings(vectors: list[dict[int, float]], size: int) -> list[tuple[IntArray, FloatArray]]:
    docs: list[list[int]] = [[] for _ in range(size)]
    weights: list[list[float]] = [[] for _ in range(size)]
    for doc, vec in enumerate(vectors):
        for term, weight in vec.items():
            docs[term].append(doc)
            weights[term].append(weight)
    return [
        (np.array(d, dtype=np.int64), np.array(w, dtype=np.float64))
        for d, w in zip(docs, weights, strict=True)
    ]


# -------------------------------------------------------------------------------------- bm25


def squash(scores: npt.ArrayLike) -> FloatArray:
    """The Python SDK's BM25 normalisation ``1 / (1 + exp(-s / 10))``, in float32 like numpy
    computes it on the float32 scores ``bm25s`` returns, clamped to [0, 1]."""
    s = np.asarray(scores, dtype=np.float32)
    squashed = (1 / (1 + np.exp(-s / 10))).astype(np.float64)
    return np.clip(squashed, 0.0, 1.0)


def clamp(scores: npt.ArrayLike) -> FloatArray:
    """The TypeScript SDK's BM25 normalisation: clamp the raw score to [0, 1]."""
    return np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)


NORMALISERS = {"sigmoid": squash, "clamp": clamp}


def fuse(alpha: float, bm25: FloatArray, tfidf: FloatArray) -> FloatArray:
    """``alpha * bm25 + (1 - alpha) * tfidf``, elementwise with the SDK's float operations."""
    return alpha * bm25 + (1 - alpha) * tfidf


class BM25Side:
    """The ``bm25s`` retriever as the SDK builds and queries it."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        self.retriever = bm25s_index(texts, stemmer=None)

    def retrieve(self, query: str, k: int) -> tuple[IntArray, Any]:
        """The ``k`` best tools and their raw float32 scores, best first (none when the
        catalog's texts have no BM25 token at all: there the SDK fails to build its index).

        The scores are ``bm25s``'s own; the order among exactly equal scores is catalog order.
        ``retrieve`` leaves that order to numpy's ``argpartition``/``argsort``, whose tie order
        depends on the CPU's SIMD support, so the SDK itself ranks ties differently from one
        machine to another; a fixed order keeps holo-tune's figures the same on every machine.
        """
        if self.retriever is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        words = bm25s.tokenize([query], stemmer=None, return_ids=False, show_progress=False)[0]
        known = [w for w in words if w in self.retriever.vocab_dict]
        if known:
            scores = np.asarray(self.retriever.get_scores(known), dtype=np.float32)
        else:
            scores = np.zeros(self.size, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[: min(k, self.size)].astype(np.int64)
        return order, scores[order]


# ------------------------------------------------------------------------------------ engine

TOOL_EXECUTE: dict[str, Any] = {
    "name": "tool_execute",
    "description": (
        "Executes a tool by name with the provided parameters. "
        "Use this after discovering tools with tool_search."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "toolName": {"type": "string", "description": "Name of the tool to execute"},
            "params": {
                "type": "object",
                "description": "Parameters to pass to the tool",
                "additionalProperties": True,
            },
        },
    },
}


def tool_search_definition(alpha: float) -> dict[str, Any]:
    """The SDK's ``tool_search`` meta tool (its description names the alpha in use)."""
    return {
        "name": "tool_search",
        "description": (
            "Searches for relevant tools based on a natural language query using hybrid BM25 + "
            f"TF-IDF search (alpha={alpha}). This tool should be called first to discover "
            "available tools before executing them."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": (
                        "Natural language query describing what tools you need "
                        '(e.g., "tools for managing employees", "create time off request")'
                    ),
                },
                "limit": {
                    "type": "number",
                    "description": "Maximum number of tools to return (default: 5)",
                    "default": 5,
                },
                "minScore": {
                    "type": "number",
                    "description": "Minimum relevance score (0-1) to filter results (default: 0.0)",
                    "default": 0.0,
                },
            },
        },
    }


@dataclass(frozen=True)
class Candidates:
    """One query's candidates before fusion: BM25's fetched tools (in ``bm25s``'s order, with
    raw float32 scores) then the TF-IDF-only ones, and each candidate's TF-IDF part."""

    docs: IntArray
    bm25_raw: Any
    tfidf: FloatArray


#: The grid ``run_grid`` covers (alpha x normalisation x limit), all from one retrieval.
GRID_ALPHAS: tuple[float, ...] = tuple(i / 10 for i in range(11))
GRID_LIMITS: tuple[int, ...] = (1, 3, 5, 10)


class StackOneStrategy:
    """StackOne's hybrid local search over a catalog."""

    name: ClassVar[str] = "stackone"

    def __init__(
        self, catalog: Catalog, bill: TokenBill, params: StackOneParams | None = None
    ) -> None:
        self._params = params or StackOneParams()
        self.size = len(catalog)
        self.names = exposed_names(catalog)
        self.descriptions = [source_description(tool) for tool in catalog.tools]
        texts = [index_texts(n, d) for n, d in zip(self.names, self.descriptions, strict=True)]
        self.bm25 = BM25Side([bm25 for bm25, _ in texts])
        self.tfidf = TfidfIndex([tfidf for _, tfidf in texts])
        self.bill = bill
        self._meta: dict[float, int] = {}
        self._grid = [
            replace(self._params, alpha=alpha, bm25_norm=norm, limit=limit)
            for norm in BM25_NORMS
            for alpha in GRID_ALPHAS
            for limit in GRID_LIMITS
        ]

    @property
    def params(self) -> StackOneParams:
        return self._params

    def meta_schema_tokens(self, alpha: float) -> int:
        """Tokens of ``tool_search`` (whose description names ``alpha``) and ``tool_execute``."""
        if alpha not in self._meta:
            defs = [tool_search_definition(alpha), TOOL_EXECUTE]
            self._meta[alpha] = definitions_tokens(self.bill, defs)
        return self._meta[alpha]

    def gather(self, query: str, fetch: int) -> Candidates:
        """Both sides' candidates, ``fetch`` from each (what does not depend on alpha)."""
        bm25_docs, bm25_raw = self.bm25.retrieve(query, fetch)
        tfidf_scores = self.tfidf.scores(query)
        tfidf_docs = self.tfidf.search(query, min(fetch, self.size))
        in_bm25 = set(bm25_docs.tolist())
        extra = np.array([d for d in tfidf_docs.tolist() if d not in in_bm25], dtype=np.int64)
        docs = np.concatenate([bm25_docs, extra])
        listed = np.zeros(self.size, dtype=np.bool_)
        listed[tfidf_docs] = True
        return Candidates(docs, bm25_raw, np.where(listed[docs], tfidf_scores[docs], 0.0))

    @staticmethod
    def rank(found: Candidates, alpha: float, norm: BM25Norm) -> tuple[IntArray, FloatArray]:
        """The fused candidates, best first (stable), with their hybrid scores."""
        bm25_part = np.zeros(found.docs.size, dtype=np.float64)
        bm25_part[: len(found.bm25_raw)] = NORMALISERS[norm](found.bm25_raw)
        hybrid = fuse(alpha, bm25_part, found.tfidf)
        order = np.argsort(-hybrid, kind="stable")
        return found.docs[order], hybrid[order]

    def candidates(self, query: str) -> tuple[IntArray, FloatArray]:
        """Every fused candidate, best first (stable), with its hybrid score."""
        p = self._params
        found = self.gather(query, max(p.fetch, p.limit))
        return self.rank(found, p.alpha, p.bm25_norm)

    def result(
        self, query: str, order: IntArray, scores: FloatArray, params: StackOneParams
    ) -> StrategyResult:
        """What ``tool_search`` returns under ``params`` and what the request costs."""
        keep = scores >= params.min_score
        found = order[keep][: params.limit]
        found_scores = scores[keep][: params.limit]
        result_text = json.dumps(
            {
                "tools": [
                    {"name": self.names[i], "description": self.descriptions[i], "score": float(s)}
                    for i, s in zip(found.tolist(), found_scores.tolist(), strict=True)
                ]
            }
        )
        meta = self.meta_schema_tokens(params.alpha) + text_tokens(self.bill, result_text)
        return StrategyResult(
            query=query,
            engine=self.name,
            order=order,
            scores=full_scores(self.size, order, scores),
            sent=tuple(found.tolist()),
            meta_tokens=meta,
            tokens=request_tokens(self.bill, (), meta),
        )

    def run(self, query: str) -> StrategyResult:
        order, scores = self.candidates(query)
        return self.result(query, order, scores, self._params)

    def grid(self) -> list[StackOneParams]:
        """The settings ``run_grid`` covers: alpha 0..1 by 0.1, both normalisations, limits."""
        return list(self._grid)

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One result per ``grid()`` setting, from one retrieval."""
        found = self.gather(query, max(self._params.fetch, *GRID_LIMITS))
        out: list[StrategyResult] = []
        ranked: dict[tuple[float, str], tuple[IntArray, FloatArray]] = {}
        for params in self._grid:
            key = (params.alpha, params.bm25_norm)
            if key not in ranked:
                ranked[key] = self.rank(found, *key)
            out.append(self.result(query, *ranked[key], params))
        return out


register(
    Engine(
        name=StackOneStrategy.name,
        params=StackOneParams,
        build=lambda catalog, bill, params, _: StackOneStrategy(catalog, bill, params),
        mark=("+", "green"),
        shown=("alpha", "bm25_norm", "limit"),
        place=10,
    )
)
