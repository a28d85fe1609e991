"""What ``search_tools`` answers: holo-tune's own engine under the served settings.

The engine (:class:`~workbench.search.holo.engine.HoloEngine`) is built once per catalog with the
embedder holo-tune resolved and its disk cache of tool vectors (a restart embeds nothing), and
each query goes through :func:`workbench.search.serving.answer`, the very function ``holo-tune
search --runtime serve`` and ``eval --runtime serve`` call: the tools the engine returns, best
first, as definitions, or "no tool fits". A catalog that changes (a server's tools listed again)
makes a new engine, with the same embedder (its model and caches kept), swapped in whole: a
search in flight keeps the one it started with.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping

from workbench.catalog.build import ServerListing, build_catalog
from workbench.catalog.models import Catalog, CatalogView, Tool
from workbench.catalog.specs import specs_from_agent
from workbench.config import AgentConfig
from workbench.search.embedders import EmbedderChoice, resolve_embedder
from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.neighbours import Labelled
from workbench.search.holo.settings import HoloSettings
from workbench.search.selection import match_always_include
from workbench.search.serving import QueryTooLong, ServeAnswer, answer, build_engine, definition
from workbench.tokens import token_table

__all__ = ["QueryTooLong", "ServeIndex", "definition", "live_catalog"]


def live_catalog(
    agent: AgentConfig, listings: Mapping[str, ServerListing], view: CatalogView
) -> Catalog:
    """The catalog ``holo-tune search`` builds, from the servers' listings (by entry name), as
    ``view`` sees them (serve's: every tool its servers list, in their order)."""
    tools = specs_from_agent(agent)
    return build_catalog(tools, [listings[spec.name] for spec in tools.mcp()], view)


class ServeIndex:
    """The engine and settings ``search_tools`` answers with."""

    def __init__(
        self,
        agent: AgentConfig,
        catalog: Catalog,
        settings: HoloSettings,
        *,
        embedder: EmbedderChoice | None = None,
        embedder_spec: str | None = None,
        labelled: Callable[[Catalog], Labelled | None] | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        #: The labelled cases of a catalog (the neighbour signal), resolved for each catalog.
        self.labelled = labelled
        self.embedder = embedder or resolve_embedder(agent, embedder_spec)
        self.engine = self._engine(catalog)

    def _engine(self, catalog: Catalog) -> HoloEngine:
        tokens = token_table(catalog, self.agent.agent.model.provider, self.agent.agent.model.name)
        choice = self.embedder
        cases = self.labelled(catalog) if self.labelled is not None else None
        return build_engine(catalog, tokens, self.settings, choice.embedder, choice.cache, cases)

    @property
    def catalog(self) -> Catalog:
        return self.engine.catalog

    @property
    def dense(self) -> str | None:
        """The embedder that scores the dense signal (None: none does)."""
        engine = self.engine
        return self.embedder.spec if engine.embedder is not None and engine.dense else None

    def rebuild(self, catalog: Catalog) -> None:
        """Index a changed catalog (tool embeddings from the disk cache, new ones embedded)."""
        self.engine = self._engine(catalog)

    @property
    def searches_in_place(self) -> bool:
        """Whether a search is only computation, over in milliseconds: no dense signal, or a
        torch-free local model already loaded. An embedding API waits on the network, a model
        still loading makes a search wait for it, and sentence-transformers takes tens of ms."""
        from workbench.search.embedders.local import own_model

        embedder = self.engine.embedder
        if embedder is None:
            return True
        own = own_model(embedder)
        return own is not None and own.loaded and bool(getattr(own, "torch_free", False))

    def search(self, query: str) -> ServeAnswer:
        """``search_tools``' answer (:func:`~workbench.search.serving.answer`)."""
        return answer(self.engine, self.settings, query)

    def tool(self, full_name: str) -> Tool | None:
        return self.engine.catalog.get(full_name)

    def pinned(self, entries: list[str] | None = None) -> list[Tool]:
        """The tools the pins name (full or bare names, matched as always_include is): the
        settings' pins without ``entries``."""
        catalog = self.engine.catalog
        names = list(self.settings.pins) if entries is None else entries
        found = [match_always_include(catalog, entry) for entry in names]
        indices = list(dict.fromkeys(i for i in found if i is not None))
        return [catalog.tools[i] for i in indices]


def load_model_early(settings: HoloSettings, embedder: object | None) -> None:
    """Start loading ``embedder``'s local model now, in a thread of its own, when ``settings``
    score with it and it runs without torch: serve calls it before importing FastMCP and its
    server (1.1 s on 2 cores), so that load (0.3 s, reading the weights mostly, much of it with
    the interpreter free) is over before the index's build begins instead of slowing it.
    sentence-transformers' load is left to serve's start (``_load_model_soon`` in
    :mod:`.app`): its imports beside the index's made the start slower. A load that fails here is
    tried again, and said, there."""
    from workbench.search.embedders.local import own_model
    from workbench.search.serving import scores_dense

    own = own_model(embedder)
    if own is None or own.loaded or not scores_dense(settings):
        return
    if not getattr(own, "torch_free", False):
        return

    def load() -> None:
        with contextlib.suppress(Exception):
            own.load()

    threading.Thread(target=load, name="load-model-early", daemon=True).start()
