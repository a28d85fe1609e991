"""From the agent's tool entries and the servers' listings to the catalog a runtime sees.

Pure: no I/O except reading a function tool's source file (parsed, never run). The listings stay
as they came (``Catalog.listings``, what a snapshot saves); the tools are derived from them as the
runtime sees them, its :data:`~workbench.catalog.models.CatalogView` (``Runtime.catalog_view``).

``semantic-kernel`` (HoloDeck 0.6): the order, names and texts are Semantic Kernel's as HoloDeck
0.6.40 registers them (docs/holodeck-filter.md, "The catalog the filter sees"):

1. plugin ``vectorstore``: every vectorstore tool in config order, one ``query`` parameter;
2. one plugin per MCP entry (config order, then snapshot-only servers), its functions sorted by
   local name; the local name replaces every character outside ``A-Za-z0-9_.-`` with ``-``, and a
   tool whose local name is already taken, or is one of the plugin's own attributes
   (:data:`SK_PLUGIN_ATTRIBUTES`), is skipped; a tool listed with no description is indexed with
   :data:`UNDESCRIBED_MCP`;
3. plugin ``hierarchical_document``; 4. plugin ``function_tools``. Prompt tools are not registered.

``listed`` (every other runtime: serve, FastMCP, Claude Code, the providers, Argus, PizzaPi,
HoloDeck 0.7, which has no Semantic Kernel): the same plugins, but each server's tools in the
order it lists them, every one of them (a name Semantic Kernel's plugin keeps for itself,
``connect``, is a tool like any other), each with the description it was listed with (none:
indexed by its name and parameters). The names are holo-tune's full names as in the other view,
``<server>-<local name>``; only a tool whose full name is already taken is skipped (with a note:
a full name names one tool).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.catalog.models import (
    AS_LISTED,
    SEMANTIC_KERNEL,
    Catalog,
    CatalogView,
    ServerStatus,
    Tool,
)
from workbench.catalog.pyfunc import FunctionNotFound, PyParam, read_function_params
from workbench.catalog.specs import AgentTools, LocalKind, LocalToolSpec, McpServerSpec

_INVALID = re.compile(r"[^A-Za-z0-9_.-]")

#: The description Semantic Kernel gives an MCP tool listed with none: it wraps each tool in
#: ``functools.partial`` and its ``kernel_function`` decorator falls back to the wrapper's
#: ``__doc__``, i.e. the docstring of Python's ``partial`` (of the Python running HoloDeck; this
#: is the one holo-tune runs on). The filter's own ``Function <f> from plugin <p>`` is never
#: reached for an MCP tool.
UNDESCRIBED_MCP = functools.partial.__doc__ or ""

#: Semantic Kernel 1.45's pattern for a function name and for a parameter name. A local name keeps
#: any ``.``, and a property name is taken as it is: either outside this pattern fails the plugin's
#: build, and HoloDeck stops the agent (``AgentFactoryError``).
_SK_NAME = re.compile(r"[0-9A-Za-z_-]+")


class _Plain:
    """A class with nothing of its own: its instances' ``dir()`` is what every object has."""


#: The local names Semantic Kernel 1.45's MCP plugin will not give a tool, because its own
#: attributes have them (registering would overwrite ``close``, ``connect``, ...): it skips such a
#: tool with a warning. SK takes ``dir(plugin)`` of the connected ``MCPStdioPlugin`` HoloDeck
#: creates; the Python-level names are those every instance of a class has.
SK_PLUGIN_ATTRIBUTES = frozenset(
    {
        *dir(_Plain()),
        *("__aenter__", "__aexit__"),
        *("_client_kwargs", "_current_task", "_exit_stack", "_has_mcp_function_name_conflict"),
        *("_inner_connect", "_is_mcp_local_name_taken", "_is_sampling_approved"),
        *("_mcp_registered_names", "_mcp_reserved_attribute_names"),
        *("_sampling_auto_approved_warning_logged", "_stop_event", "added_to_kernel", "args"),
        *("call_tool", "close", "command", "connect", "description", "encoding", "env"),
        *("get_mcp_client", "get_prompt", "is_experimental", "kernel", "load_prompts"),
        *("load_prompts_flag", "load_tools", "load_tools_flag", "logging_callback"),
        *("message_handler", "name", "request_timeout", "sampling_auto_approve"),
        *("sampling_callback", "sampling_consent_callback", "session", "stage_status"),
    }
)

