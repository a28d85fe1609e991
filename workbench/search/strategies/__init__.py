"""Other runtimes' tool-search designs, reproduced as engines next to ``holodeck``.

Each engine is built once per catalog and token table and answers ``run(query)`` with a
:class:`~workbench.search.strategies.base.StrategyResult`: its ranking, the tools the model can call
afterwards and the request's token bill under that design's own accounting. docs/strategies.md
describes each engine's parameters, published behaviour and sources. Each engine's module
registers it (:mod:`workbench.search.strategies.registry`); the rest of holo-tune reads the
registry and names no engine.
"""

from __future__ import annotations

from workbench.search.strategies.anthropic import AnthropicParams, AnthropicStrategy
from workbench.search.strategies.argus import ArgusParams, ArgusStrategy
from workbench.search.strategies.base import Strategy, StrategyResult, TokenBill
from workbench.search.strategies.fastmcp import FastMCPParams, FastMCPStrategy
from workbench.search.strategies.holo import HoloParams, HoloStrategy
from workbench.search.strategies.pizzapi import PizzaPiParams, PizzaPiStrategy
from workbench.search.strategies.registry import (
    Engine,
    EngineVariant,
    build_strategy,
    names,
    register,
)
from workbench.search.strategies.stackone import StackOneParams, StackOneStrategy
from workbench.search.strategies.toolkits import Toolkit, ToolkitsParams, ToolkitsStrategy

#: The engines this package's modules register, in place order (:func:`registry.names` is the
#: live list, with any engine registered since).
ENGINES: tuple[str, ...] = names()


__all__ = [
    "ENGINES",
    "AnthropicParams",
    "AnthropicStrategy",
    "ArgusParams",
    "ArgusStrategy",
    "Engine",
    "EngineVariant",
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
    "register",
]
