"""A servers file: the MCP entries ``holo-tune serve --servers FILE`` fronts, in place of the
agent's own MCP entries (:mod:`workbench.config.writeback.served` writes one when it points a
HoloDeck 0.7 agent at serve: the agent then runs serve, and serve runs these).

The file is a ``tools`` list of MCP entries as the agent file writes them, read as the agent is
(``${VAR}`` from the agent's environment and ``.env`` files, HoloDeck's rules for each entry);
bad input is one line naming the file, the line and the field. The agent's other tools (a
vectorstore, functions) stay, so the catalog is the one the agent had before its MCP entries
moved: the same tools, in the same order.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.config.loader import AgentConfig
from workbench.config.models import MCPTool
from workbench.config.source import Unset, read_source
from workbench.config.validation import Problem, problems
from workbench.errors import ConfigError


class ServersFile(BaseModel):
    """The file's one key: ``tools``, MCP entries only."""

    model_config = ConfigDict(extra="forbid")
    tools: list[MCPTool]


def read_servers(path: Path, agent: AgentConfig, unset: list[Unset] | None = None) -> list[MCPTool]:
    """The MCP entries of the servers file at ``path``. A missing variable is an error, unless
    ``unset`` is given: it then receives them (a stand-in takes their place, as the agent's
    loader does with ``missing_env="warn"``)."""
    strict = unset is None
    unset = [] if unset is None else unset
    source = read_source(path, agent.env, unset)
    data = source.data
    if not isinstance(data, dict):
        raise ConfigError("a servers file is a mapping with one key, tools", file=path, line=1)
    for i, entry in enumerate(data.get("tools") or []):
        if isinstance(entry, dict) and entry.get("type", "mcp") != "mcp":
            problem = Problem(("tools", i, "type"), "a servers file holds MCP entries only")
            raise source.where.error([problem])
    try:
        found = ServersFile.model_validate(data)
    except ValidationError as err:
        raise source.where.error(problems(ServersFile, err.errors())) from None
    if unset and strict:
        raise ConfigError(
            f"environment variable '{unset[0].name}' is not set", file=path, line=unset[0].line
        )
    names = [tool.name for tool in found.tools]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise ConfigError(f"two MCP entries are named {twice!r}", file=path, field="tools")
    return found.tools


def with_servers(agent: AgentConfig, path: Path) -> AgentConfig:
    """``agent`` with the servers file's MCP entries in place of its own MCP entries."""
    servers = read_servers(path, agent)
    others = [tool for tool in agent.tools if not isinstance(tool, MCPTool)]
    model = agent.agent.model_copy(update={"tools": [*others, *servers]})
    return dataclasses.replace(agent, agent=model)


def fronted_servers(agent: AgentConfig) -> Path | None:
    """The servers file of an agent that runs ``holo-tune serve`` as its MCP entry (the entry's
    ``serve ... --servers FILE``, resolved against the agent's folder); None otherwise."""
    from workbench.config.writeback.served import ENTRY

    for tool in agent.tools:
        if not isinstance(tool, MCPTool) or tool.name != ENTRY:
            continue
        args = list(tool.args or [])
        if "serve" in args and "--servers" in args[:-1]:
            given = Path(args[args.index("--servers") + 1])
            return given if given.is_absolute() else Path(agent.path).parent / given
    return None


def as_fronted(agent: AgentConfig) -> tuple[AgentConfig, str | None]:
    """``agent`` with the servers serve fronts in place of its serve entry, when it runs serve
    (so that what is listed, measured and tuned is the tools serve searches, not serve's own
    three), and a line saying so; else ``agent`` as it is."""
    side = fronted_servers(agent)
    if side is None:
        return agent, None
    unset: list[Unset] = []
    servers = read_servers(side, agent, unset)
    others = [tool for tool in agent.tools if not isinstance(tool, MCPTool)]
    model = agent.agent.model_copy(update={"tools": [*others, *servers]})
    note = f"{Path(agent.path).name} runs holo-tune serve: its tools are those of {side.name}"
    if unset:
        names = ", ".join(sorted({u.name for u in unset}))
        note += f" (not set here: {names}; serve needs them)"
    return dataclasses.replace(agent, agent=model), note


def mcp_entries(agent: AgentConfig) -> list[dict[str, Any]]:
    """The agent's MCP tool entries as the file writes them (``${VAR}`` kept, never expanded):
    what a runtime's own configuration (Claude Code's ``.mcp.json``, PizzaPi's, Argus's, the
    FastMCP proxy) names its servers from."""
    import yaml

    raw = yaml.safe_load(agent.text) or {}
    return [t for t in raw.get("tools") or [] if isinstance(t, dict) and t.get("type") == "mcp"]
