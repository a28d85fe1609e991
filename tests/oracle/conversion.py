"""HoloDeck 0.6.40's own catalog-to-kernel conversion, run on a raw catalog (the oracle's input).

A raw catalog is the MCP tools as ``tools/list`` gives them (``name``, ``description``,
``inputSchema``), per server: a holo-tune snapshot. :func:`runtime_kernel` turns it into the
Semantic Kernel the tool filter indexes, through the published code, unmodified:

- HoloDeck 0.6.40 (its wheel): ``holodeck.tools.mcp.factory.create_mcp_plugin`` and the
  ``MCPTool`` model an agent.yaml's MCP entry is validated with (``holodeck.models.tool`` and the
  modules it imports: ``models.llm``, ``models.claude_config``, ``config.context``,
  ``config.env_loader``, ``lib.errors``, ``tools.mcp.errors``).
- Semantic Kernel 1.45.0 (its wheel): ``connectors/mcp.py`` (``MCPStdioPlugin``: connecting,
  ``load_tools``/``load_prompts``, ``_normalize_mcp_name``, the name-collision checks, parameters
  from ``inputSchema``), ``functions/kernel_function_decorator.py``,
  ``kernel_function_from_method.py``, ``kernel_function_metadata.py``,
  ``kernel_parameter_metadata.py``, ``kernel_plugin.py`` (``KernelPlugin.from_object``: the
  function order, the name validation) and ``types.py``, ``kernel_pydantic.py``,
  ``kernel_types.py``,
  ``schema/kernel_json_schema_builder.py``, ``utils/validation.py``,
  ``utils/feature_stage_decorator.py``, ``const.py`` and ``exceptions/``.

Stood in (the smallest pieces the path above calls, with Semantic Kernel's semantics):

- ``semantic_kernel.Kernel``: ``plugins`` (a dict) and the two branches of
  ``KernelFunctionExtension`` HoloDeck takes: ``add_plugin(obj)`` stores
  ``KernelPlugin.from_object(obj.name, obj)`` under ``obj.name`` and calls
  ``obj.added_to_kernel(kernel)``; ``add_function(plugin_name, function)`` makes the plugin
  (``KernelPlugin(name, functions=function)``) or adds the function to it.
- ``semantic_kernel.functions.kernel_function.KernelFunction``: the pydantic model with its
  ``metadata`` field, the accessors SK defines on it (``name``, ``plugin_name``,
  ``fully_qualified_name``, ``description``, ``parameters``) and ``function_copy``; no invocation,
  telemetry or filters (nothing here invokes a function).
- the MCP session (set on the plugin before ``__aenter__``, so SK's connect takes its
  "session given" branch): ``initialize()`` does nothing, ``list_tools()`` answers the
  snapshot's tools as mcp 1.x's ``types.Tool`` (``name``, ``description`` defaulting to None,
  ``inputSchema`` required), ``list_prompts()`` answers none (a snapshot holds no prompts).
- every other ``semantic_kernel``, ``mcp`` or ``holodeck`` module: attributes are empty classes
  (used in annotations and imports only).
- HoloDeck's ``AgentFactory._register_mcp_tools`` and ``_create_search_kernel_function`` (in a
  module that imports the whole runtime) are their calls, in their order: per MCP entry
  ``create_mcp_plugin(entry)``, ``await plugin.__aenter__()``, ``kernel.add_plugin(plugin)``; per
  vectorstore tool the same ``search_wrapper(query: str)`` decorated with SK's
  ``kernel_function(name, description)`` and added to plugin ``vectorstore`` first.

The modules live in ``sys.modules`` only while :func:`runtime_kernel` runs; whatever was there
(the installed ``mcp``, the tool filter's stand-ins) is put back afterwards.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import shutil
import sys
import tempfile
import types
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from oracle.wheels import HOLODECK_WHEEL, SK_WHEEL, unpack

_SK_REAL = (
    "semantic_kernel/connectors/mcp.py",
    "semantic_kernel/const.py",
    "semantic_kernel/functions/kernel_function_decorator.py",
    "semantic_kernel/functions/kernel_function_from_method.py",
    "semantic_kernel/functions/kernel_function_metadata.py",
    "semantic_kernel/functions/kernel_parameter_metadata.py",
    "semantic_kernel/functions/kernel_plugin.py",
    "semantic_kernel/functions/types.py",
    "semantic_kernel/kernel_pydantic.py",
    "semantic_kernel/kernel_types.py",
    "semantic_kernel/schema/kernel_json_schema_builder.py",
    "semantic_kernel/utils/feature_stage_decorator.py",
    "semantic_kernel/utils/validation.py",
)
_HOLODECK_REAL = (
    "holodeck/config/context.py",
    "holodeck/config/env_loader.py",
    "holodeck/lib/errors.py",
    "holodeck/models/claude_config.py",
    "holodeck/models/llm.py",
    "holodeck/models/tool.py",
    "holodeck/tools/mcp/errors.py",
    "holodeck/tools/mcp/factory.py",
)
_ROOTS = ("semantic_kernel", "mcp", "holodeck")

#: Semantic Kernel 1.45's ``FUNCTION_NAME_REGEX`` with ``.`` added, and its
#: ``FUNCTION_PARAM_NAME_REGEX`` opened to any name. SK refuses a function name with a dot
#: (``_normalize_mcp_name`` keeps dots) and a parameter name outside ``A-Za-z0-9_-``, so HoloDeck
#: cannot load a server that has one (the bfcl data set's ``math.factorial``, ``año_vehiculo``);
#: with these the oracle still ranks such a catalog as the runtime would if it loaded it.
LENIENT_FUNCTION_NAME = r"^[0-9A-Za-z_.-]+$"
LENIENT_PARAMETER_NAME = r"^.+$"


@lru_cache(maxsize=1)
def runtime_root() -> Path:
    """The files :func:`runtime_kernel` runs, extracted once per test session into a temp dir."""
    into = Path(tempfile.mkdtemp(prefix="holo-tune-oracle-"))
    atexit.register(shutil.rmtree, into, ignore_errors=True)
    with zipfile.ZipFile(SK_WHEEL) as archive:
        exceptions = [n for n in archive.namelist() if n.startswith("semantic_kernel/exceptions/")]
    unpack(SK_WHEEL, [*_SK_REAL, *exceptions], into)
    return unpack(HOLODECK_WHEEL, _HOLODECK_REAL, into)


class _EmptyClass(type):
    """An empty class whose attributes are empty classes too (``types.Tool``), subscriptable."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _empty(name)

    def __getitem__(cls, _: Any) -> Any:
        return cls


