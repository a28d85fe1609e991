"""``holo``: holo-tune's own engine (:mod:`workbench.search.holo`) as ``serve`` runs it.

The design is serve's: a client lists the pinned tools, ``search_tools`` and ``call_tool``; a
search returns the found tools' definitions as JSON text, and they are called through
``call_tool``. So a request after a search carries the pins' definitions, the two meta tools, the
result text and ``func_end``. :data:`META_TOOLS` and :func:`result_text` are what serve itself
lists and answers, so the bill and serve cannot differ.

Parameters (``--param``) are the engine's settings flattened: each signal's weight, ``top_k``,
``max_tokens``, ``threshold``, ``name_first``; the fields keep their defaults (a settings file
sets them: ``serve --settings``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from workbench.catalog.models import Catalog, Tool
from workbench.search.embedders.cache import ToolEmbeddingCache
from workbench.search.holo.engine import HoloEngine, HoloResult
from workbench.search.holo.settings import DEFAULT_WEIGHTS, HoloSettings
from workbench.search.selection import pinned_indices
from workbench.search.serving import META_TOOLS as SERVE_META_TOOLS
from workbench.search.serving import answer_text
from workbench.search.serving import result_text as serve_result_text
from workbench.search.strategies.base import (
    StrategyResult,
    TokenBill,
    definitions_tokens,
    request_tokens,
    text_tokens,
)
from workbench.search.strategies.registry import Engine, register
from workbench.search.types import Embedder, FloatArray, IntArray

NAME = "holo"
GRID_TOP_K: tuple[int, ...] = tuple(range(1, 11))

#: serve's own tools as a client lists them (what every request carries besides the pins).
META_TOOLS: tuple[dict[str, Any], ...] = SERVE_META_TOOLS


def result_text(tools: Sequence[Tool]) -> str:
    """What ``search_tools`` returns for ``tools``: their definitions as one JSON array, serve's
    own text (:func:`workbench.search.serving.result_text`: the search's bill, and the tuner's
    estimate of a found tool: one text, so they cannot differ)."""
    return serve_result_text(tools)


@dataclass(frozen=True)
class HoloParams:
    """The engine's settings as ``--param`` sets them (the defaults of :class:`HoloSettings`)."""

    dense: float = DEFAULT_WEIGHTS["dense"]
    lexical: float = DEFAULT_WEIGHTS["lexical"]
    name: float = DEFAULT_WEIGHTS["name"]
    neighbour: float = DEFAULT_WEIGHTS["neighbour"]
    server: float = DEFAULT_WEIGHTS["server"]
    cost: float = DEFAULT_WEIGHTS["cost"]
    server_text: float = DEFAULT_WEIGHTS["server_text"]
    top_k: int | None = 5
    max_tokens: int | None = None
    threshold: float | None = None
    name_first: bool = True

    def __post_init__(self) -> None:
        self.settings()  # the settings' own checks, naming the field

    def settings(self, base: HoloSettings | None = None) -> HoloSettings:
        """These parameters over ``base`` (its fields, pins and embedder kept)."""
        weights = {k: float(getattr(self, k)) for k in DEFAULT_WEIGHTS}
        return replace(
            base or HoloSettings(),
            weights=weights,
            top_k=self.top_k,
            max_tokens=self.max_tokens,
            threshold=self.threshold,
            name_first=self.name_first,
        )

    @classmethod
    def of(cls, settings: HoloSettings) -> HoloParams:
        w = settings.weights
        return cls(
            **{k: float(w[k]) for k in DEFAULT_WEIGHTS},
            top_k=settings.top_k,
            max_tokens=settings.max_tokens,
            threshold=settings.threshold,
            name_first=settings.name_first,
        )


class HoloStrategy:
    """holo-tune's engine under serve's design and bill."""

    name: ClassVar[str] = NAME

    def __init__(
        self,
        catalog: Catalog,
        bill: TokenBill,
        params: HoloParams | None = None,
        *,
        embedder: Embedder | None = None,
        embedding_cache: ToolEmbeddingCache | None = None,
        settings: HoloSettings | None = None,
        engine: HoloEngine | None = None,
    ) -> None:
        base = settings or HoloSettings()
        self._params = params or HoloParams.of(base)
        self.settings = self._params.settings(base)
        self.catalog = catalog
        self.bill = bill
        self.engine = engine or HoloEngine(
            catalog,
            np.asarray(bill.per_tool, dtype=np.float64),
            embedder,
            fields=self.settings.fields,
            embedding_cache=embedding_cache,
        )
        self.pins = tuple(pinned_indices(catalog, self.settings.pins))
        self.meta_tokens = definitions_tokens(bill, list(META_TOOLS))

    @property
    def params(self) -> HoloParams:
        return self._params

    def search(self, query: str, settings: HoloSettings | None = None) -> HoloResult:
        return self.engine.search(query, settings or self.settings)

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        ranked = self.engine.rank(query, self.settings)
        return ranked.order, ranked.scores

    def run(self, query: str) -> StrategyResult:
        return self.result(self.search(query))

    def result(self, found: HoloResult) -> StrategyResult:
        """The request after the search ``found``: the pins, the meta tools and the result."""
        tools = [self.catalog.tools[i] for i in found.indices]
        text = answer_text(found, tools, self.settings)  # what serve's search_tools sends
        meta = self.meta_tokens + text_tokens(self.bill, text)
        sent = self.pins + tuple(i for i in found.indices if i not in self.pins)
        ranking = found.ranking
        return StrategyResult(
            query=ranking.query,
            engine=NAME,
            order=ranking.found,
            scores=_positive(ranking.scores, ranking.found),
            sent=sent,
            meta_tokens=meta,
            tokens=request_tokens(self.bill, list(self.pins), meta),
        )

    def grid(self) -> list[HoloParams]:
        """The settings ``run_grid`` covers: ``top_k`` 1 to 10 (no token budget)."""
        return [replace(self._params, top_k=k, max_tokens=None) for k in GRID_TOP_K]

    def run_grid(self, query: str) -> list[StrategyResult]:
        return [self.result(self.search(query, p.settings(self.settings))) for p in self.grid()]


def _positive(scores: FloatArray, found: IntArray) -> FloatArray:
    """The fused scores of the found tools shifted above 0 (the lab reads a ranked tool's score
    as its evidence), 0 for the rest; the order and the differences are kept."""
    out = np.zeros(scores.shape[0], dtype=np.float64)
    if found.size:
        values = scores[found]
        out[found] = values - float(values.min()) + 1e-6
    return out


register(
    Engine(
        name=HoloStrategy.name,
        params=HoloParams,
        build=lambda catalog, bill, params, embedder: HoloStrategy(
            catalog, bill, params, embedder=embedder
        ),
        mark=("★", "bright_magenta"),
        shown=("top_k", "dense", "lexical", "name"),
        place=70,
    )
)
