"""``holo-tune serve AGENT.yaml [...]``: the tuned search behind any MCP client.

An MCP server (stdio, or streamable HTTP at ``/mcp``) whose listing is the pinned tools,
``search_tools(query)`` and ``call_tool(name, arguments)``: ``search_tools`` answers with
holo-tune's own engine (:mod:`workbench.search.holo`) under the ``--settings`` file and the flags
over it (:mod:`workbench.search.flags`), exactly as ``holo-tune search AGENT QUERY
--runtime serve`` shows it: the tools, best first, as full definitions, or that no tool fits
when the engine's confidence is below the threshold; ``call_tool`` forwards to the agent's MCP
server that owns the tool, over one session per server kept open. ``--catalog`` serves search
from a snapshot with no server started; with ``--live-calls`` the servers start too, for the
calls only (a replica behind a load balancer: ready without listing or embedding). The
catalog is serve's runtime's view (``catalog_view``): every tool the servers list, as they list
it, whatever runtime the agent is detected as. The work is in :mod:`workbench.serve`; fastmcp
(the ``serve`` extra) is needed.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import shlex
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from packaging.requirements import Requirement

from workbench.catalog.serverlogs import new_log_dir
from workbench.catalog.specs import specs_from_agent
from workbench.commands.common import agent_warnings, open_catalog, warn
from workbench.config import AgentConfig, load_agent
from workbench.config.servers import with_servers
from workbench.errors import EXIT_INTERRUPTED, HoloTuneError, InputError
from workbench.evaluate.cases import load_cases
from workbench.evaluate.serve_tune import labelled_of
from workbench.runtimes.detect import detect_runtime
from workbench.search.embedders import EmbedderChoice
from workbench.search.flags import SearchFlags, check_embedder, serve_settings
from workbench.search.holo.neighbours import Labelled
from workbench.search.holo.settings import HoloSettings
from workbench.workspace import preflight

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog, CatalogView
    from workbench.serve.index import ServeIndex

#: The runtime ``holo-tune serve`` is (``runtimes/serve.py``), whatever runtime the agent has.
SERVE = "serve"

#: The serve extra's requirements (pyproject.toml's ``serve``; a test keeps them equal).
SERVE_REQUIREMENTS = ("fastmcp>=4.1.6,<5", "jsonschema>=4.20", "prometheus-client>=0.20")


def missing_extra() -> str:
    """What to run without the serve extra: no package index has holo-tune, so the hint
    installs FastMCP itself into the Python that runs holo-tune (a clone or an installed
    package alike), and names the clone's own way."""
    return (
        f"holo-tune serve needs the serve extra (FastMCP): {shlex.quote(sys.executable)} -m pip "
        f"install {' '.join(shlex.quote(r) for r in SERVE_REQUIREMENTS)} (in a clone of "
        "holo-tune: pip install -e '.[serve]')"
    )


def _module_of(requirement: str) -> str:
    """The module a requirement of :data:`SERVE_REQUIREMENTS` installs (its name, ``_`` for
    ``-``: ``prometheus-client`` is ``prometheus_client``)."""
    return Requirement(requirement).name.replace("-", "_")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def run(args: argparse.Namespace) -> int:
    from workbench.serve.index import load_model_early

    if not all(_installed(_module_of(requirement)) for requirement in SERVE_REQUIREMENTS):
        raise HoloTuneError(missing_extra())  # before reading anything: one line
    served = served_from_args(args)
    load_model_early(served.settings, served.embedder.embedder)  # beside the imports below
    try:
        import fastmcp  # noqa: F401  (the serve extra)
        import prometheus_client  # noqa: F401  (the serve extra)
    except ImportError:
        raise HoloTuneError(missing_extra()) from None
    from workbench.serve.app import (
        LiveServers,
        Transport,
        listen,
        serve_live,
        serve_snapshot,
    )
    from workbench.serve.logs import LOGGER, secrets_of, setup_logging

    agent = served.agent
    needs = ready_needs(args, agent)
    sock = listen(args.host, args.port) if args.transport == "http" else None
    transport = Transport(args.transport, args.host, args.port, needs, sock)
    log_dir = new_log_dir()
    log_file = setup_logging(log_dir, secrets_of(specs_from_agent(agent).mcp()))
    logging.getLogger(LOGGER).info("log: %s", log_file)
    _open_usage_log(args, agent)  # closed at exit, what is queued written
    if args.catalog:
        live = LiveServers(agent, log_dir, args.timeout) if args.live_calls else None
        code = anyio.run(serve_snapshot, snapshot_index(args, served), transport, live)
        return _left(code)
    code = anyio.run(
        partial(
            serve_live,
            agent,
            served.settings,
            embedder=served.embedder,
            labelled=served.labelled,
            transport=transport,
            log_dir=log_dir,
            timeout=args.timeout,
            view=serve_view(agent),
        )
    )
    return _left(code)


