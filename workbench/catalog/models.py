"""The catalog: every tool a runtime sees, in that runtime's order (its :data:`CatalogView`).

Order matters: HoloDeck's ranking is a stable sort, so ties keep catalog order
(docs/holodeck-filter.md, "The catalog the filter sees").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

ToolKind = Literal["mcp", "vectorstore", "hierarchical_document", "function"]
#: ``absent``: an MCP entry of the agent that the replayed snapshot lacks (never started).
ServerState = Literal["pending", "connecting", "ok", "error", "snapshot", "local", "absent"]
#: The ``error`` of an ``absent`` server.
NOT_IN_SNAPSHOT = "not in the snapshot"
#: How a runtime sees the servers' listings (each runtime says which: ``Runtime.catalog_view``):
#: ``semantic-kernel`` as HoloDeck 0.6 registers them through Semantic Kernel (names, skips,
#: stand-in descriptions, sorted: :mod:`workbench.catalog.build`), ``listed`` as the servers
#: list them (every other runtime).
CatalogView = Literal["semantic-kernel", "listed"]
SEMANTIC_KERNEL: CatalogView = "semantic-kernel"
AS_LISTED: CatalogView = "listed"


@dataclass(frozen=True, slots=True)
class Tool:
    """One Semantic Kernel function as the runtime registers it.

    ``definition`` is the tool as its source describes it (for MCP tools: the ``tools/list`` entry
    with ``name``, ``description`` and ``inputSchema``); it is what token counting reads.
    """

    full_name: str
    plugin: str
    name: str
    description: str
    parameters: tuple[str, ...]
    kind: ToolKind
    definition: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def server(self) -> str:
        """The MCP entry (plugin) the tool comes from."""
        return self.plugin

    @property
    def search_text(self) -> str:
        """What HoloDeck's filter indexes and embeds: name, plugin, description, parameters (a
        tool listed with no description, as a runtime other than HoloDeck 0.6 sees it: name,
        plugin and parameters)."""
        described = [self.description] if self.description else []
        return " ".join([self.name, self.plugin, *described, *self.parameters])

    @property
    def input_schema(self) -> Mapping[str, Any]:
        schema = self.definition.get("inputSchema") or self.definition.get("input_schema")
        if isinstance(schema, Mapping):
            return schema
        return {"type": "object", "properties": {}}


@dataclass(slots=True)
class ServerStatus:
    """One tool source (an MCP entry, or the agent's local tools) and how its listing went."""

    name: str
    transport: str
    state: ServerState = "pending"
    error: str | None = None
    tools: int = 0
    log_path: Path | None = None
    seconds: float | None = None

    @property
    def ok(self) -> bool:
        return self.state in ("ok", "snapshot", "local")


@dataclass(slots=True)
class Catalog:
    """The tools in a runtime's order, the status of every source, and the raw listings."""

    tools: list[Tool]
    servers: list[ServerStatus]
    #: MCP ``tools/list`` output per server, as listed (what ``snapshot`` saves).
    listings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Things the runtime does quietly that the user should know (skipped collisions, ...).
    notes: list[str] = field(default_factory=list)
    #: Notes a command line should print as warnings when it loads the catalog (also in notes).
    warnings: list[str] = field(default_factory=list)
    #: How the tools were derived from the listings (the runtime's view of them).
    view: CatalogView = SEMANTIC_KERNEL
    _positions: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._positions = {tool.full_name: i for i, tool in enumerate(self.tools)}

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def position(self, full_name: str) -> int:
        """Catalog index of a tool by full name (KeyError if absent)."""
        return self._positions[full_name]

    def get(self, full_name: str) -> Tool | None:
        pos = self._positions.get(full_name)
        return None if pos is None else self.tools[pos]

    def names(self) -> list[str]:
        return [tool.full_name for tool in self.tools]

    def server(self, name: str) -> ServerStatus | None:
        return next((s for s in self.servers if s.name == name), None)

    def tools_of(self, server: str) -> Sequence[Tool]:
        return [tool for tool in self.tools if tool.plugin == server]
