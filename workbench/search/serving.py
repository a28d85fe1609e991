"""What ``serve``'s ``search_tools`` answers to one query: holo-tune's engine under one setting.

One function, :func:`answer`, turns a query into the answer every caller shows: ``serve``'s
``search_tools`` (:class:`workbench.serve.index.ServeIndex`), ``holo-tune search --runtime
serve`` and ``eval --runtime serve`` (the serve runtime's search, :mod:`workbench.runtimes.serve`).
So what a search shows is what serve answers, by construction.

The answer is the tools :meth:`HoloEngine.search <workbench.search.holo.engine.HoloEngine.search>`
returns, best first, as their definitions in one JSON array; or, when the engine refuses (the
confidence below the threshold and the query naming no tool, or no tool with evidence of its
own), one line that starts with :data:`NO_TOOL_FITS` and no tool. The ``holo`` strategy
(:mod:`workbench.search.strategies.holo`) bills this very text.

:func:`build_engine` builds the engine once per catalog from the embedder holo-tune resolved
(its disk cache of tool vectors: a restart embeds nothing) and the settings' field weights and
labelled cases.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.catalog.models import Catalog, Tool
from workbench.limits import MAX_QUERY_BYTES, query_bytes
from workbench.search.embedders.cache import ToolEmbeddingCache
from workbench.search.holo.engine import HoloEngine, HoloResult
from workbench.search.holo.neighbours import Labelled
from workbench.search.holo.settings import HoloSettings
from workbench.search.types import Embedder, FloatArray
from workbench.tokens import text_counts

if TYPE_CHECKING:
    from workbench.search.strategies.base import TokenBill

#: The first words of the answer to a query no tool fits (the rest says why and what to do).
NO_TOOL_FITS = "no tool fits"

#: serve's own tools exactly as it lists them (name, description, input schema): what every
#: request carries besides the pins, and so what the serve runtime and its tuner bill (a test
#: holds serve's listing equal to these). Terse, every word billed twice a task: what a search
#: returns and how to call what it found.
META_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "search_tools",
        "description": "Find tools for a task: their definitions with input schemas as JSON, "
        "best first. Call one with call_tool.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "the task"}},
            "required": ["query"],
        },
    },
    {
        "name": "call_tool",
        "description": "Call a tool search_tools returned.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "its name"},
                "arguments": {"type": "object", "description": "per its inputSchema"},
            },
            "required": ["name"],
        },
    },
)


class QueryTooLong(ValueError):
    """A query over :data:`~workbench.limits.MAX_QUERY_BYTES`."""


@dataclass(frozen=True)
class ServeAnswer:
    """One search's answer: the engine's result, the tools returned (best first) and the text
    ``search_tools`` sends."""

    query: str
    result: HoloResult
    tools: tuple[Tool, ...]
    settings: HoloSettings

    @property
    def refused(self) -> bool:
        return self.result.refused

    @property
    def confidence(self) -> float:
        return self.result.ranking.confidence

    def definitions(self) -> list[dict[str, Any]]:
        return [definition(tool) for tool in self.tools]

    def text(self) -> str:
        """What ``search_tools`` sends: the tools' definitions as a JSON array (``[]`` when a
        ``select:`` names no tool), or one line saying no tool fits."""
        return answer_text(self.result, self.tools, self.settings)


def answer_text(result: HoloResult, tools: Sequence[Tool], settings: HoloSettings) -> str:
    """``search_tools``' text for the engine's ``result`` (``tools``: its tools, best first)."""
    if result.refused:
        return refusal_text(result.ranking.confidence, settings.threshold)
    return result_text(tools)


def result_text(tools: Sequence[Tool]) -> str:
    """The tools' definitions (:func:`definition`) as one JSON array: what ``search_tools``
    returns for them, compact (no space after ``,`` or ``:``: the model reads the same
    definitions, and on bfcl's tools an answer costs 16 % fewer tokens than with spaces)."""
    defs = [definition(tool) for tool in tools]
    return json.dumps(defs, ensure_ascii=False, separators=(",", ":"))


def refusal_text(confidence: float, threshold: float | None) -> str:
    """The answer to a query no tool fits, in words a model acts on: its confidence is below
    the threshold, or (below no threshold) no tool shares a word with it."""
    if threshold is not None and confidence < threshold:
        why = f"confidence {confidence:.3f} is below the threshold {threshold:g}"
    else:
        why = "no tool shares a word with it"
    return (
        f"{NO_TOOL_FITS} this query ({why}): answer without a tool, or search again in other "
        "words or with select:NAME"
    )


def answer(engine: HoloEngine, settings: HoloSettings, query: str) -> ServeAnswer:
    """The answer to ``query`` (:class:`QueryTooLong` over the query limit)."""
    if query_bytes(query) > MAX_QUERY_BYTES:
        raise QueryTooLong(
            f"the query is longer than {MAX_QUERY_BYTES} bytes: search with a shorter one"
        )
    result = engine.search(query, settings)
    tools = tuple(engine.catalog.tools[i] for i in result.indices)
    return ServeAnswer(query, result, tools, settings)


#: What a search's answer keeps of a tool's definition: what a model needs to call it. Its
#: ``outputSchema``, ``annotations``, ``icons`` and ``_meta`` are left out: the model calls the
#: tool through ``call_tool``, which returns the server's own result, and an output schema alone
#: can weigh ten times the tool's definition (Brave's place search: 17,300 tokens as JSON).
ANSWER_KEYS = ("title", "description")


def definition(tool: Tool) -> dict[str, Any]:
    """A tool as a search answers it, under holo-tune's full name (what search prints and
    ``call_tool`` takes): its title and description as the server lists them, and its input
    schema (:data:`ANSWER_KEYS`)."""
    out: dict[str, Any] = {"name": tool.full_name}
    for key in ANSWER_KEYS:
        value = tool.definition.get(key)
        if value:
            out[key] = value
    out["inputSchema"] = dict(tool.input_schema)
    return out


def answer_tokens(catalog: Catalog, bill: TokenBill) -> FloatArray:
    """Each tool's tokens in a search's answer (:func:`result_text` of it alone): what a
    ``max_tokens`` budget counts, in serve and in its tuner alike (as ``text_tokens`` counts a
    text: an empty one is 0 tokens)."""
    texts = [result_text([tool]) for tool in catalog.tools]
    # From the disk cache of token counts: a restart on the same tools builds no encoding.
    return text_counts(texts, bill.encoding).astype(np.float64)


def scores_dense(settings: HoloSettings) -> bool:
    """Whether ``settings`` score with the embedder (a dense signal has a weight)."""
    weights = settings.weights
    return bool(weights.get("dense", 0.0) or weights.get("server_text", 0.0))


def build_engine(
    catalog: Catalog,
    bill: TokenBill,
    settings: HoloSettings,
    embedder: Embedder | None,
    cache: ToolEmbeddingCache | None,
    labelled: Labelled | None = None,
) -> HoloEngine:
    """The engine for ``catalog`` under ``settings``: the dense signals scored with
    ``embedder`` only when one has a weight (``--method bm25`` starts no model), tool vectors
    through ``cache``, the neighbour signal from ``labelled`` when its weight is not 0, and a
    ``max_tokens`` budget counted in each tool's answer tokens (:func:`answer_tokens`). The tool
    vectors are embedded here (from the cache on a restart)."""
    dense = embedder if scores_dense(settings) else None
    engine = HoloEngine(
        catalog,
        answer_tokens(catalog, bill),
        dense,
        fields=settings.fields,
        embedding_cache=cache,
        labelled=labelled if settings.weights.get("neighbour", 0.0) else None,
    )
    engine.prepare()
    return engine
