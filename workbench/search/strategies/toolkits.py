"""``toolkits``: a three-layer router that sends whole toolkits.

The design as issue 6 describes it (no public implementation is pinned): base tools are always
sent; the other tools belong to toolkits (by default one per MCP server); a toolkit is activated
when one of its keywords is a word of the query (keywords come from configuration; none by
default) or when the cosine between the query's embedding and the toolkit description's is at
least ``threshold`` (0.40); every tool of an active toolkit is sent. Without an embedder only
keywords activate toolkits.

A default toolkit's description is its server's name followed by its tools' names and
descriptions (an embedding model reads the beginning: MiniLM truncates at 256 word pieces).

The ranking lists base tools first, then the toolkits' tools by toolkit: active toolkits before
inactive ones, each group by cosine (best first, ties in catalog order), tools in catalog order.
An inactive toolkit is ranked only when its cosine is above 0: a toolkit the router found nothing
for (no keyword, no embedder, no likeness) is not ranked, so top1 and mrr never count a tool it
could not send (without an embedder the ranking is what is sent). A tool's score is its
toolkit's cosine (1.0 for base tools). No meta tool is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog
from workbench.errors import InputError
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    matches_name,
    request_tokens,
    source_description,
)
from workbench.search.strategies.registry import Engine, register
from workbench.search.types import Embedder, FloatArray, IntArray

#: The thresholds ``run_grid`` covers (with an embedder).
GRID_THRESHOLDS: tuple[float, ...] = tuple(round(0.10 + 0.05 * i, 2) for i in range(11))


@dataclass(frozen=True)
class Toolkit:
    """A named group of tools (full names), its description and its activation keywords."""

    name: str
    tools: tuple[str, ...]
    description: str
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolkitsParams:
    """The router's configuration."""

    #: Cosine between query and toolkit description at or above which the toolkit is active.
    threshold: float = 0.40
    #: Tools always sent (full or bare names).
    base_tools: tuple[str, ...] = ()
    #: Explicit toolkits; None means one per MCP server (base tools left out).
    toolkits: tuple[Toolkit, ...] | None = None
    #: Keywords per default toolkit (server name -> keywords).
    keywords: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not -1.0 <= self.threshold <= 1.0:
            raise InputError("must be between -1 and 1", field="threshold")


def default_toolkits(
    catalog: Catalog, base: set[int], keywords: Mapping[str, tuple[str, ...]]
) -> list[Toolkit]:
    """One toolkit per server, described by the server's name and its tools."""
    by_server: dict[str, list[int]] = {}
    for i, tool in enumerate(catalog.tools):
        if i not in base:
            by_server.setdefault(tool.plugin, []).append(i)
    kits = []
    for server, members in by_server.items():
        parts = [server] + [
            f"{catalog.tools[i].name}: {source_description(catalog.tools[i])}" for i in members
        ]
        kits.append(
            Toolkit(
                name=server,
                tools=tuple(catalog.tools[i].full_name for i in members),
                description=". ".join(parts),
                keywords=tuple(keywords.get(server, ())),
            )
        )
    return kits


def keyword_hit(query: str, words: Sequence[str]) -> bool:
    """Whether any keyword occurs in the query as a whole word (case-insensitive)."""
    return any(
        re.search(rf"(?<!\w){re.escape(w.lower())}(?!\w)", query.lower()) for w in words if w
    )


def cosines(matrix: FloatArray, vector: FloatArray) -> FloatArray:
    """Cosine of each row with the vector (0 where a norm is 0)."""
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    dots = matrix @ vector
    out: FloatArray = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return out


