"""Catalogs for the search tests, built from holo-tune catalog snapshots in the runtime's order.

A small stand-in for the catalog layer's snapshot loader (reference: "The catalog the filter
sees"): servers in file order, tools of a server in alphabetical order of their local name, names
normalised to ``A-Za-z0-9_.-``, collisions skipped, empty descriptions replaced as Semantic Kernel
does, parameters = the top-level property names of ``inputSchema``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from workbench.catalog.models import Catalog, ServerStatus, Tool

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / ".." / "shared" / "datasets"
DATASET_NAMES = ("azure_mcp", "bfcl", "livemcpbench", "metatool", "stackone")

_OUTSIDE = re.compile(r"[^A-Za-z0-9_.\-]")


def dataset_path(name: str) -> Path:
    return DATASETS / name


def datasets_available() -> bool:
    return all((DATASETS / name / "catalog.json").is_file() for name in DATASET_NAMES)


def catalog_from_snapshot(data: dict[str, Any]) -> Catalog:
    tools: list[Tool] = []
    servers: list[ServerStatus] = []
    for server, entry in data["servers"].items():
        taken: set[str] = set()
        listed = sorted(
            ((_OUTSIDE.sub("-", raw["name"]), raw) for raw in entry["tools"]),
            key=lambda pair: pair[0],
        )
        for name, raw in listed:
            if name in taken:
                continue
            taken.add(name)
            schema = raw.get("inputSchema") or {}
            properties = schema.get("properties") or {}
            description = raw.get("description") or f"Function {name} from plugin {server}"
            tools.append(
                Tool(
                    full_name=f"{server}-{name}",
                    plugin=server,
                    name=name,
                    description=description,
                    parameters=tuple(properties),
                    kind="mcp",
                    definition=raw,
                )
            )
        servers.append(ServerStatus(name=server, transport="snapshot", state="snapshot"))
    return Catalog(tools=tools, servers=servers)


def load_dataset_catalog(name: str) -> Catalog:
    path = dataset_path(name) / "catalog.json"
    return catalog_from_snapshot(json.loads(path.read_text(encoding="utf-8")))


def load_cases(name: str, limit: int | None = None, stride: int = 1) -> list[dict[str, Any]]:
    """Every ``stride``-th case of a data set, at most ``limit`` of them."""
    lines = (dataset_path(name) / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines[::stride] if line.strip()]
    return cases if limit is None else cases[:limit]
