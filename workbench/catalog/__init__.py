"""Tools from MCP servers, local tools and snapshots, in the runtime's order."""

from workbench.catalog.build import ServerListing, build_catalog
from workbench.catalog.enumerate import aload_catalog, load_catalog
from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.catalog.snapshot import load_snapshot, save_snapshot

__all__ = [
    "Catalog",
    "ServerListing",
    "ServerStatus",
    "Tool",
    "aload_catalog",
    "build_catalog",
    "load_catalog",
    "load_snapshot",
    "save_snapshot",
]
