"""Tools from MCP servers, local tools and snapshots, in the runtime's order."""

from workbench.catalog.models import Catalog, ServerStatus, Tool

__all__ = ["Catalog", "ServerStatus", "Tool"]