def _empty(name: str) -> Any:
    return _EmptyClass(name, (), {})


class _Empty(types.ModuleType):
    """A module none of whose code runs: every attribute is an empty class."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        cls = _empty(name)
        setattr(self, name, cls)
        return cls


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Real files from ``root`` where unpacked, bare packages above them, empty modules else."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name.split(".")[0] not in _ROOTS:
            return None
        base = self.root.joinpath(*name.split("."))
        if base.with_suffix(".py").is_file():
            return importlib.util.spec_from_file_location(name, base.with_suffix(".py"))
        if base.is_dir() and (base / "__init__.py").is_file() and name.endswith(".exceptions"):
            return importlib.util.spec_from_file_location(
                name, base / "__init__.py", submodule_search_locations=[str(base)]
            )
        spec = importlib.util.spec_from_loader(name, self, is_package=True)
        if spec is not None and base.is_dir():
            spec.submodule_search_locations = [str(base)]
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Empty(spec.name)
        module.__path__ = list(spec.submodule_search_locations or [])
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Tool:
    """mcp 1.x ``types.Tool`` as Semantic Kernel reads it."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.name = str(raw["name"])
        self.description = raw.get("description")
        self.inputSchema = raw["inputSchema"]


class _Session:
    """The MCP client session, answering from a snapshot."""

    _request_id = 0

    def __init__(self, tools: Sequence[Mapping[str, Any]]) -> None:
        self.tools = [_Tool(raw) for raw in tools]

    async def initialize(self) -> None:
        return None

    async def list_tools(self) -> Any:
        return types.SimpleNamespace(tools=self.tools)

    async def list_prompts(self) -> Any:
        return types.SimpleNamespace(prompts=[])