#: Plugin names Semantic Kernel uses for HoloDeck's local tools, in registration order.
VECTORSTORE = "vectorstore"
HIERARCHICAL_DOCUMENT = "hierarchical_document"
FUNCTION_TOOLS = "function_tools"


@dataclass(slots=True)
class ServerListing:
    """What enumerating (or replaying) one MCP server gave: its status and its tools/list."""

    status: ServerStatus
    #: MCP tools as ``tools/list`` gives them (``name``, ``description``, ``inputSchema``, ...).
    tools: list[dict[str, Any]] = field(default_factory=list)
    #: Pages the listing took (``nextCursor`` followed); 1 for a snapshot.
    pages: int = 1
    #: The names of the server's prompts (a live listing; a snapshot holds none).
    prompts: list[str] = field(default_factory=list)


def local_name(mcp_name: str) -> str:
    """The Semantic Kernel function name of an MCP tool."""
    return _INVALID.sub("-", mcp_name)


def runtime_description(description: str | None, function: str, plugin: str) -> str:
    """The description the filter indexes: the tool's own, or SK's stand-in when empty."""
    return description or f"Function {function} from plugin {plugin}"


def schema_parameters(schema: Any) -> tuple[str, ...]:
    """Top-level ``inputSchema`` property names, in order (SK drops their descriptions)."""
    if not isinstance(schema, Mapping):
        return ()
    props = schema.get("properties")
    return tuple(str(k) for k in props) if isinstance(props, Mapping) else ()


def _some(items: Sequence[str]) -> str:
    return ", ".join(items[:3]) + (", ..." if len(items) > 3 else "")


def refused_names(plugin: str, tools: Sequence[Tool]) -> list[str]:
    """A note when Semantic Kernel refuses a function or parameter name of this plugin."""
    names = [repr(t.name) for t in tools if not _SK_NAME.fullmatch(t.name)]
    params = [
        f"{p!r} (in {t.name!r})" for t in tools for p in t.parameters if not _SK_NAME.fullmatch(p)
    ]
    parts = [f"{len(names)} function name(s) with a '.' ({_some(names)})"] if names else []
    if params:
        parts.append(f"{len(params)} parameter name(s) outside A-Za-z0-9_-: {_some(params)}")
    if not parts:
        return []
    return [
        f"{plugin}: Semantic Kernel refuses {' and '.join(parts)}: "
        "HoloDeck fails to start an agent with this server"
    ]


def _mcp_tool(plugin: str, fn: str, raw: Mapping[str, Any], description: str) -> Tool:
    schema = raw.get("inputSchema", raw.get("input_schema"))
    return Tool(
        full_name=f"{plugin}-{fn}",
        plugin=plugin,
        name=fn,
        description=description,
        parameters=schema_parameters(schema),
        kind="mcp",
        definition=dict(raw),
    )


def mcp_tools(plugin: str, listing: Sequence[Mapping[str, Any]]) -> tuple[list[Tool], list[str]]:
    """One MCP plugin's functions as Semantic Kernel registers them (HoloDeck 0.6's view), and
    notes on what the runtime did quietly."""
    notes: list[str] = []
    taken: dict[str, str] = {}
    kept: list[tuple[str, Mapping[str, Any]]] = []
    for raw in listing:
        name = str(raw.get("name", ""))
        fn = local_name(name)
        if fn in taken:
            notes.append(
                f"{plugin}: tool {name!r} is skipped: its name becomes {fn!r}, "
                f"already taken by {taken[fn]!r}"
            )
            continue
        if fn in SK_PLUGIN_ATTRIBUTES:
            notes.append(
                f"{plugin}: tool {name!r} is skipped: Semantic Kernel's MCP plugin has an "
                f"attribute named {fn!r} of its own"
            )
            continue
        taken[fn] = name
        kept.append((fn, raw))
    kept.sort(key=lambda pair: pair[0])
    tools = []
    undescribed = []
    for fn, raw in kept:
        description = str(raw.get("description") or "")
        if not description:
            undescribed.append(fn)
        tools.append(_mcp_tool(plugin, fn, raw, description or UNDESCRIBED_MCP))
    notes += refused_names(plugin, tools)
    if undescribed:
        notes.append(
            f"{plugin}: {len(undescribed)} tool(s) have no description (the runtime indexes "
            f"the docstring of Python's functools.partial instead): {', '.join(undescribed)}"
        )
    return tools, notes


