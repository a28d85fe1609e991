"""Catalog snapshots: the servers' tools/list output saved as JSON, replayed with no process.

Format (docs/design.md, "Files")::

    {"holo_tune_catalog": 1,
     "servers": {"<server>": {"tools": [<MCP tool as tools/list gives it>, ...]}, ...}}

Only the raw listings are saved: names, order and texts are rebuilt from them on load exactly as
from a live server, so a snapshot replays the runtime's catalog and not our reading of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.catalog.models import Catalog
from workbench.errors import CatalogError
from workbench.limits import json_loads, no_gc, read_input

FORMAT_KEY = "holo_tune_catalog"
FORMAT_VERSION = 1


def snapshot_dict(catalog: Catalog) -> dict[str, Any]:
    """The snapshot of a catalog: every MCP server that listed its tools, in catalog order."""
    servers = {name: {"tools": list(tools)} for name, tools in catalog.listings.items()}
    return {FORMAT_KEY: FORMAT_VERSION, "servers": servers}


def check_target(path: str | Path) -> None:
    """CatalogError unless ``path`` can be written: its directory exists and it is not one."""
    target = Path(path)
    if not target.parent.is_dir():
        raise CatalogError("no such directory", file=target.parent)
    if target.is_dir():
        raise CatalogError("is a directory, not a file", file=target)


def save_snapshot(catalog: Catalog, path: str | Path) -> Path:
    """Write the snapshot atomically (temp file in the same directory, then rename).

    The directory must exist (CatalogError otherwise): a typo in a path creates nothing.
    """
    target = Path(path)
    text = json.dumps(snapshot_dict(catalog), ensure_ascii=False, indent=2) + "\n"
    check_target(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _tools_of(name: str, entry: Any, path: Path) -> list[dict[str, Any]]:
    field = f"servers.{name}"
    if not isinstance(entry, Mapping) or not isinstance(entry.get("tools"), list):
        raise CatalogError("must be an object with a 'tools' list", file=path, field=field)
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(entry["tools"]):
        where = f"{field}.tools[{i}]"
        if not isinstance(tool, Mapping):
            raise CatalogError("a tool must be an object", file=path, field=where)
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise CatalogError("a tool needs a non-empty string 'name'", file=path, field=where)
        schema = tool.get("inputSchema")
        if schema is not None and not isinstance(schema, Mapping):
            raise CatalogError("'inputSchema' must be an object", file=path, field=where)
        tools.append(dict(tool))
    return tools


def parse_snapshot(text: str, path: str | Path = "<snapshot>") -> dict[str, list[dict[str, Any]]]:
    """The servers of a snapshot's text, in file order (CatalogError when it is not one)."""
    path = Path(path)
    with no_gc():
        data = json_loads(text, error=CatalogError, file=path)
    if not isinstance(data, Mapping) or FORMAT_KEY not in data:
        raise CatalogError(f"not a holo-tune catalog snapshot (no {FORMAT_KEY!r} key)", file=path)
    if data[FORMAT_KEY] != FORMAT_VERSION:
        raise CatalogError(
            f"unsupported version {data[FORMAT_KEY]!r} (this holo-tune reads {FORMAT_VERSION})",
            file=path,
            field=FORMAT_KEY,
        )
    servers = data.get("servers")
    if not isinstance(servers, Mapping):
        raise CatalogError("must be an object of servers", file=path, field="servers")
    return {str(name): _tools_of(str(name), entry, path) for name, entry in servers.items()}


def load_snapshot(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Read a snapshot file: server name -> its tools/list output, in file order."""
    path = Path(path)
    raw = read_input(path, CatalogError, "catalog snapshot (JSON)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise CatalogError(f"not UTF-8 text (byte {err.start})", file=path, line=line) from None
    return parse_snapshot(text, path)