class Kernel:
    """``semantic_kernel.Kernel`` reduced to its plugins and the two ways HoloDeck fills them."""

    def __init__(self, kernel_plugin: Any) -> None:
        self.plugins: dict[str, Any] = {}
        self._kernel_plugin = kernel_plugin

    def add_plugin(self, plugin: Any) -> Any:
        name = getattr(plugin, "name", plugin.__class__.__name__)
        self.plugins[name] = self._kernel_plugin.from_object(
            plugin_name=name, plugin_instance=plugin, description=None
        )
        if callable(getattr(plugin, "added_to_kernel", None)):
            plugin.added_to_kernel(self)
        return self.plugins[name]

    def add_function(self, plugin_name: str, function: Any) -> None:
        if plugin_name not in self.plugins:
            self.plugins[plugin_name] = self._kernel_plugin(name=plugin_name, functions=function)
        else:
            self.plugins[plugin_name][function.name] = function


def _kernel_function_module(metadata_cls: Any, base: Any) -> types.ModuleType:
    """``semantic_kernel.functions.kernel_function`` with the stand-in ``KernelFunction``."""
    from copy import copy, deepcopy

    class KernelFunction(base):  # type: ignore[misc, valid-type]
        metadata: metadata_cls  # type: ignore[valid-type]

        @property
        def name(self) -> str:
            return str(self.metadata.name)

        @property
        def plugin_name(self) -> str:
            return str(self.metadata.plugin_name or "")

        @property
        def fully_qualified_name(self) -> str:
            return str(self.metadata.fully_qualified_name)

        @property
        def description(self) -> str | None:
            return self.metadata.description  # type: ignore[no-any-return]

        @property
        def parameters(self) -> list[Any]:
            return list(self.metadata.parameters)

        def function_copy(self, plugin_name: str | None = None) -> Any:
            cop = copy(self)
            cop.metadata = deepcopy(self.metadata)
            if plugin_name:
                cop.metadata.plugin_name = plugin_name
            return cop

    module = types.ModuleType("semantic_kernel.functions.kernel_function")
    module.KernelFunction = KernelFunction  # type: ignore[attr-defined]
    return module


@contextmanager
def _runtime_modules(lenient_names: bool) -> Iterator[dict[str, types.ModuleType]]:
    owned = [n for n in sys.modules if n.split(".")[0] in _ROOTS]
    saved = {n: sys.modules.pop(n) for n in owned}
    finder = _Finder(runtime_root())
    sys.meta_path.insert(0, finder)
    try:
        if lenient_names:
            validation = importlib.import_module("semantic_kernel.utils.validation")
            validation.FUNCTION_NAME_REGEX = LENIENT_FUNCTION_NAME  # type: ignore[attr-defined]
            validation.FUNCTION_PARAM_NAME_REGEX = LENIENT_PARAMETER_NAME  # type: ignore[attr-defined]
        pydantic_base = importlib.import_module("semantic_kernel.kernel_pydantic").KernelBaseModel
        metadata = importlib.import_module("semantic_kernel.functions.kernel_function_metadata")
        module = _kernel_function_module(metadata.KernelFunctionMetadata, pydantic_base)
        sys.modules[module.__name__] = module
        kernel_plugin = importlib.import_module("semantic_kernel.functions.kernel_plugin")
        sys.modules["semantic_kernel"].Kernel = Kernel  # type: ignore[attr-defined]
        yield {
            "mcp": importlib.import_module("semantic_kernel.connectors.mcp"),
            "decorator": importlib.import_module(
                "semantic_kernel.functions.kernel_function_decorator"
            ),
            "from_method": importlib.import_module(
                "semantic_kernel.functions.kernel_function_from_method"
            ),
            "kernel_plugin": kernel_plugin,
            "factory": importlib.import_module("holodeck.tools.mcp.factory"),
            "tool": importlib.import_module("holodeck.models.tool"),
        }
    finally:
        sys.meta_path.remove(finder)
        for name in [n for n in sys.modules if n.split(".")[0] in _ROOTS]:
            del sys.modules[name]
        sys.modules.update(saved)