def _open_usage_log(args: argparse.Namespace, agent: AgentConfig) -> None:
    """``--usage-log``, opened before any server starts (a file that cannot be written: one
    line, exit 2)."""
    if not getattr(args, "usage_log", None):
        given = {
            "--usage-log-max-mb": args.usage_log_max_mb is not None,
            "--usage-log-keep": args.usage_log_keep is not None,
            "--log-arguments": args.log_arguments,
        }
        for flag, set_ in given.items():
            if set_:
                raise InputError("needs --usage-log FILE (there is no usage log)", field=flag)
        return
    from workbench.serve.logs import LOGGER, secrets_of
    from workbench.serve.usagelog import DEFAULT_KEEP, DEFAULT_MAX_MB, open_usage_log

    log = open_usage_log(
        args.usage_log,
        max_mb=DEFAULT_MAX_MB if args.usage_log_max_mb is None else args.usage_log_max_mb,
        keep=DEFAULT_KEEP if args.usage_log_keep is None else args.usage_log_keep,
        log_arguments=args.log_arguments,
        secrets=secrets_of(specs_from_agent(agent).mcp()),
    )
    said = "with" if args.log_arguments else "without"
    logging.getLogger(LOGGER).info("usage log: %s (%s call arguments)", log.path, said)


def ready_needs(args: argparse.Namespace, agent: AgentConfig) -> tuple[str, ...]:
    """``--ready-needs``' servers: MCP entries of the agent, over HTTP, with servers started
    (bad input: one line naming the flag, exit 2)."""
    given = args.ready_needs
    if given is None:
        return ()
    names = tuple(dict.fromkeys(name.strip() for name in given.split(",") if name.strip()))
    flag = "--ready-needs"
    if not names:
        raise InputError("names no server (SERVER[,SERVER])", field=flag)
    if args.transport != "http":
        raise InputError("/readyz is served over HTTP: add --transport http", field=flag)
    if args.catalog and not args.live_calls:
        raise InputError(
            "--catalog starts no server: add --live-calls to start them for the calls",
            field=flag,
        )
    known = [spec.name for spec in specs_from_agent(agent).mcp()]
    for name in names:
        if name not in known:
            raise InputError(
                f"{name!r} is not an MCP server of the agent ({', '.join(known) or 'none'})",
                field=flag,
            )
    return names


def _left(code: int) -> int:
    """serve's exit code, with the CLI's line after Ctrl-C (130)."""
    if code == EXIT_INTERRUPTED:
        from workbench.serve.app import INTERRUPTED

        sys.stderr.write(INTERRUPTED)
    return code


@dataclass(frozen=True)
class Served:
    """What serve serves: the agent, the engine settings (the ``--settings`` file and the flags
    over it), the embedder that scores the dense signal, and the labelled cases of a catalog."""

    agent: AgentConfig
    settings: HoloSettings
    embedder: EmbedderChoice

    def labelled(self, catalog: Catalog) -> Labelled | None:
        return labelled_of(self.settings, catalog)


def served_from_args(args: argparse.Namespace) -> Served:
    """The agent (its loader's warnings on stderr), the settings and the embedder; the files
    and the embedder are checked before any server starts (bad input: one line, exit 2)."""
    agent = load_agent(args.agent, missing_env="warn")
    if args.live_calls and not args.catalog:
        raise InputError(
            "needs --catalog (without it serve lists the live servers)", field="--live-calls"
        )
    for warning in agent_warnings(agent, servers_start=not args.catalog or args.live_calls):
        warn(warning)
    if getattr(args, "servers", None):
        agent = with_servers(agent, Path(args.servers))
    flags = SearchFlags.of(vars(args))
    settings = serve_settings(flags, warn)
    preflight(agent, catalog_file=args.catalog)
    embedder = check_embedder(flags, settings, agent)
    if settings.cases and settings.weights.get("neighbour", 0.0):
        load_cases(settings.cases)  # a bad cases file: its line now, not after the servers
    return Served(agent, settings, embedder)


def serve_view(agent: AgentConfig) -> CatalogView:
    """How serve sees the servers' listings: its own runtime's view (every tool, as listed)."""
    return detect_runtime(agent.path, agent.data, explicit=SERVE).plugin.catalog_view


def snapshot_index(args: argparse.Namespace, served: Served) -> ServeIndex:
    """The index of ``--catalog``'s snapshot (its warnings on stderr; nothing started)."""
    from workbench.serve.index import ServeIndex

    catalog = open_catalog(args, served.agent, refuse=False, view=serve_view(served.agent))
    return ServeIndex(
        served.agent,
        catalog,
        served.settings,
        embedder=served.embedder,
        labelled=served.labelled,
    )
