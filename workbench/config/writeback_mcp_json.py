"""Write Claude Code's ``.mcp.json``: ``alwaysLoad`` on the servers kept loaded, nothing else.

A file that exists keeps every key and every server it has; each of the agent's servers gets
``"alwaysLoad": true`` when it is kept loaded and loses the key when it is not; an agent server
the file lacks is added as :func:`workbench.deferred.mcp_json` renders it. A missing file is
created from the agent's servers. The JSON is written with two-space indents (JSON keeps no
comments to lose). A file that is not a JSON object with an ``mcpServers`` object is refused.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.config.writeback_io import replace_checked
from workbench.config.writeback_text import unified_diff
from workbench.errors import ConfigError
from workbench.limits import read_input


@dataclass(frozen=True)
class McpJsonPlan:
    path: Path
    old: bytes | None
    new: bytes
    diff: str
    #: The servers whose alwaysLoad changed, or that were added.
    changed_servers: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.old != self.new


def plan_mcp_json(
    path: str | Path, rendered: Mapping[str, Any], always_load: Collection[str]
) -> McpJsonPlan:
    """``path`` with ``alwaysLoad`` set for ``always_load`` among ``rendered['mcpServers']``
    (the agent's servers as ``mcp_json`` renders them)."""
    path = Path(path)
    old: bytes | None = None
    if os.path.exists(path):  # under the limits: a regular file, not too large
        old = read_input(path, ConfigError, ".mcp.json file")
    doc: dict[str, Any]
    if old is None:
        doc = {"mcpServers": {}}
        old_text = ""
    else:
        try:
            old_text = old.decode("utf-8")
            loaded = json.loads(old_text)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            line = getattr(err, "lineno", None)
            cause = f"not JSON: {err}".splitlines()[0]
            raise ConfigError(cause, file=str(path), line=line) from None
        if not isinstance(loaded, dict) or not isinstance(loaded.get("mcpServers"), dict):
            raise ConfigError("not a .mcp.json: no mcpServers object", file=str(path))
        doc = copy.deepcopy(loaded)
    servers: dict[str, Any] = doc["mcpServers"]
    changed: list[str] = []
    for name, server in rendered.get("mcpServers", {}).items():
        if name not in servers:
            servers[name] = dict(server)
            servers[name].pop("alwaysLoad", None)
            changed.append(name)
        entry = servers[name]
        if not isinstance(entry, dict):
            raise ConfigError(f"mcpServers.{name} is not an object", file=str(path))
        if name in always_load:
            if entry.get("alwaysLoad") is not True:
                entry["alwaysLoad"] = True
                changed.append(name)
        elif "alwaysLoad" in entry:
            del entry["alwaysLoad"]
            changed.append(name)
    new_text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    if old is not None and not changed:
        new_text = old_text  # nothing to do: keep the file's own layout
    return McpJsonPlan(
        path=path,
        old=old,
        new=new_text.encode("utf-8"),
        diff=unified_diff(old_text, new_text, label=str(path)),
        changed_servers=tuple(dict.fromkeys(changed)),
    )


def apply_mcp_json(plan: McpJsonPlan, *, backup: bool = True) -> Path | None:
    """Write the plan atomically (a backup beside an existing file); refused, nothing written,
    when the file changed since it was planned."""
    if not plan.changed:
        return None
    return replace_checked(plan.path, plan.old, plan.new, backup=backup)