def listed_tools(plugin: str, listing: Sequence[Mapping[str, Any]]) -> tuple[list[Tool], list[str]]:
    """One MCP server's tools as it lists them (the ``listed`` view): its order, every tool, its
    own descriptions (empty where it gives none); a tool whose full name another already has
    is skipped, with a note (``check``: ``name-collision``)."""
    notes: list[str] = []
    taken: dict[str, str] = {}
    tools: list[Tool] = []
    for raw in listing:
        name = str(raw.get("name", ""))
        fn = local_name(name)
        if fn in taken:
            notes.append(
                f"{plugin}: tool {name!r} is skipped: its full name {plugin}-{fn} is "
                f"already {taken[fn]!r}'s"
            )
            continue
        taken[fn] = name
        tools.append(_mcp_tool(plugin, fn, raw, str(raw.get("description") or "")))
    return tools, notes


def server_tools(
    view: CatalogView, plugin: str, listing: Sequence[Mapping[str, Any]]
) -> tuple[list[Tool], list[str]]:
    """One MCP server's tools under ``view``, and the notes that view has on them."""
    if view == AS_LISTED:
        return listed_tools(plugin, listing)
    return mcp_tools(plugin, listing)


def _schema_of(params: Sequence[PyParam]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p.name: p.schema for p in params},
        "required": [p.name for p in params if p.required],
    }


def prompt_notes(plugin: str, prompts: Sequence[str]) -> list[str]:
    """A note when a server offers prompts: the runtime ranks them, the catalog holds none."""
    if not prompts:
        return []
    return [
        f"{plugin}: the server also offers {len(prompts)} prompt(s) ({_some(prompts)}): "
        "HoloDeck 0.6 registers them as functions its filter ranks beside the tools; holo-tune's "
        "catalog holds the tools only, so its rankings for this agent can differ from the runtime's"
    ]


