"""Token counts of a catalog's tool definitions: per tool, for any selection, along a ranking.

The runtime (Semantic Kernel) sends each tool as a function named ``<plugin>-<function>`` whose
description is the tool's and whose parameters are the tool's input schema. A request carrying
tools costs the sum of its functions plus ``func_end`` once (see ``formats``), so a selection's
bill is a numpy sum over a per-tool array plus one constant: cheap enough for every keystroke.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import tiktoken

from workbench.catalog.models import Catalog, Tool
from workbench.errors import InputError
from workbench.tokens.cache import TokenCountCache, cached_lengths, encoded_lengths
from workbench.tokens.formats import (
    FORMATS,
    Cost,
    FunctionDef,
    ToolFormat,
    all_texts,
    as_function,
    function_cost,
)
from workbench.tokens.models import choose_encoding

IntArray = npt.NDArray[np.int64]
Indices = Sequence[int] | npt.NDArray[np.integer[Any]]


@dataclass(frozen=True, eq=False)
class TokenTable:
    """Token counts of a catalog's tools for one model, in catalog order.

    ``per_tool[i]`` is what tool ``i`` adds to a request; ``overhead`` (the cookbook's
    ``func_end``) is added once to any request that carries at least one tool.
    """

    encoding: str
    exact: bool
    model: str
    per_tool: IntArray
    overhead: int
    note: str = ""
    tool_format: ToolFormat = FORMATS["gpt-4o"]

    def __post_init__(self) -> None:
        per_tool = np.array(self.per_tool, dtype=np.int64)  # a private, read-only copy
        per_tool.setflags(write=False)
        object.__setattr__(self, "per_tool", per_tool)

    def __len__(self) -> int:
        return int(self.per_tool.shape[0])

    @property
    def all(self) -> int:
        """Tokens of sending every tool."""
        return self._with_overhead(int(self.per_tool.sum()), len(self))

    def total(self, indices: Indices) -> int:
        """Tokens of sending the tools at these catalog indices, or a boolean mask (0 for none)."""
        idx = _positions(indices)
        return self._with_overhead(int(self.per_tool[idx].sum()), int(idx.size))

    def cumulative(self, order: Indices) -> IntArray:
        """Prefix bills along a ranking: ``out[k] == total(order[:k])``, so ``out[0] == 0``.

        Length ``len(order) + 1``; ``out[top_k]`` is the bill of sending the first ``top_k``.
        """
        idx = _positions(order)
        out = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(self.per_tool[idx], out=out[1:])
        out[1:] += self.overhead
        return out

    def count_definitions(self, defs: Iterable[Mapping[str, Any]]) -> int:
        """Tokens of sending these tool definitions (any shape ``formats.as_function`` reads).

        For tools that are not in the catalog, e.g. the meta tools of other engines (counted
        through the disk cache, as the table was). Raises InputError for a definition without a
        name.
        """
        try:
            functions = [as_function(definition) for definition in defs]
        except ValueError as err:
            raise InputError(str(err), field="tools") from err
        counts = count_functions(functions, self.encoding, self.tool_format)
        return self._with_overhead(int(counts.sum()), len(functions))

    def _with_overhead(self, subtotal: int, tools: int) -> int:
        return subtotal + self.overhead if tools > 0 else 0


def _positions(indices: Indices) -> npt.NDArray[np.intp]:
    """Catalog indices as an index array (a boolean mask becomes the indices it selects)."""
    idx = np.asarray(indices)
    if idx.dtype == np.bool_:
        return np.flatnonzero(idx)
    return idx.astype(np.intp, copy=False)


def token_table(
    catalog: Catalog, provider: str, model_name: str, cache: TokenCountCache | None = None
) -> TokenTable:
    """Count every tool of ``catalog`` as ``provider``'s ``model_name`` would be billed.

    The counts of texts counted before come from ``cache`` (the user's disk cache by default,
    ``tokens.cache``): a catalog counted before builds no encoding.
    """
    choice = choose_encoding(provider, model_name)
    fmt = FORMATS[choice.family]
    functions = [tool_function(tool) for tool in catalog.tools]
    return TokenTable(
        encoding=choice.name,
        exact=choice.exact,
        model=model_name,
        per_tool=count_functions(functions, choice.name, fmt, cache),
        overhead=fmt.func_end,
        note=choice.note,
        tool_format=fmt,
    )


def tool_function(tool: Tool) -> FunctionDef:
    """A catalog tool as the runtime sends it: full name, description, input schema.

    The description is the source's own, ``definition["description"]`` (empty when the source
    gave none); ``Tool.description`` is used only for a tool without a definition, because it may
    hold HoloDeck's stand-in ``Function <f> from plugin <p>``, which the filter's index sees and
    the model never does. A tool listed without any schema (known only by its parameter names) is
    sent with each parameter as a string property, as Semantic Kernel declares untyped parameters.
    """
    definition = tool.definition
    description = definition.get("description") if definition else tool.description
    has_schema = any(key in definition for key in ("inputSchema", "input_schema"))
    schema: Mapping[str, Any] = tool.input_schema
    if not has_schema and tool.parameters:
        schema = {
            "type": "object",
            "properties": {name: {"type": "string"} for name in tool.parameters},
        }
    return FunctionDef(
        name=tool.full_name,
        description=description if isinstance(description, str) else "",
        parameters=schema,
    )


def count_functions(
    functions: Sequence[FunctionDef],
    encoding: tiktoken.Encoding | str,
    fmt: ToolFormat,
    cache: TokenCountCache | None = None,
) -> IntArray:
    """Per-function token counts (``func_end`` excluded), each distinct string counted once.

    ``encoding``: a built encoding counts every string with it; an encoding's name reads the
    strings counted before from ``cache`` (the user's by default) and builds the encoding only
    for the others.
    """
    costs = [function_cost(function, fmt) for function in functions]
    texts = all_texts(costs)
    if isinstance(encoding, str):
        lengths = cached_lengths(texts, encoding, cache)
    else:
        lengths = encoded_lengths(texts, encoding)
    return np.fromiter(
        (_resolve(cost, lengths) for cost in costs), dtype=np.int64, count=len(costs)
    )


def text_counts(
    texts: Sequence[str], encoding: str, cache: TokenCountCache | None = None
) -> IntArray:
    """Tokens of each plain text (a search answer) in encoding ``encoding`` (by name), in order:
    those counted before come from ``cache`` (the user's by default), the encoding is built
    only for the others."""
    lengths = cached_lengths(list(dict.fromkeys(texts)), encoding, cache)
    return np.fromiter((lengths[text] for text in texts), dtype=np.int64, count=len(texts))


def _resolve(cost: Cost, lengths: Mapping[str, int]) -> int:
    return cost.constant + sum(lengths[text] for text in cost.texts)
