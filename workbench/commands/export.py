"""``holo-tune export AGENT.yaml [setting flags]``: print the ``tool_filtering`` block.

The setting is the file's block with the flags applied; ``enabled`` keeps the file's value, or is
``true`` when the file has no block. The block goes to stdout, ready to paste; warnings (the
target HoloDeck would not use the block) go to stderr.
"""

from __future__ import annotations

import argparse
import sys

from workbench.commands.common import setting_from_args, warn
from workbench.config import AgentConfig, load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.writeback import render_block_text, runtime_warnings, start_setting


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
    for message in runtime_warnings(agent.data):
        warn(message)
    sys.stdout.write(render_block_text(setting))
    return 0
