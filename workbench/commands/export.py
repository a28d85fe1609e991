"""``holo-tune export AGENT.yaml [setting flags | --runtime R --keep NAME --variant V]``.

For HoloDeck 0.6 (the default) it prints the ``tool_filtering`` block: the file's block with the
flags applied; ``enabled`` keeps the file's value, or is ``true`` when the file has no block. For
a deferred-loading runtime it prints that provider's configuration (:mod:`workbench.deferred`):
every tool deferred but those ``--keep`` names. stdout carries only what to paste; warnings and
advice go to stderr. HoloDeck 0.7 has nothing to export (``tune --runtime holodeck-0.7`` proposes
its allowlists): exit 2 with that said.
"""

from __future__ import annotations

import argparse
import sys

from workbench.catalog.models import Catalog
from workbench.commands.common import open_catalog, runtime_of, setting_from_args, warn
from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.writeback import render_block_text, runtime_warnings, start_setting
from workbench.deferred_config import deferred_config
from workbench.errors import InputError
from workbench.evaluate.cases import resolve_name
from workbench.runtime import RuntimeInfo


def load_setting(args: argparse.Namespace) -> tuple[AgentConfig, ToolFiltering]:
    """The agent and the setting its flags ask for (export and apply share this).

    Variables the environment lacks do not stop a write-back: the file is edited as text and a
    ``${VAR}`` is never expanded into it, so the loader substitutes an empty string and warns.
    """
    agent = load_agent(args.agent, missing_env="warn")
    for warning in agent.warnings:
        warn(warning)
    return agent, setting_from_args(args, start_setting(agent.filtering))


def run(args: argparse.Namespace) -> int:
    agent, setting = load_setting(args)
    runtime = runtime_of(args, agent)
    if runtime.deferred:
        return export_deferred(args, agent, runtime)
    if runtime.name == "holodeck-0.7":
        raise InputError(
            f"the runtime is holodeck-0.7 ({runtime.reason}), which has no tool_filtering block; "
            "`holo-tune tune --runtime holodeck-0.7` proposes its allowed_tools lists "
            "(--runtime holodeck-0.6 prints the block anyway)",
            field="--runtime",
        )
    for message in runtime_warnings(agent.data):
        warn(message)
    sys.stdout.write(render_block_text(setting))
    return 0


def kept_names(args: argparse.Namespace, catalog: Catalog) -> set[str]:
    """Full names of the ``--keep`` tools (an unknown name is a usage error)."""
    kept: set[str] = set()
    for name in args.keep:
        found = resolve_name(name, catalog)
        if not found:
            raise InputError(f"no tool named {name!r} in the catalog", field="--keep")
        kept.update(catalog.tools[i].full_name for i in found)
    return kept


def export_deferred(args: argparse.Namespace, agent: AgentConfig, runtime: RuntimeInfo) -> int:
    catalog = open_catalog(args, agent)
    config = deferred_config(agent, catalog, runtime, kept_names(args, catalog), args.variant)
    for message in config.warnings:
        warn(message)
    for line in config.advice:
        print(f"holo-tune: {line}", file=sys.stderr)
    sys.stdout.write(config.text)
    return 0
