"""One opened agent: config, catalog, token table and search engine, composed once.

The CLI commands and the TUI both call :func:`open_workspace` (or its parts); nothing here imports
textual. Slow parts (server enumeration, tool embeddings) can run in a worker: the functions are
plain and thread-safe to call off the UI thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from workbench.catalog import Catalog, ServerStatus
from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import SEMANTIC_KERNEL, CatalogView
from workbench.catalog.snapshot import load_snapshot
from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import ToolFiltering
from workbench.search.embedders import EmbedderChoice, resolve_embedder
from workbench.search.engine import HoloDeckEngine
from workbench.search.usage import read_counts
from workbench.tokens import TokenTable, token_table


def preflight(
    agent: AgentConfig,
    *,
    catalog_file: str | Path | None = None,
    usage_file: str | Path | None = None,
    embedder_spec: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> None:
    """Check the files and flags a workspace will need before any server starts: a catalog
    snapshot that does not read, a usage file that is not counts, an embedder that cannot be
    built (``--embedder`` or ``HOLO_TUNE_EMBEDDER``) are the user's one-line InputError now, as
    the CLI reports them (the dashboard shows them on its error screen instead of opening
    without a catalog). Tool names in the usage file are checked when the catalog is known."""
    if catalog_file is not None:
        load_snapshot(catalog_file)
    if usage_file is not None:
        read_counts(usage_file)
    resolve_embedder(agent, embedder_spec, environ=environ)  # the flag, HOLO_TUNE_EMBEDDER, ...


@dataclass
class Workspace:
    agent: AgentConfig
    catalog: Catalog
    tokens: TokenTable
    embedder: EmbedderChoice
    engine: HoloDeckEngine

    @property
    def setting(self) -> ToolFiltering:
        """The setting the file holds (HoloDeck's defaults where it has no block)."""
        return self.agent.filtering or ToolFiltering()


def open_workspace(
    agent_path: str | Path,
    *,
    catalog_file: str | Path | None = None,
    embedder_spec: str | None = None,
    timeout: float | None = None,
    on_status: Callable[[ServerStatus], None] | None = None,
    environ: Mapping[str, str] | None = None,
    view: CatalogView = SEMANTIC_KERNEL,
) -> Workspace:
    """Load the agent, list its tools as ``view`` sees them (a runtime's ``catalog_view``;
    HoloDeck 0.6's by default), count their tokens and build the search engine.

    A ``${VAR}`` the environment does not set is a warning here, not an error: listing tools and
    tuning need no secret, and the server that does need it reports its own failure.
    """
    agent = load_agent(agent_path, environ=environ, missing_env="warn")
    catalog = load_catalog(
        agent,
        catalog_file=Path(catalog_file) if catalog_file else None,
        timeout=timeout,
        on_status=on_status,
        view=view,
    )
    return build_workspace(agent, catalog, embedder_spec=embedder_spec, environ=environ)


def build_workspace(
    agent: AgentConfig,
    catalog: Catalog,
    *,
    embedder_spec: str | None = None,
    environ: Mapping[str, str] | None = None,
    embedder: EmbedderChoice | None = None,
) -> Workspace:
    """The parts of a workspace that need no I/O beyond the embedder (tool embeddings).

    ``embedder``: the choice an earlier workspace of the same agent resolved, kept as it is (for
    a catalog that grew: its model stays loaded, its query vectors remembered, and the tools it
    already embedded come from its cache); without it the embedder is resolved from
    ``embedder_spec`` and ``environ``.
    """
    tokens = token_table(catalog, agent.agent.model.provider, agent.agent.model.name)
    choice = embedder or resolve_embedder(agent, embedder_spec, environ=environ)
    engine = HoloDeckEngine(
        catalog, choice.embedder, embedding_cache=choice.cache, no_embedder_reason=choice.note
    )
    return Workspace(agent=agent, catalog=catalog, tokens=tokens, embedder=choice, engine=engine)
