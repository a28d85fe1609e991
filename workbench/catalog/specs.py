"""The agent's tool entries, reduced to what enumeration and catalog building need.

The config layer mirrors HoloDeck's pydantic models; this module reads them by HoloDeck's field
names (duck-typed, so the catalog does not depend on the config package's classes) into two small
frozen records: :class:`McpServerSpec` (an MCP entry: how to reach it) and :class:`LocalToolSpec`
(a vectorstore, hierarchical_document, function or prompt tool: how the runtime registers it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from workbench.limits import read_text

LocalKind = Literal["vectorstore", "hierarchical_document", "function", "prompt"]

#: HoloDeck's ``MCPTool.request_timeout`` default (seconds).
DEFAULT_REQUEST_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class McpServerSpec:
    """One MCP entry of the agent: its plugin name and how to reach the server."""

    name: str
    transport: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    #: Extra environment for a stdio server, as HoloDeck resolves it (env_file, env, config).
    env: Mapping[str, str] | None = None
    #: Set when the environment could not be resolved (an unreadable env_file): the server fails.
    env_error: str | None = None
    cwd: Path | None = None
    encoding: str = "utf-8"
    url: str | None = None
    headers: Mapping[str, str] | None = None
    timeout: float | None = None
    sse_read_timeout: float | None = None
    terminate_on_close: bool = True
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    load_tools: bool = True
    description: str = ""


@dataclass(frozen=True, slots=True)
class LocalToolSpec:
    """A tool the runtime registers itself (no server): vectorstore, document, function, prompt."""

    kind: LocalKind
    name: str
    description: str = ""
    #: Function tools: the Python file (resolved against the agent's directory) and function.
    file: Path | None = None
    function: str | None = None
    #: Function tools: the YAML ``parameters`` keys (used when the file cannot be read).
    yaml_parameters: tuple[str, ...] = ()
    #: Vectorstore and hierarchical_document tools: a local ``source`` (resolved), if any.
    source: Path | None = None


ToolSpec = McpServerSpec | LocalToolSpec


@dataclass(frozen=True, slots=True)
class AgentTools:
    """Every tool entry of an agent in config order, and where the agent file lives."""

    entries: tuple[ToolSpec, ...]
    base_dir: Path = field(default_factory=Path.cwd)

    def mcp(self) -> list[McpServerSpec]:
        return [e for e in self.entries if isinstance(e, McpServerSpec)]

    def local(self) -> list[LocalToolSpec]:
        return [e for e in self.entries if isinstance(e, LocalToolSpec)]


def _value(obj: Any) -> Any:
    """The plain value of an enum member (HoloDeck's TransportType, CommandType), else obj."""
    return getattr(obj, "value", obj)


def _str_map(raw: Any) -> dict[str, str] | None:
    if raw is None:
        return None
    return {str(k): str(v) for k, v in dict(raw).items()}


def _opt_float(raw: Any) -> float | None:
    return None if raw is None else float(raw)


def read_env_file(path: Path) -> dict[str, str]:
    """A ``.env`` file the way HoloDeck's ``load_env_file`` reads it: KEY=VALUE lines, stripped.

    No quote removal and no ``export`` prefix handling: HoloDeck does neither, and the server must
    see what it would see at run time.
    """
    values: dict[str, str] = {}
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key.strip()] = value.strip()
    return values


def resolve_env(entry: Any, base_dir: Path) -> tuple[dict[str, str] | None, str | None]:
    """The environment HoloDeck gives a stdio server, and an error if it cannot be built.

    HoloDeck (tools/mcp/factory.py) layers ``env_file``, then ``env``, then ``MCP_CONFIG`` (the
    entry's ``config`` as JSON), and passes the result (or None when empty) to the MCP stdio
    client, which merges it over a small default set (HOME, LOGNAME, PATH, SHELL, TERM, USER):
    the rest of ``os.environ`` is NOT inherited. ``env`` values arrive here already substituted
    by the config loader. A relative ``env_file`` is read from the agent's directory.
    """
    env: dict[str, str] = {}
    env_file = getattr(entry, "env_file", None)
    if env_file:
        path = Path(env_file)
        if not path.is_absolute():
            path = base_dir / path
        try:
            env.update(read_env_file(path))
        except (OSError, UnicodeDecodeError) as err:
            return None, f"cannot read env_file {env_file}: {err.__class__.__name__}: {err}"
    env.update(_str_map(getattr(entry, "env", None)) or {})
    config = getattr(entry, "config", None)
    if config:
        env["MCP_CONFIG"] = json.dumps(config)
    return (env or None), None


