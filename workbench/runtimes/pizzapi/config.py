"""PizzaPi's ``config.json``: the fragment holo-tune prints, its rules, and the merge ``tune
--apply`` writes.

The fields are PizzaPi's (its ``McpConfig`` type and the "Tool Search" page): ``toolSearch``
holds ``enabled``, ``tokenThreshold``, ``maxResults`` and ``keepLoadedTools``; an ``mcpServers``
entry is ``{command, args, env}`` for a stdio server or ``{url, transport: "streamable",
headers}`` for a streamable HTTP one, each with an optional ``deferLoading``. PizzaPi has no SSE
client (its plain ``http`` transport posts JSON): an SSE entry of the agent is left out. PizzaPi
expands only its own ``@HOME@``-style tokens, never ``${VAR}``: an ``env`` value that passes a
variable of the same name through is left out (PizzaPi starts a server with its own
environment), any other ``${VAR}`` is kept with a note to edit it.

The merge (:func:`plan_config`) changes only ``toolSearch``'s knobs (``keepLoadedTools`` only
where the file has none: one-turn cases cannot measure it) and ``deferLoading`` of
the agent's servers (set where the setting overrides the threshold, removed elsewhere); a server
of the agent the file lacks is added as :func:`server_entry` renders it; every other key keeps
its value and place (:mod:`workbench.config.writeback.json_file`). A server the file lists in the
``mcp.servers[]`` form is changed there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.config.writeback.files import FilePlan
from workbench.config.writeback.json_file import plan_json, read_json_object
from workbench.errors import ConfigError
from workbench.runtimes.pizzapi.tune import PizzaSetting

WHAT = "PizzaPi config.json"
_REFERENCE = re.compile(r"\$\{([^}]*)\}")
KNOBS = ("enabled", "tokenThreshold", "maxResults", "keepLoadedTools")


def tool_search(setting: PizzaSetting) -> dict[str, Any]:
    """The ``toolSearch`` object of ``setting`` (enabled)."""
    return {
        "enabled": True,
        "tokenThreshold": setting.token_threshold,
        "maxResults": setting.max_results,
        "keepLoadedTools": setting.keep_loaded_tools,
    }


def server_entry(entry: Mapping[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """An agent MCP entry (raw YAML) as a PizzaPi ``mcpServers`` entry, and notes on what could
    not be carried over (None: the entry cannot be)."""
    name = str(entry.get("name"))
    transport = str(entry.get("transport") or "stdio")
    notes: list[str] = []
    server: dict[str, Any]
    if transport == "stdio":
        server = {"command": str(entry.get("command", "")), "args": _strings(entry.get("args"))}
        env = _env(name, entry.get("env"), notes)
        if env:
            server["env"] = env
    elif transport == "http":
        server = {"url": str(entry.get("url", "")), "transport": "streamable"}
        if entry.get("headers"):
            server["headers"] = {str(k): str(v) for k, v in dict(entry["headers"]).items()}
    else:
        what = "SSE client" if transport == "sse" else f"{transport} transport"
        return None, [f"{name}: PizzaPi has no {what}; left out of mcpServers"]
    if _REFERENCE.search(repr(server)):
        notes.append(
            f"{name}: PizzaPi does not expand ${{VAR}} (only its @HOME@-style tokens); "
            "edit the values that use one"
        )
    return server, notes


def _strings(values: Any) -> list[str]:
    return [str(v) for v in values or []]


def _env(name: str, env: Any, notes: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in dict(env or {}).items():
        text = str(value)
        if text == f"${{{key}}}":  # passed through: PizzaPi gives the server its environment
            continue
        out[str(key)] = text
    dropped = [str(k) for k in dict(env or {}) if str(k) not in out]
    if dropped:
        notes.append(
            f"{name}: env {', '.join(dropped)} left out: PizzaPi starts the server with its own "
            "environment (set them there)"
        )
    return out


def config_doc(
    entries: Sequence[Mapping[str, Any]], servers: Sequence[str], setting: PizzaSetting
) -> tuple[dict[str, Any], list[str]]:
    """The ``config.json`` fragment for ``setting``: ``toolSearch`` and the agent's MCP entries
    (``servers``: the catalog's MCP servers) with their ``deferLoading``; and notes."""
    overrides = dict(setting.defer_loading)
    rendered, notes = rendered_servers(entries)
    out: dict[str, Any] = {}
    for name in [*rendered, *(s for s in servers if s not in rendered)]:
        if name not in rendered:
            if name in overrides:
                notes.append(_unwritable(name, overrides[name]))
            continue
        out[name] = dict(rendered[name])
        if name in overrides:
            out[name]["deferLoading"] = overrides[name]
    return {"toolSearch": tool_search(setting), "mcpServers": out}, notes


def rendered_servers(
    entries: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every agent MCP entry PizzaPi can run, by name, and the notes of the others."""
    out: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for entry in entries:
        server, said = server_entry(entry)
        notes += said
        if server is not None:
            out[str(entry.get("name"))] = server
    return out, notes


def _unwritable(name: str, defer: bool) -> str:
    value = "true" if defer else "false"
    return (
        f"{name}: not an MCP entry of the agent PizzaPi can run (no command or url to write); "
        f'give its entry in config.json "deferLoading": {value}'
    )


def check_config(doc: Any) -> str | None:
    """The first PizzaPi rule the document breaks (None: none)."""
    if not isinstance(doc, Mapping):
        return "not a JSON object"
    search = doc.get("toolSearch")
    if not isinstance(search, Mapping):
        return "toolSearch is not an object"
    broken = _search_rule(search)
    if broken is not None:
        return broken
    servers = doc.get("mcpServers", {})
    if not isinstance(servers, Mapping):
        return "mcpServers is not an object"
    for name, server in servers.items():
        if not isinstance(server, Mapping):
            return f"mcpServers.{name} is not an object"
        if not isinstance(server.get("command"), str) and not isinstance(server.get("url"), str):
            return f"mcpServers.{name} has neither command nor url"
        broken = _defer_rule(f"mcpServers.{name}", server)
        if broken is not None:
            return broken
    return None


def _search_rule(search: Mapping[str, Any]) -> str | None:
    """The first rule ``toolSearch``'s values break (None: none)."""
    for key in ("enabled", "keepLoadedTools"):
        if key in search and not isinstance(search[key], bool):
            return f"toolSearch.{key} must be true or false"
    for key, low in (("tokenThreshold", 0), ("maxResults", 1)):
        value = search.get(key)
        if key in search and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            return f"toolSearch.{key} must be an integer of at least {low}"
    return None


def _defer_rule(where: str, server: Mapping[str, Any]) -> str | None:
    if "deferLoading" in server and not isinstance(server["deferLoading"], bool):
        return f"{where}.deferLoading must be true or false"
    return None


def _check_read(doc: Mapping[str, Any], where: str) -> None:
    """The file as read breaks a rule of PizzaPi's on a value the merge reads or keeps: refused
    (one line, nothing written) rather than silently replaced."""
    search = doc.get("toolSearch", {})
    broken = _search_rule(search) if isinstance(search, Mapping) else None
    servers = doc.get("mcpServers", {})
    if broken is None and isinstance(servers, Mapping):
        for name, server in servers.items():
            if isinstance(server, Mapping):
                broken = broken or _defer_rule(f"mcpServers.{name}", server)
    if broken is not None:
        field, rule = broken.split(" ", 1)
        raise ConfigError(f"{rule}; nothing written", file=where, field=field)


# ------------------------------------------------------------------------------------ the merge


def plan_config(
    path: str | Path,
    entries: Sequence[Mapping[str, Any]],
    servers: Sequence[str],
    setting: PizzaSetting,
) -> tuple[FilePlan, list[str]]:
    """``path`` (a PizzaPi ``config.json``; none yet: a new one) with ``setting`` merged in, and
    notes (module doc)."""
    read = read_json_object(path, WHAT, {})
    doc = read.copy()
    where = str(read.path)
    _check_read(doc, where)
    search = doc.setdefault("toolSearch", {})
    if not isinstance(search, dict):
        raise ConfigError("toolSearch is not an object", file=where)
    knobs = tool_search(setting)
    if isinstance(search.get("keepLoadedTools"), bool):  # the file's choice: a case is one turn,
        knobs.pop("keepLoadedTools")  # the figures cannot tell it apart
    search.update(knobs)
    overrides = dict(setting.defer_loading)
    rendered, notes = rendered_servers(entries)
    for name in dict.fromkeys([*servers, *rendered]):
        entry = _find(doc, name, where)
        if entry is None:
            if name not in rendered:
                if name in overrides:
                    notes.append(_unwritable(name, overrides[name]))
                continue
            entry = _servers(doc, where).setdefault(name, dict(rendered[name]))
        if name in overrides:
            entry["deferLoading"] = overrides[name]
        else:
            entry.pop("deferLoading", None)
    others = [n for n in _names(doc) if n not in servers and n not in rendered]
    if others:
        notes.append(
            f"{where} has other MCP servers ({', '.join(others)}): their tools count towards "
            "tokenThreshold too (the figures are the agent's servers alone)"
        )
    return plan_json(read, doc), notes


def _servers(doc: dict[str, Any], where: str) -> dict[str, Any]:
    servers = doc.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError("mcpServers is not an object", file=where)
    return servers


def _listed(doc: Mapping[str, Any]) -> list[Any]:
    """The ``mcp.servers[]`` entries (PizzaPi's preferred form), if the file has them."""
    mcp = doc.get("mcp")
    listed = mcp.get("servers") if isinstance(mcp, Mapping) else None
    return listed if isinstance(listed, list) else []


def _find(doc: dict[str, Any], name: str, where: str) -> dict[str, Any] | None:
    """The file's entry for server ``name`` (``mcpServers``, else ``mcp.servers[]``)."""
    servers = doc.get("mcpServers")
    if "mcpServers" in doc and not isinstance(servers, dict):
        raise ConfigError("mcpServers is not an object", file=where)
    if servers and name in servers:
        entry = servers[name]
        if not isinstance(entry, dict):
            raise ConfigError(f"mcpServers.{name} is not an object", file=where)
        return entry
    for entry in _listed(doc):
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def _names(doc: Mapping[str, Any]) -> list[str]:
    servers = doc.get("mcpServers")
    names = list(servers) if isinstance(servers, Mapping) else []
    names += [str(e["name"]) for e in _listed(doc) if isinstance(e, Mapping) and "name" in e]
    return names
