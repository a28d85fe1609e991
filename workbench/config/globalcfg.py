"""The user and project ``config.yaml`` HoloDeck merges into every agent it loads.

HoloDeck (``ConfigLoader.load_agent_yaml`` and ``merge_configs``) reads ``~/.holodeck/config.yml``
(else ``.yaml``) and ``config.yml`` (else ``.yaml``) in the agent's directory. When both exist it
deep-merges their *full* model dumps, so the project file wins on every top-level key, even one it
does not write (the user's ``mcp_servers`` are gone unless the project repeats them), except the
``providers`` and ``vectorstores`` mappings, which merge name by name. Then it:

- fills the agent's ``model`` (and ``evaluations.model``) with the keys it lacks from the
  ``providers`` entry named like its provider (by key, else by the entry's ``provider`` field);
- resolves a vectorstore tool's ``database: NAME`` against ``vectorstores`` (an unknown name
  becomes in-memory storage);
- appends every ``mcp_servers`` entry whose name no agent tool has, after the agent's own tools.

That changes what a tuner sees (more MCP servers, an endpoint the model needs), so it is done here
too, on a copy of the agent's data; each global MCP server added is reported with its file and line.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.config.models import LLMProvider, MCPTool
from workbench.config.notices import ConfigWarning, WarningKind
from workbench.config.source import Unset, Where, read_source
from workbench.config.validation import Problem, problems
from workbench.config.yamltree import KeyPath
from workbench.errors import ConfigError

#: HoloDeck maps this provider name of a global vectorstore to its DatabaseConfig provider.
_DB_ALIASES = {"postgresql": "postgres"}


class _VectorstoreConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    connection_string: str
    options: dict[str, Any] | None = None


class _GlobalConfig(BaseModel):
    """``holodeck.models.config.GlobalConfig``, strict on what is merged into the agent."""

    model_config = ConfigDict(extra="forbid")

    providers: dict[str, LLMProvider] | None = None
    vectorstores: dict[str, _VectorstoreConfig] | None = None
    execution: dict[str, Any] | None = None
    deployment: dict[str, Any] | None = None
    mcp_servers: list[MCPTool] | None = None


@dataclass
class GlobalConfig:
    """The merged user + project config, and where each of its MCP servers was written."""

    data: dict[str, Any]
    files: list[Path]
    server_origin: dict[str, tuple[Path, int, bool]] = field(default_factory=dict)
    """Server name -> (file, index in its ``mcp_servers``, whether it says ``type``)."""
    lines: dict[Path, dict[KeyPath, int]] = field(default_factory=dict)
    """Each file's key lines."""
    reader_warnings: list[ConfigWarning] = field(default_factory=list)
    """Files HoloDeck's YAML reader refuses (see ``YamlSource.reader_warning``)."""

    def problem_line(self, name: str, problem: Problem) -> ConfigWarning:
        """A problem inside the global server ``name``'s entry, placed in its file."""
        path, index, _typed = self.server_origin[name]
        where = Where(path, self.lines[path])
        moved = Problem(("mcp_servers", index, *problem.path), problem.message, problem.kind)
        return where.warning(replace(moved, evidence=problem.evidence))


def config_files(agent_dir: Path, home: Path | None = None) -> list[Path]:
    """The user config, then the project config, that exist (``.yml`` preferred)."""
    home = Path.home() if home is None else home
    found = [_pick(home / ".holodeck"), _pick(agent_dir)]
    return [path for path in found if path is not None]


def _pick(directory: Path) -> Path | None:
    for name in ("config.yml", "config.yaml"):
        if (directory / name).is_file():
            return directory / name
    return None


def load_global(
    files: list[Path], env: Mapping[str, str], unset: list[Unset] | None = None
) -> GlobalConfig | None:
    """Read, validate and merge ``files`` (later ones win); None when none has content."""
    merged: dict[str, Any] | None = None
    read: list[Path] = []
    origin: dict[str, tuple[Path, int, bool]] = {}
    lines: dict[Path, dict[KeyPath, int]] = {}
    refused: list[ConfigWarning] = []
    for path in files:
        source = read_source(path, env, unset)
        if (warning := source.reader_warning()) is not None:
            refused.append(warning)
        data = source.data
        if not data:
            continue
        if not isinstance(data, dict):
            raise ConfigError("a HoloDeck config is a mapping of keys", file=path, line=1)
        _validate(data, source.where)
        read.append(path)
        lines[path] = source.lines
        # A merged config is rebuilt from full dumps, where every server has its type.
        typed_anyway = merged is not None
        if merged is not None or isinstance(data.get("mcp_servers"), list):
            origin = {
                str(server.get("name")): (path, i, typed_anyway or "type" in server)
                for i, server in enumerate(data.get("mcp_servers") or [])
                if isinstance(server, dict)
            }
        merged = copy.deepcopy(data) if merged is None else _merge_dumps(merged, data)
    if merged is None:
        return None
    return GlobalConfig(merged, read, origin, lines, refused)


def _validate(data: dict[str, Any], where: Where) -> None:
    try:
        _GlobalConfig.model_validate(data)
    except ValidationError as err:
        raise where.error(problems(_GlobalConfig, err.errors())) from None