def mcp_spec(entry: Any, base_dir: Path) -> McpServerSpec:
    """An MCP entry (HoloDeck's ``MCPTool`` field names) as a :class:`McpServerSpec`.

    Stdio servers run in the agent's directory, where ``holodeck`` is normally started, so
    relative paths in ``args`` (``./data``) mean what they mean at run time.
    """
    env, env_error = resolve_env(entry, base_dir)
    command = _value(getattr(entry, "command", None))
    terminate = getattr(entry, "terminate_on_close", None)
    return McpServerSpec(
        name=str(entry.name),
        transport=str(_value(getattr(entry, "transport", None)) or "stdio"),
        command=None if command is None else str(command),
        args=tuple(str(a) for a in (getattr(entry, "args", None) or ())),
        env=env,
        env_error=env_error,
        cwd=base_dir,
        encoding=getattr(entry, "encoding", None) or "utf-8",
        url=getattr(entry, "url", None),
        headers=_str_map(getattr(entry, "headers", None)),
        timeout=_opt_float(getattr(entry, "timeout", None)),
        sse_read_timeout=_opt_float(getattr(entry, "sse_read_timeout", None)),
        terminate_on_close=True if terminate is None else bool(terminate),
        request_timeout=float(getattr(entry, "request_timeout", None) or DEFAULT_REQUEST_TIMEOUT),
        load_tools=bool(getattr(entry, "load_tools", True)),
        description=str(getattr(entry, "description", "") or ""),
    )


def local_spec(entry: Any, kind: LocalKind, base_dir: Path) -> LocalToolSpec:
    """A vectorstore, hierarchical_document, function or prompt entry as a LocalToolSpec."""
    file = getattr(entry, "file", None) if kind == "function" else None
    path: Path | None = None
    if file:
        path = Path(file)
        if not path.is_absolute():
            path = base_dir / path
    yaml_params = getattr(entry, "parameters", None) if kind == "function" else None
    source = getattr(entry, "source", None) if kind != "function" else None
    return LocalToolSpec(
        kind=kind,
        name=str(entry.name),
        description=str(getattr(entry, "description", "") or ""),
        file=path,
        function=getattr(entry, "function", None) if kind == "function" else None,
        yaml_parameters=tuple(str(k) for k in (yaml_params or {})),
        source=_local_source(source, base_dir),
    )


def _local_source(source: Any, base_dir: Path) -> Path | None:
    """A data source that is a local path (not a URL), resolved against the agent's directory."""
    if not isinstance(source, str) or not source or "://" in source:
        return None
    path = Path(source)
    return path if path.is_absolute() else base_dir / path


_LOCAL_KINDS: dict[str, LocalKind] = {
    "vectorstore": "vectorstore",
    "hierarchical_document": "hierarchical_document",
    "function": "function",
    "prompt": "prompt",
}


def specs_from_entries(entries: Iterable[Any], base_dir: Path) -> AgentTools:
    """Tool entries (objects with HoloDeck's field names and ``type``) in config order."""
    out: list[ToolSpec] = []
    for entry in entries:
        kind = str(_value(getattr(entry, "type", "")))
        if kind == "mcp":
            out.append(mcp_spec(entry, base_dir))
        elif kind in _LOCAL_KINDS:
            out.append(local_spec(entry, _LOCAL_KINDS[kind], base_dir))
    return AgentTools(entries=tuple(out), base_dir=base_dir)


def specs_from_agent(agent: Any) -> AgentTools:
    """The tool entries of a loaded agent (``workbench.config.AgentConfig``)."""
    path = getattr(agent, "path", None)
    base_dir = Path(path).resolve().parent if path else Path.cwd()
    tools = getattr(getattr(agent, "agent", agent), "tools", None) or []
    return specs_from_entries(tools, base_dir)
