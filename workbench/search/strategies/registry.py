"""The strategy lab's engines: one entry each, registered by the engine's own module.

An engine is one module of this package holding its parameter dataclass, its
:class:`~workbench.search.strategies.base.Strategy` class and one call ``register(Engine(...))``.
The entry says everything the rest of holo-tune knows of the engine: its name, its parameters'
type (``--param``'s types), how to build it, its marker on the dashboard's engines plot, the
parameters a table cell shows, its place in compare's table, and what compare and ``eval`` do
differently for it (a second pass under other parameters, a note without an embedder, a search
query a chat model writes). The CLI's ``eval --engine`` choices, compare, the dashboard's plot
and :func:`build_strategy` read these entries; nothing else names an engine.

:func:`engines` imports every module of the package once, so a new engine module is found
without being listed anywhere; code outside the package may call :func:`register` too. This
module imports no engine (the CLI reads it to build ``eval --engine``'s choices).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from workbench.errors import InputError

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.search.strategies.base import Strategy, TokenBill
    from workbench.search.types import Embedder

#: A marker and its Rich style (``("★", "bright_magenta")``): a series on the engines plot.
Mark = tuple[str, str]
#: ``build(catalog, bill, params, embedder)``: the engine for a catalog and token table; ``params``
#: None is the engine's defaults; an engine that embeds nothing ignores ``embedder``.
Build = Callable[["Catalog", "TokenBill", Any, "Embedder | None"], "Strategy"]


@dataclass(frozen=True)
class EngineVariant:
    """A second pass compare makes of an engine under other parameters (anthropic's regex tool
    beside its BM25 one): its rows say ``(label)`` after the setting, its points are a series of
    their own, ``"<engine> <label>"``."""

    label: str
    #: The parameters it sets over the engine's defaults (plain JSON values).
    changes: Mapping[str, Any]
    mark: Mark

    def holds(self, params: Mapping[str, Any]) -> bool:
        """Whether a setting (its parameters as plain JSON) is one of this variant's."""
        return all(params.get(key) == value for key, value in self.changes.items())


@dataclass(frozen=True)
class Engine:
    """One engine of the strategy lab, as the CLI, compare and the dashboard know it."""

    name: str
    #: The parameter dataclass (every field has the engine's published default).
    params: type[Any]
    build: Build
    #: Its series on the dashboard's engines plot.
    mark: Mark
    #: The parameters worth reading in a table cell (compare's table, the Compare view).
    shown: tuple[str, ...]
    #: Its place in compare's table, its passes and the plot's legend (lower first; ties by name).
    place: int
    variants: tuple[EngineVariant, ...] = ()
    #: What compare says on the engine's rows when no embedder is loaded (None: nothing).
    no_embedder_note: str | None = None
    #: The engine searches with a query a chat model writes (``eval --llm`` applies to it).
    model_query: bool = False
    #: The module that registered it (set by :func:`register`).
    module: str = field(default="", compare=False)


_REGISTERED: dict[str, Engine] = {}
_LOCK = threading.RLock()
_discovered = False


def register(engine: Engine, module: str | None = None) -> Engine:
    """Add ``engine`` under its name (``module``: the registering module, by default the module
    of its ``build``). A name another module registered is refused (ValueError); the same module
    registering again (a reload) replaces its entry."""
    owner = module or getattr(engine.build, "__module__", "") or ""
    with _LOCK:
        known = _REGISTERED.get(engine.name)
        if known is not None and known.module != owner:
            raise ValueError(f"engine {engine.name!r} is already registered by {known.module}")
        entry = replace(engine, module=owner)
        _REGISTERED[engine.name] = entry
        return entry


def unregister(name: str) -> None:
    """Remove the engine ``name`` (a plugin's or a test's; nothing when it is not registered)."""
    with _LOCK:
        _REGISTERED.pop(name, None)


def engines() -> tuple[Engine, ...]:
    """Every registered engine, in place order (this package's modules imported first)."""
    _discover()
    with _LOCK:
        return tuple(sorted(_REGISTERED.values(), key=lambda e: (e.place, e.name)))


def names() -> tuple[str, ...]:
    """The engines' names, in place order: ``eval --engine``'s choices after ``holodeck``."""
    return tuple(engine.name for engine in engines())


def engines_of(chosen: Sequence[str] | None = None) -> tuple[Engine, ...]:
    """The engines called ``chosen``, in that order (None: every engine, in place order)."""
    if chosen is None:
        return engines()
    return tuple(get_engine(name) for name in chosen)


def find_engine(name: str) -> Engine | None:
    """The engine called ``name``, or None (``holodeck``, HoloDeck's filter, is none)."""
    _discover()
    with _LOCK:
        return _REGISTERED.get(name)


def get_engine(name: str, *, flag: str = "engine") -> Engine:
    """The engine called ``name`` (an InputError naming the known ones, on ``flag``, else)."""
    found = find_engine(name)
    if found is None:
        raise InputError(f"unknown engine {name!r} (known: {', '.join(names())})", field=flag)
    return found


def build_strategy(
    name: str,
    catalog: Catalog,
    bill: TokenBill,
    params: Any = None,
    *,
    embedder: Embedder | None = None,
) -> Strategy:
    """The engine ``name`` for this catalog and token table (``params`` None: its defaults).

    The engines that embed (toolkits, holo) use ``embedder``: without one toolkits activate by
    keyword only, and holo has no dense signal.
    """
    engine = get_engine(name)
    if params is not None and not isinstance(params, engine.params):
        raise InputError(f"parameters of {name} must be {engine.params.__name__}", field="engine")
    return engine.build(catalog, bill, params, embedder)


def _discover() -> None:
    """Import every module of this package once: each engine module registers itself."""
    global _discovered
    if _discovered:
        return
    with _LOCK:
        if _discovered:
            return
        package = importlib.import_module(__package__ or "workbench.search.strategies")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
        _discovered = True