def _merge_dumps(user: Mapping[str, Any], project: Mapping[str, Any]) -> dict[str, Any]:
    """HoloDeck's ``_merge_global_configs``: ``_deep_merge`` of both files' full model dumps.

    In a full dump every field is present (null or its default where the file is silent), so the
    project's value wins on every key; mappings of named entries still merge name by name, an
    entry the project has winning whole (a vectorstore's ``options`` mapping merges too).
    """
    out: dict[str, Any] = {}
    for key in _GlobalConfig.model_fields:
        mine, theirs = user.get(key), project.get(key)
        if (
            key in ("providers", "vectorstores")
            and isinstance(mine, dict)
            and isinstance(theirs, dict)
        ):
            entries = copy.deepcopy(dict(mine))
            for name, entry in theirs.items():
                entry = copy.deepcopy(entry)
                options = (mine.get(name) or {}).get("options") if key == "vectorstores" else None
                if isinstance(options, dict) and isinstance(entry.get("options"), dict):
                    entry["options"] = _deep_merge(copy.deepcopy(options), entry["options"])
                entries[name] = entry
            out[key] = entries
        elif theirs is not None:
            out[key] = copy.deepcopy(theirs)
    return out


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """HoloDeck's ``_deep_merge``: mappings merge key by key, anything else is replaced."""
    for key, value in override.items():
        if isinstance(base.get(key), dict) and isinstance(value, dict):
            _deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def merge_into(agent: dict[str, Any], config: GlobalConfig) -> tuple[dict[str, Any], list[str]]:
    """A copy of the agent's data with the global config merged as HoloDeck merges it.

    Also returns the names of the MCP servers it added (in the order added).
    """
    if not agent:
        return agent, []
    merged = copy.deepcopy(agent)
    providers = config.data.get("providers") or {}
    if providers:
        for model in _models(merged):
            _fill_model(model, providers)
    vectorstores = config.data.get("vectorstores") or {}
    if vectorstores and isinstance(merged.get("tools"), list):
        for tool in merged["tools"]:
            _resolve_database(tool, vectorstores)
    added: list[str] = []
    servers = config.data.get("mcp_servers") or []
    if servers:
        if not isinstance(merged.get("tools"), list):
            merged["tools"] = []
        names = {t["name"] for t in merged["tools"] if isinstance(t, dict) and "name" in t}
        for server in servers:
            if server.get("name") in names:
                continue  # the agent's own entry of that name wins
            entry = {k: v for k, v in server.items() if v is not None}
            # HoloDeck dumps the server with exclude_unset, so an entry that relied on the
            # default type arrives without one and fails the agent's tool union: see merge_notes.
            entry.setdefault("type", "mcp")
            merged["tools"].append(entry)
            added.append(str(server.get("name")))
    deployment = config.data.get("deployment")
    if isinstance(deployment, dict):
        if "deployment" not in merged:
            merged["deployment"] = copy.deepcopy(deployment)
        elif isinstance(merged["deployment"], dict):
            merged["deployment"] = _deep_merge(copy.deepcopy(deployment), merged["deployment"])
    return merged, added


def _models(agent: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if isinstance(agent.get("model"), dict):
        yield agent["model"]
    evaluations = agent.get("evaluations")
    if isinstance(evaluations, dict) and isinstance(evaluations.get("model"), dict):
        yield evaluations["model"]


def _fill_model(model: dict[str, Any], providers: Mapping[str, Any]) -> None:
    key = model.get("provider")
    if not key:
        return
    entry = providers.get(key)
    if entry is None:
        entry = next((p for p in providers.values() if p.get("provider") == key), None)
    for name, value in (entry or {}).items():
        model.setdefault(name, copy.deepcopy(value))


def _resolve_database(tool: Any, vectorstores: Mapping[str, Any]) -> None:
    if not isinstance(tool, dict) or tool.get("type") != "vectorstore":
        return
    name = tool.get("database")
    if not isinstance(name, str):
        return
    store = vectorstores.get(name)
    if store is None:
        tool["database"] = None  # HoloDeck logs a warning and falls back to in-memory storage
        return
    provider = str(store["provider"])
    database: dict[str, Any] = {
        "provider": _DB_ALIASES.get(provider.lower(), provider),
        "connection_string": store["connection_string"],
    }
    database.update(store.get("options") or {})
    tool["database"] = database


def merge_notes(config: GlobalConfig, added: list[str]) -> list[ConfigWarning]:
    """One line per global MCP server added to the agent: a tuner should know where it is from."""
    notes: list[ConfigWarning] = list(config.reader_warnings)
    for name in added:
        typed = config.server_origin[name][2]
        note = f"HoloDeck adds this global MCP server '{name}' "
        if typed:
            note += "to the agent's tools"
        else:
            note += (
                "without its default type, and then refuses the agent (write type: mcp); "
                "holo-tune adds it as an mcp entry"
            )
        kind: WarningKind = "global-server" if typed else "holodeck-rejects"
        notes.append(config.problem_line(name, Problem((), note, kind, (("server", name),))))
    return notes