def _vectorstore_function(modules: Mapping[str, types.ModuleType], entry: Mapping[str, Any]) -> Any:
    """HoloDeck's ``_create_search_kernel_function`` for one vectorstore tool."""
    kernel_function = modules["decorator"].kernel_function  # type: ignore[attr-defined]

    @kernel_function(name=entry["name"], description=entry.get("description"))
    async def search_wrapper(query: str) -> str:
        """Search the knowledge base for relevant content."""
        return query

    from_method = modules["from_method"].KernelFunctionFromMethod  # type: ignore[attr-defined]
    return from_method(method=search_wrapper, plugin_name="vectorstore")


def mcp_entries(
    agent_tools: Sequence[Mapping[str, Any]], servers: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The MCP entries the runtime starts: the agent's (config order) that the snapshot lists,
    then one entry per server only the snapshot has (a data set's catalog)."""
    entries = [dict(t) for t in agent_tools if t.get("type") == "mcp" and t.get("name") in servers]
    named = {e["name"] for e in entries}
    entries += [
        {"name": name, "type": "mcp", "description": name, "command": "npx", "args": [name]}
        for name in servers
        if name not in named
    ]
    return entries


async def _register(
    modules: Mapping[str, types.ModuleType],
    agent_tools: Sequence[Mapping[str, Any]],
    servers: Mapping[str, Sequence[Mapping[str, Any]]],
) -> Kernel:
    kernel = Kernel(modules["kernel_plugin"].KernelPlugin)  # type: ignore[attr-defined]
    for entry in agent_tools:
        if entry.get("type") == "vectorstore":
            kernel.add_function("vectorstore", _vectorstore_function(modules, entry))
    mcp_tool = modules["tool"].MCPTool  # type: ignore[attr-defined]
    create_mcp_plugin = modules["factory"].create_mcp_plugin  # type: ignore[attr-defined]
    for entry in mcp_entries(agent_tools, servers):
        plugin = create_mcp_plugin(mcp_tool.model_validate(entry))
        plugin.session = _Session(servers[entry["name"]])
        await plugin.__aenter__()
        try:
            kernel.add_plugin(plugin)
        finally:
            await plugin.__aexit__(None, None, None)
    return kernel


def runtime_kernel(
    servers: Mapping[str, Sequence[Mapping[str, Any]]],
    agent_tools: Sequence[Mapping[str, Any]] = (),
    *,
    lenient_names: bool = False,
) -> Kernel:
    """The kernel HoloDeck 0.6.40 builds for an agent whose MCP servers list ``servers``.

    ``agent_tools`` is the agent.yaml's ``tools`` list (MCP entries and vectorstore tools are
    registered; a data set's agent has none: its servers come from the snapshot alone). Raises
    what the runtime raises. ``lenient_names`` is the one change ever made to the published code:
    Semantic Kernel's name patterns then accept what it refuses (see :data:`LENIENT_FUNCTION_NAME`).
    """
    with _runtime_modules(lenient_names) as modules:
        return asyncio.run(_register(modules, agent_tools, servers))


async def _reserved(modules: Mapping[str, types.ModuleType]) -> set[str]:
    entry = {"name": "s", "type": "mcp", "description": "s", "command": "npx", "args": ["s"]}
    mcp_tool = modules["tool"].MCPTool  # type: ignore[attr-defined]
    plugin = modules["factory"].create_mcp_plugin(mcp_tool.model_validate(entry))  # type: ignore[attr-defined]
    plugin.session = _Session([{"name": "any", "inputSchema": {"type": "object"}}])
    await plugin.__aenter__()
    try:
        return set(plugin._mcp_reserved_attribute_names)
    finally:
        await plugin.__aexit__(None, None, None)


def plugin_attributes() -> set[str]:
    """The names Semantic Kernel's MCP plugin will not give a tool: the attributes of a connected
    ``MCPStdioPlugin`` as HoloDeck creates it (SK takes ``dir(self)`` loading the first tool)."""
    with _runtime_modules(False) as modules:
        return asyncio.run(_reserved(modules))


def snapshot_servers(path: Path) -> dict[str, list[dict[str, Any]]]:
    """A snapshot file's servers, read with nothing of holo-tune's: name -> tools/list."""
    import json

    data = json.loads(path.read_text(encoding="utf-8"))
    return {name: list(entry["tools"]) for name, entry in data["servers"].items()}