def _query_tool(spec: LocalToolSpec, plugin: str) -> Tool:
    """A vectorstore / hierarchical_document tool: HoloDeck's ``search_wrapper(query: str)``."""
    return Tool(
        full_name=f"{plugin}-{spec.name}",
        plugin=plugin,
        name=spec.name,
        description=runtime_description(spec.description, spec.name, plugin),
        parameters=("query",),
        kind="vectorstore" if plugin == VECTORSTORE else "hierarchical_document",
        definition={
            "name": spec.name,
            "description": spec.description,
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    )


def _function_tool(spec: LocalToolSpec) -> tuple[Tool, list[str]]:
    """A function tool, its parameters from the source's signature (or the YAML's keys)."""
    notes: list[str] = []
    where = f"{FUNCTION_TOOLS}: {spec.name}"
    params: list[PyParam] | None = None
    if spec.file is not None and spec.function:
        try:
            params = read_function_params(spec.file, spec.function)
        except FunctionNotFound:
            notes.append(f"{where}: no function {spec.function!r} in {spec.file}")
        except (OSError, UnicodeDecodeError) as err:
            notes.append(f"{where}: cannot read {spec.file}: {err}")
        except SyntaxError as err:
            notes.append(f"{where}: {spec.file}:{err.lineno}: syntax error")
        except (RecursionError, MemoryError):
            notes.append(f"{where}: {spec.file}: nested too deeply to read")
    if params is None:
        params = [PyParam(k, None, {}, True) for k in spec.yaml_parameters]
        notes.append(
            f"{where}: parameters taken from the YAML (the runtime fails to load this tool)"
        )
    tool = Tool(
        full_name=f"{FUNCTION_TOOLS}-{spec.name}",
        plugin=FUNCTION_TOOLS,
        name=spec.name,
        description=runtime_description(spec.description, spec.name, FUNCTION_TOOLS),
        parameters=tuple(p.search_text for p in params),
        kind="function",
        definition={
            "name": spec.name,
            "description": spec.description,
            "inputSchema": _schema_of(params),
        },
    )
    return tool, notes


def _source_notes(specs: Sequence[LocalToolSpec], plugin: str) -> list[str]:
    return [
        f"{plugin}: {s.name}: source {s.source} not found (the runtime fails to start the agent)"
        for s in specs
        if s.source is not None and not s.source.exists()
    ]


def _local_plugin(name: str, tools: Sequence[Tool]) -> ServerStatus:
    return ServerStatus(name=name, transport="local", state="local", tools=len(tools))


def _locals(agent: AgentTools, kind: LocalKind) -> list[LocalToolSpec]:
    return [spec for spec in agent.local() if spec.kind == kind]


def _mcp_notes(spec: McpServerSpec) -> list[str]:
    notes = []
    if spec.transport != "stdio":
        notes.append(
            f"{spec.name}: HoloDeck 0.6.40 starts only stdio MCP servers; "
            f"this {spec.transport} entry fails at run time"
        )
    if not spec.load_tools:
        notes.append(f"{spec.name}: load_tools is false: the runtime registers none of its tools")
    return notes


def build_catalog(
    agent: AgentTools, servers: Sequence[ServerListing], view: CatalogView = SEMANTIC_KERNEL
) -> Catalog:
    """The catalog a runtime sees (``view``: its ``catalog_view``; by default HoloDeck 0.6's,
    the default runtime's) from the agent's entries and each MCP server's listing.

    ``servers`` is in plugin order (the agent's MCP entries in config order, then any
    snapshot-only servers). A server in error keeps its status (with the error) and adds no tool.
    The notes about HoloDeck 0.6 itself (its transports, ``load_tools``, prompts) are made in
    its view only.
    """
    holodeck = view == SEMANTIC_KERNEL
    tools: list[Tool] = []
    statuses: list[ServerStatus] = []
    notes: list[str] = []
    listings: dict[str, list[dict[str, Any]]] = {}

    vector = [_query_tool(s, VECTORSTORE) for s in _locals(agent, "vectorstore")]
    notes += _source_notes(_locals(agent, "vectorstore"), VECTORSTORE)
    if vector:
        tools += vector
        statuses.append(_local_plugin(VECTORSTORE, vector))

    specs = {spec.name: spec for spec in agent.mcp()}
    for server in servers:
        name = server.status.name
        if name in specs and holodeck:
            notes += _mcp_notes(specs[name])
        if not server.status.ok:
            statuses.append(server.status)
            continue
        plugin_tools, plugin_notes = server_tools(view, name, server.tools)
        tools += plugin_tools
        notes += plugin_notes + (prompt_notes(name, server.prompts) if holodeck else [])
        server.status.tools = len(plugin_tools)
        statuses.append(server.status)
        listings[name] = [dict(t) for t in server.tools]

    documents = [
        _query_tool(s, HIERARCHICAL_DOCUMENT) for s in _locals(agent, "hierarchical_document")
    ]
    notes += _source_notes(_locals(agent, "hierarchical_document"), HIERARCHICAL_DOCUMENT)
    if documents:
        tools += documents
        statuses.append(_local_plugin(HIERARCHICAL_DOCUMENT, documents))

    functions: list[Tool] = []
    for spec in _locals(agent, "function"):
        tool, fn_notes = _function_tool(spec)
        functions.append(tool)
        notes += fn_notes
    if functions:
        tools += functions
        statuses.append(_local_plugin(FUNCTION_TOOLS, functions))

    notes += [
        f"prompt tool {s.name!r} is not registered by the runtime" for s in _locals(agent, "prompt")
    ]
    return Catalog(tools=tools, servers=statuses, listings=listings, notes=notes, view=view)
