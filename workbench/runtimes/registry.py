"""The runtimes holo-tune knows: the built-in modules, then plugins of other packages.

A runtime is one module holding a :class:`~workbench.runtimes.base.Runtime` subclass and a
module-level ``RUNTIME`` instance of it. The built-in ones are listed in :data:`BUILTIN` (their
order is the order of every table, plot and ``--runtime`` choice list); another package adds one
through the entry point group :data:`ENTRY_POINTS` (the entry point names a ``Runtime`` subclass
or instance). Commands and the dashboard reach runtimes only through :func:`all_runtimes` and
:func:`get_runtime`, never by testing a name.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module, metadata

from workbench.errors import InputError
from workbench.runtimes.base import Runtime

#: The built-in runtime modules of :mod:`workbench.runtimes`, in display order.
BUILTIN = (
    "holodeck06",
    "holodeck07",
    "anthropic",
    "claude_code",
    "openai",
    "argus",
    "pizzapi",
    "fastmcp",
    "serve",
)
#: Where other packages register runtimes.
ENTRY_POINTS = "holo_tune.runtimes"


@cache
def all_runtimes() -> tuple[Runtime, ...]:
    """Every runtime, built-in first; a plugin whose name is taken is left out."""
    found: list[Runtime] = [import_module(f"workbench.runtimes.{m}").RUNTIME for m in BUILTIN]
    for point in metadata.entry_points(group=ENTRY_POINTS):
        try:
            loaded = point.load()
        except Exception:  # a broken plugin must not break holo-tune
            continue
        runtime = loaded() if isinstance(loaded, type) else loaded
        if isinstance(runtime, Runtime) and all(r.name != runtime.name for r in found):
            found.append(runtime)
    return tuple(found)


def runtime_names() -> tuple[str, ...]:
    """The ``--runtime`` choices, in display order."""
    return tuple(r.name for r in all_runtimes())


def get_runtime(name: str) -> Runtime:
    """The runtime called ``name`` (an InputError naming the known ones otherwise)."""
    for runtime in all_runtimes():
        if runtime.name == name:
            return runtime
    known = ", ".join(runtime_names())
    raise InputError(f"unknown runtime {name!r} (known: {known})", field="--runtime")


def default_runtime() -> Runtime:
    """The runtime assumed when nothing says which (the first marked ``default``)."""
    return next(r for r in all_runtimes() if r.default)


def searching_runtimes() -> tuple[str, ...]:
    """The runtimes whose model searches for tools (those ``--llm`` applies to)."""
    return tuple(r.name for r in all_runtimes() if r.searches)
