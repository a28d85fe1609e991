"""``holo-tune export AGENT.yaml [setting flags | --runtime R --keep NAME --variant V]``.

What the runtime that runs the agent is given (:meth:`workbench.runtimes.base.Runtime.export`):
for HoloDeck 0.6 (the default) the ``tool_filtering`` block, the file's block with the flags
applied (``enabled`` keeps the file's value, or is ``true`` when the file has no block); for a
search-tool runtime its configuration (every tool deferred but those ``--keep`` names). stdout
carries only what to paste; warnings and advice go to stderr. A runtime with nothing to export
(HoloDeck 0.7's allowlists are written by ``tune``) says so: exit 2.
"""

from __future__ import annotations

import argparse
import sys

from workbench.commands.common import open_catalog, runtime_of, setting_from_args, warn
from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.namesfile import read_names
from workbench.config.writeback.block import start_setting
from workbench.runtimes.base import ExportRequest


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
    keep = list(getattr(args, "keep", None) or [])
    if getattr(args, "keep_file", None):
        keep += read_names(args.keep_file, "--keep-file")
    request = ExportRequest(
        agent,
        runtime,
        setting,
        lambda: open_catalog(args, agent),
        keep=tuple(keep),
        variant=getattr(args, "variant", None) or "bm25",
        max_results=getattr(args, "max_results", None),
    )
    config = runtime.plugin.export(request)
    for message in config.warnings:
        warn(message)
    for line in config.advice:
        print(f"holo-tune: {line}", file=sys.stderr)
    sys.stdout.write(config.text)
    return 0
