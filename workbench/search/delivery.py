"""What the runtime delivers for a search method: the one rule every figure goes through.

HoloDeck 0.6 creates an embedding service only for some agents (:func:`runtime_embedding`: one
with a ``vectorstore`` or ``hierarchical_document`` tool). Without it, its ``semantic`` is BM25
and its ``hybrid`` fuses BM25 with itself, whatever embedder holo-tune was given (``--embedder``,
``HOLO_TUNE_EMBEDDER``). A semantic figure scored with such an embedder is a figure the runtime
cannot deliver, so:

- :func:`runtime_methods`: the methods a tuner or a front may offer (the others run as BM25);
- :func:`runtime_engine`: the engine that ranks as the runtime does (``eval``, the dashboard's
  Evaluate, ``compare`` measure with it);
- :func:`method_run`: what was asked, what was measured and why they differ (``eval``'s note and
  its ``--json`` ``measured_as``); :func:`write_warning`: what ``apply`` says will really run.

The embedding what-if (:mod:`workbench.evaluate.whatif`) is the one place that scores semantic
with the given embedder on such an agent: it measures the change that would make it run.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from workbench.config.filtering import SEARCH_METHODS, ToolFiltering
from workbench.search.embedders.base import NONE
from workbench.search.embedders.resolve import BM25_AT_RUN_TIME, runtime_embedding
from workbench.search.engine import HoloDeckEngine

if TYPE_CHECKING:
    from workbench.config.models import Agent
    from workbench.search.embedders.resolve import EmbedderChoice

#: The method every runtime ranks with as holo-tune scores it.
BM25 = "bm25"
E = TypeVar("E")
#: Engines without their embedder, one per engine that has one (built once, dropped with it).
_AS_RUN: weakref.WeakKeyDictionary[HoloDeckEngine, HoloDeckEngine] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class MethodRun:
    """A search method as asked, as measured here and as the runtime runs it.

    ``why`` says why they differ (None: all three are the method asked).
    """

    asked: str
    measured: str
    runs: str
    why: str | None = None

    @property
    def deliverable(self) -> bool:
        """True when the runtime runs the method asked (its figures can be adopted)."""
        return self.runs == self.asked

    def line(self) -> str | None:
        """One line for people: what was measured instead of what was asked, and why (None:
        the method asked was measured)."""
        if self.why is None:
            return None
        if self.measured == self.runs:
            return f"{self.asked} measured as {self.measured}, as the runtime runs it: {self.why}"
        return f"{self.asked} measured as {self.measured} here: {self.why}"

    def to_json(self) -> dict[str, Any]:
        """``eval --json``'s ``measured_as``: ``{"asked", "measured", "runs", "why"}``."""
        return {"asked": self.asked, "measured": self.measured, "runs": self.runs, "why": self.why}


def runtime_methods(agent: Agent, *, given: bool = False) -> tuple[str, ...]:
    """The methods the runtime runs as asked for ``agent``: all of them with an embedding
    service at run time, else only bm25 (semantic and hybrid would be BM25). ``given``: the
    runtime runs holo-tune's engine with the embedder holo-tune is given (serve), so all."""
    if not given and runtime_embedding(agent).spec == NONE:
        return (BM25,)
    return tuple(SEARCH_METHODS)


def _fallback_why(reason: str | None) -> str:
    reason = reason or "no embedding service at run time"
    return reason if BM25_AT_RUN_TIME in reason else f"{reason}: {BM25_AT_RUN_TIME}"


def method_run(
    agent: Agent, method: str, choice: EmbedderChoice | None = None, *, given: bool = False
) -> MethodRun:
    """What ``method`` is for ``agent``: measured (by holo-tune with ``choice``'s embedder, when
    given) and run (by the runtime). Measured figures are always the runtime's where it has no
    embedding service (:func:`runtime_engine`). ``given``: the runtime runs the embedder
    holo-tune is given (serve), so what is measured runs."""
    if method not in SEARCH_METHODS or method == BM25:
        return MethodRun(method, method, method)
    if given:
        if choice is None or choice.embedder is not None:
            return MethodRun(method, method, method)
        return MethodRun(method, BM25, BM25, choice.note or "no embedder: it is BM25")
    runtime = runtime_embedding(agent)
    if runtime.spec == NONE:
        why = _fallback_why(runtime.reason)
        if choice is not None and choice.embedder is not None:
            why += f" (the scores of {choice.spec} are not what runs)"
        return MethodRun(method, BM25, BM25, why)
    if choice is not None and choice.embedder is None:
        return MethodRun(method, BM25, method, choice.bm25_reason())
    return MethodRun(method, method, method)


def runtime_engine(engine: E, agent: Agent, *, given: bool = False) -> E:
    """``engine`` as the runtime ranks: without its embedder where ``agent`` has no embedding
    service at run time (semantic and hybrid then fall back as HoloDeck's do, the reason in
    each ranking's ``fallback``), else ``engine`` itself (and always with ``given``: serve runs
    the embedder it is given). Built once per engine."""
    if given or not isinstance(engine, HoloDeckEngine) or engine.embedder is None:
        return engine
    runtime = runtime_embedding(agent)
    if runtime.spec != NONE:
        return engine
    found = _AS_RUN.get(engine)
    if found is None:
        found = HoloDeckEngine(engine.catalog, None, no_embedder_reason=runtime.reason)
        _AS_RUN[engine] = found
    return cast("E", found)


def write_warning(agent: Agent, setting: ToolFiltering) -> str | None:
    """What will really run when the runtime would not run the block's method as written (None:
    it would, or the filter is off). The block is still written as asked: a vectorstore tool
    added later makes it run."""
    run = method_run(agent, setting.search_method)
    if run.deliverable or not setting.enabled:
        return None
    return f"search_method {run.asked} will run as {run.runs}: {run.why}; written as asked"