class ToolkitsStrategy:
    """Base tools plus whole toolkits activated by keyword or embedding similarity."""

    name: ClassVar[str] = "toolkits"

    def __init__(
        self,
        catalog: Catalog,
        bill: TokenBill,
        params: ToolkitsParams | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._params = params or ToolkitsParams()
        self.size = len(catalog)
        self.base = tuple(
            i for i, t in enumerate(catalog.tools) if matches_name(t, self._params.base_tools)
        )
        kits = self._params.toolkits
        if kits is None:
            kits = tuple(default_toolkits(catalog, set(self.base), self._params.keywords))
        self.toolkits = list(kits)
        self.members: list[IntArray] = [
            np.array(
                [i for i, t in enumerate(catalog.tools) if matches_name(t, kit.tools)],
                dtype=np.int64,
            )
            for kit in self.toolkits
        ]
        self.embedder = embedder
        self.kit_vectors: FloatArray | None = None
        if embedder is not None and self.toolkits:
            self.kit_vectors = np.asarray(
                embedder.embed([kit.description for kit in self.toolkits]), dtype=np.float64
            )
        self.bill = bill

    @property
    def params(self) -> ToolkitsParams:
        return self._params

    def kit_scores(self, query: str) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
        """Each toolkit's cosine with the query (0 without an embedder) and whether it is active."""
        n = len(self.toolkits)
        sims = np.zeros(n, dtype=np.float64)
        if self.kit_vectors is not None and self.embedder is not None:
            query_vec = np.asarray(self.embedder.embed([query]), dtype=np.float64)[0]
            sims = cosines(self.kit_vectors, query_vec)
        by_word = np.array([keyword_hit(query, kit.keywords) for kit in self.toolkits], dtype=bool)
        by_meaning = (
            (sims >= self._params.threshold) if self.kit_vectors is not None else by_word & False
        )
        return sims, by_word | by_meaning

    def result(self, query: str, sims: FloatArray, active: npt.NDArray[np.bool_]) -> StrategyResult:
        """Base tools and the active toolkits' tools, ranked by toolkit, and the bill."""
        kit_order = sorted(range(len(self.toolkits)), key=lambda k: (not active[k], -sims[k]))
        order: list[int] = list(self.base)
        scores = np.zeros(self.size, dtype=np.float64)
        scores[list(self.base)] = 1.0
        sent: list[int] = list(self.base)
        seen = set(self.base)
        for k in kit_order:
            if not active[k] and sims[k] <= 0.0:
                continue  # found nothing for this query: not ranked
            for i in self.members[k].tolist():
                if i in seen:
                    continue
                seen.add(i)
                order.append(i)
                scores[i] = sims[k]
                if active[k]:
                    sent.append(i)
        return StrategyResult(
            query=query,
            engine=self.name,
            order=np.array(order, dtype=np.int64),
            scores=scores,
            sent=tuple(sent),
            meta_tokens=0,
            tokens=request_tokens(self.bill, sent, 0),
        )

    def run(self, query: str) -> StrategyResult:
        return self.result(query, *self.kit_scores(query))

    def grid(self) -> list[ToolkitsParams]:
        """The settings ``run_grid`` covers: thresholds 0.10 to 0.60 by 0.05 with an embedder
        (without one the threshold plays no part: the setting alone)."""
        if self.kit_vectors is None:
            return [self._params]
        return [replace(self._params, threshold=t) for t in GRID_THRESHOLDS]

    def run_grid(self, query: str) -> list[StrategyResult]:
        """One result per ``grid()`` setting, from one query embedding."""
        sims, active = self.kit_scores(query)
        if self.kit_vectors is None:
            return [self.result(query, sims, active)]
        by_word = np.array([keyword_hit(query, kit.keywords) for kit in self.toolkits], dtype=bool)
        return [self.result(query, sims, by_word | (sims >= p.threshold)) for p in self.grid()]


register(
    Engine(
        name=ToolkitsStrategy.name,
        params=ToolkitsParams,
        build=lambda catalog, bill, params, embedder: ToolkitsStrategy(
            catalog, bill, params, embedder
        ),
        mark=("○", "white"),
        shown=("threshold",),
        place=50,
        no_embedder_note="no embedder: toolkits activate by keyword only, and none are configured",
    )
)
