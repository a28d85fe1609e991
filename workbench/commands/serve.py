"""``holo-tune serve AGENT.yaml [...]``: the tuned search behind any MCP client.

An MCP server (stdio, or streamable HTTP at ``/mcp``) whose listing is the pinned tools,
``search_tools(query)`` and ``call_tool(name, arguments)``: ``search_tools`` answers with the
tools ``holo-tune search AGENT QUERY --json`` selects (the same setting: the flags, else the
YAML's block, else HoloDeck's defaults; the same engine and embedder), best first, as full
definitions; ``call_tool`` forwards to the agent's MCP server that owns the tool, over one
session per server kept open. ``--catalog`` serves search from a snapshot with no server
started. The work is in :mod:`workbench.serve`; fastmcp (the ``serve`` extra) is needed.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
from functools import partial

import anyio

from workbench.catalog.serverlogs import new_log_dir
from workbench.catalog.specs import specs_from_agent
from workbench.commands.common import open_catalog, setting_from_args, warn
from workbench.config import load_agent
from workbench.errors import HoloTuneError
from workbench.workspace import preflight

MISSING_EXTRA = "holo-tune serve needs the serve extra: pip install 'holo-tune[serve]'"


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("fastmcp") is None:
        raise HoloTuneError(MISSING_EXTRA)
    from workbench.serve.app import Transport, serve_live, serve_snapshot
    from workbench.serve.index import ServeIndex
    from workbench.serve.logs import LOGGER, secrets_of, setup_logging

    agent = load_agent(args.agent, missing_env="warn")
    for warning in agent.warnings:
        warn(warning)
    setting = setting_from_args(args, agent.filtering)
    preflight(agent, catalog_file=args.catalog, embedder_spec=args.embedder)
    transport = Transport(args.transport, args.host, args.port)
    log_dir = new_log_dir()
    specs = specs_from_agent(agent).mcp()
    log_file = setup_logging(log_dir, secrets_of(specs))
    logging.getLogger(LOGGER).info("log: %s", log_file)
    pins = list(args.pin or [])
    if args.catalog:
        catalog = open_catalog(args, agent, refuse=False)
        index = ServeIndex(agent, catalog, setting, embedder_spec=args.embedder)
        anyio.run(serve_snapshot, index, pins, transport)
        return 0
    anyio.run(
        partial(
            serve_live,
            agent,
            setting,
            embedder_spec=args.embedder,
            pins=pins,
            transport=transport,
            log_dir=log_dir,
            timeout=args.timeout,
        )
    )
    return 0
