"""What ``search_tools`` answers: ``holo-tune search``'s selection, best first, as definitions.

The workspace is the core's (:func:`~workbench.workspace.build_workspace`: the tokens, the
embedder with its disk cache, the ``holodeck`` engine) and each query goes through the very
function ``holo-tune search`` calls (:func:`workbench.commands.search.search`: the engine's
``rank``, then ``select`` under the setting). The selected tools are returned in the ranking's
order. A catalog that changes (a server's tools listed again) makes a new workspace, with the
same embedder (its model and caches kept), swapped in whole: a search in flight keeps the one
it started with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.catalog.build import ServerListing, build_catalog
from workbench.catalog.models import Catalog, CatalogView, Tool
from workbench.catalog.specs import specs_from_agent
from workbench.commands.search import search
from workbench.config import AgentConfig
from workbench.config.filtering import ToolFiltering
from workbench.limits import MAX_QUERY_BYTES, query_bytes
from workbench.search.selection import match_always_include
from workbench.workspace import Workspace, build_workspace


class QueryTooLong(ValueError):
    """A query over :data:`MAX_QUERY_BYTES`."""


def live_catalog(
    agent: AgentConfig, listings: Mapping[str, ServerListing], view: CatalogView
) -> Catalog:
    """The catalog ``holo-tune search`` builds, from the servers' listings (by entry name), as
    ``view`` sees them (serve's: every tool its servers list, in their order)."""
    tools = specs_from_agent(agent)
    return build_catalog(tools, [listings[spec.name] for spec in tools.mcp()], view)


class ServeIndex:
    """The workspace and setting ``search_tools`` ranks with."""

    def __init__(
        self,
        agent: AgentConfig,
        catalog: Catalog,
        setting: ToolFiltering,
        *,
        embedder_spec: str | None = None,
    ) -> None:
        self.agent = agent
        self.setting = setting
        self.workspace: Workspace = build_workspace(agent, catalog, embedder_spec=embedder_spec)
        self.workspace.engine.prepare()

    @property
    def catalog(self) -> Catalog:
        return self.workspace.catalog

    def rebuild(self, catalog: Catalog) -> None:
        """Index a changed catalog (tool embeddings from the disk cache, new ones embedded)."""
        workspace = build_workspace(self.agent, catalog, embedder=self.workspace.embedder)
        workspace.engine.prepare()
        self.workspace = workspace

    def search(self, query: str) -> list[Tool]:
        """The tools ``holo-tune search AGENT QUERY`` selects, in ranking order."""
        if query_bytes(query) > MAX_QUERY_BYTES:
            raise QueryTooLong(
                f"the query is longer than {MAX_QUERY_BYTES} bytes: search with a shorter one"
            )
        workspace = self.workspace
        result = search(workspace, query, self.setting)
        chosen = set(result.selection.indices)
        tools = workspace.catalog.tools
        return [tools[i] for i in result.ranking.order.tolist() if i in chosen]

    def tool(self, full_name: str) -> Tool | None:
        return self.workspace.catalog.get(full_name)

    def pinned(self, entries: list[str]) -> list[Tool]:
        """The tools ``--pin`` names (full or bare names, matched as always_include is)."""
        catalog = self.workspace.catalog
        found = [match_always_include(catalog, entry) for entry in entries]
        indices = list(dict.fromkeys(i for i in found if i is not None))
        return [catalog.tools[i] for i in indices]


def definition(tool: Tool) -> dict[str, Any]:
    """A tool as ``tools/list`` gives it, under holo-tune's full name (what search prints and
    ``call_tool`` takes): the server's own definition, renamed."""
    raw = {k: v for k, v in tool.definition.items() if k not in ("input_schema", "name")}
    raw["inputSchema"] = dict(tool.input_schema)
    if not raw.get("description"):
        raw.pop("description", None)
    return {"name": tool.full_name, **raw}
