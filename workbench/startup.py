"""The process's start: the cyclic garbage collector off while holo-tune loads, then frozen.

A start allocates a great many objects and frees almost none: the modules (FastMCP, the MCP
SDK's and pydantic's models, numpy), the catalog and the search index. Python's collector runs
every 700 allocations and walks the young objects each time, for nothing to collect; with it off,
``holo-tune serve`` imports and builds its index in less time (the third-party imports alone:
1.83 s -> 1.55 s; serve ready on bfcl with MiniLM: 2.91 s -> 2.64 s, medians of 8 starts on two
cores). The process's entry (``python -m workbench``, the ``holo-tune`` script) calls
:func:`loading` before it imports anything of holo-tune; :func:`loaded` freezes what the start
built (``gc.freeze``: later collections never walk those objects again, so a long-running
server's collections stay short) and turns the collector back on. Every command's start ends
once its module is imported; serve's once its index and server are built, before its first
request. ``cli.main`` called in a process of its own (a test) changes nothing.

The cost: what the start left as cyclic garbage is frozen with the rest and never collected
(serve's imports leave about 2,400 such objects, a few hundred kB, once). Collecting it first
would take a full collection of the start's 230,000 objects (0.17 s, most of what the collector
being off saves); turning the collector on without freezing would make its first collection,
during the first request, walk them all.
"""

from __future__ import annotations

import gc

_state = {"loading": False}


def loading() -> None:
    """Turn the cyclic collector off for the start (reference counting still frees objects)."""
    if gc.isenabled():
        gc.disable()
        _state["loading"] = True


def loaded() -> None:
    """The start is over: freeze what it built and turn the collector back on. Only undoes
    :func:`loading` (a caller that turned the collector off itself keeps it off)."""
    if _state["loading"]:
        _state["loading"] = False
        gc.freeze()
        gc.enable()
