"""``holo-tune snapshot AGENT.yaml -o FILE``: save the enumerated catalog for offline replay.

The file holds each MCP server's raw ``tools/list`` output (docs/design.md, "Files");
``--catalog FILE`` replays it later with no process started.

Exit status: 0 when every MCP server listed its tools; 1 when some failed (the file is still
written with the servers that answered, and each failure is named on stderr), so a script never
mistakes a partial snapshot for a whole one; 2 for bad input.
"""

from __future__ import annotations

import argparse

from workbench.catalog import save_snapshot
from workbench.catalog.snapshot import check_target
from workbench.commands.common import failed_servers
from workbench.commands.tools import list_agent


def run(args: argparse.Namespace) -> int:
    check_target(args.output)  # before any server is started
    listed = list_agent(args)
    catalog = listed.catalog
    path = save_snapshot(catalog, args.output)
    failed = failed_servers(catalog)  # each named on stderr by list_agent
    servers = len(catalog.listings)
    tools = sum(len(t) for t in catalog.listings.values())
    print(f"wrote {path}: {servers} server(s), {tools} MCP tool(s)")
    return 1 if failed else 0
