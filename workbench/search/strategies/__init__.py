"""Other runtimes' tool-search designs, reproduced as engines next to ``holodeck``.

Each engine is built once per catalog and token table and answers ``run(query)`` with a
:class:`~workbench.search.strategies.base.StrategyResult`: its ranking, the tools the model can call
afterwards and the request's token bill under that design's own accounting. docs/strategies.md
describes each engine's parameters, published behaviour and sources.
"""

from __future__ import annotations

from typing import Any

from workbench.catalog.models import Catalog
from workbench.errors import InputError
from workbench.search.strategies.anthropic import AnthropicParams, AnthropicStrategy
from workbench.search.strategies.argus import ArgusParams, ArgusStrategy
from workbench.search.strategies.base import Strategy, StrategyResult, TokenBill
from workbench.search.strategies.fastmcp import FastMCPParams, FastMCPStrategy
from workbench.search.strategies.holo import HoloParams, HoloStrategy
from workbench.search.strategies.pizzapi import PizzaPiParams, PizzaPiStrategy
from workbench.search.strategies.stackone import StackOneParams, StackOneStrategy
from workbench.search.strategies.toolkits import Toolkit, ToolkitsParams, ToolkitsStrategy
from workbench.search.types import Embedder

#: Engine name -> its parameter dataclass (every field has the engine's published default).
PARAMS: dict[str, type[Any]] = {
    "stackone": StackOneParams,
    "argus": ArgusParams,
    "pizzapi": PizzaPiParams,
    "anthropic": AnthropicParams,
    "toolkits": ToolkitsParams,
    "fastmcp": FastMCPParams,
    "holo": HoloParams,
}
ENGINES: tuple[str, ...] = tuple(PARAMS)


def build_strategy(
    name: str,
    catalog: Catalog,
    bill: TokenBill,
    params: Any = None,
    *,
    embedder: Embedder | None = None,
) -> Strategy:
    """The engine ``name`` for this catalog and token table (``params`` None: its defaults).

    ``toolkits`` and ``holo`` use the embedder (without one toolkits activate by keyword only,
    and holo has no dense signal).
    """
    if name not in PARAMS:
        raise InputError(f"unknown engine {name!r} (known: {', '.join(ENGINES)})", field="engine")
    if params is not None and not isinstance(params, PARAMS[name]):
        raise InputError(f"parameters of {name} must be {PARAMS[name].__name__}", field="engine")
    if name == "stackone":
        return StackOneStrategy(catalog, bill, params)
    if name == "argus":
        return ArgusStrategy(catalog, bill, params)
    if name == "pizzapi":
        return PizzaPiStrategy(catalog, bill, params)
    if name == "anthropic":
        return AnthropicStrategy(catalog, bill, params)
    if name == "fastmcp":
        return FastMCPStrategy(catalog, bill, params)
    if name == "holo":
        return HoloStrategy(catalog, bill, params, embedder=embedder)
    return ToolkitsStrategy(catalog, bill, params, embedder=embedder)


__all__ = [
    "ENGINES",
    "PARAMS",
    "AnthropicParams",
    "AnthropicStrategy",
    "ArgusParams",
    "ArgusStrategy",
    "FastMCPParams",
    "FastMCPStrategy",
    "HoloParams",
    "HoloStrategy",
    "PizzaPiParams",
    "PizzaPiStrategy",
    "StackOneParams",
    "StackOneStrategy",
    "Strategy",
    "StrategyResult",
    "TokenBill",
    "Toolkit",
    "ToolkitsParams",
    "ToolkitsStrategy",
    "build_strategy",
]
