"""Write Claude Code's ``.mcp.json``: ``alwaysLoad`` on the servers kept loaded, nothing else.

A file that exists keeps every key and every server it has; each of the agent's servers gets
``"alwaysLoad": true`` when it is kept loaded and loses the key when it is not; an agent server
the file lacks is added as :func:`workbench.deferred.mcp_json` renders it. A missing file is
created from the agent's servers, with two-space indents; in a file that exists only the
entries that change are written again (in its indent), every other byte is kept. A file that is
not a JSON object with an ``mcpServers`` object is refused. Reading, the diff and the write are
:mod:`workbench.config.writeback.json_file`'s.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.config.writeback.files import FilePlan, apply_plan
from workbench.config.writeback.json_file import plan_json, read_json_object
from workbench.errors import ConfigError


def plan_mcp_json(
    path: str | Path, rendered: Mapping[str, Any], always_load: Collection[str]
) -> FilePlan:
    """``path`` with ``alwaysLoad`` set for ``always_load`` among ``rendered['mcpServers']``
    (the agent's servers as ``mcp_json`` renders them)."""
    read = read_json_object(path, ".mcp.json file", {"mcpServers": {}})
    if not isinstance(read.doc.get("mcpServers"), dict):
        raise ConfigError("not a .mcp.json: no mcpServers object", file=str(read.path))
    doc = read.copy()
    servers: dict[str, Any] = doc["mcpServers"]
    changed: list[str] = []
    for name, server in rendered.get("mcpServers", {}).items():
        if name not in servers:
            servers[name] = dict(server)
            servers[name].pop("alwaysLoad", None)
            changed.append(name)
        entry = servers[name]
        if not isinstance(entry, dict):
            raise ConfigError(f"mcpServers.{name} is not an object", file=str(read.path))
        if name in always_load:
            if entry.get("alwaysLoad") is not True:
                entry["alwaysLoad"] = True
                changed.append(name)
        elif "alwaysLoad" in entry:
            del entry["alwaysLoad"]
            changed.append(name)
    plan = plan_json(read, doc)
    return replace(plan, changes=tuple(dict.fromkeys(changed)))


def apply_mcp_json(plan: FilePlan, *, backup: bool = True) -> Path | None:
    """Write the plan atomically (a backup beside an existing file); refused, nothing written,
    when the file changed since it was planned."""
    return apply_plan(plan, backup=backup)
