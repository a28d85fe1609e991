"""``holo-tune tools AGENT.yaml [--catalog F] [--timeout S] [--json]``: the catalog and its bill.

Starts the agent's MCP servers (or replays ``--catalog``), and prints every tool source with its
state, then every tool in the runtime's order with its token count, then the total, the encoding
and whether the count is exact for the agent's model.

Exit status: 0 when the catalog was listed, even if some servers failed (each failure is shown
with its cause, in the table or in ``--json`` as ``status: "error"``, and one line on stderr: the
rest of the catalog is still useful, and this is the command that says why a server failed); 2
for bad input (agent file, snapshot, flags). A missing ``${VAR}`` is only a warning here: listing
tools needs no secret, and the server that needed it says so if it fails.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from workbench.catalog import Catalog
from workbench.commands.common import (
    load_command_agent,
    open_catalog,
    print_json,
    runtime_of,
    use_color,
    with_runtime,
)
from workbench.config import AgentConfig
from workbench.tokens import TokenTable, token_table


@dataclass(frozen=True)
class Listed:
    """An agent with its catalog and token table: what ``tools`` and ``snapshot`` print."""

    agent: AgentConfig
    catalog: Catalog
    tokens: TokenTable


def list_agent(args: argparse.Namespace, *, err: TextIO | None = None) -> Listed:
    """Load the agent (warnings to ``err``), list its catalog and count its tokens."""
    err = err or sys.stderr
    agent = load_command_agent(args, stream=err)
    catalog = open_catalog(args, agent, refuse=False, stream=err)
    model = agent.agent.model
    return Listed(agent, catalog, token_table(catalog, str(model.provider), model.name))


def tools_json(catalog: Catalog, tokens: TokenTable) -> dict[str, Any]:
    """The ``tools --json`` object of docs/json.md."""
    return {
        "servers": [
            {
                "name": s.name,
                "status": "ok" if s.ok else "error",
                "error": s.error,
                "tools": s.tools,
            }
            for s in catalog.servers
        ],
        "tools": [
            {"name": t.full_name, "server": t.server, "tokens": int(n)}
            for t, n in zip(catalog.tools, tokens.per_tool, strict=True)
        ],
        "tokens": {"all": tokens.all, "encoding": tokens.encoding, "exact": tokens.exact},
    }


class _Style:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on else text


def _server_tokens(catalog: Catalog, tokens: TokenTable) -> dict[str, int]:
    out: dict[str, int] = {}
    for tool, n in zip(catalog.tools, tokens.per_tool, strict=True):
        out[tool.plugin] = out.get(tool.plugin, 0) + int(n)
    return out


def render_table(listed: Listed, *, color: bool = False) -> str:
    """The human table: header, servers, tools, total, notes."""
    style = _Style(color)
    catalog, tokens, agent = listed.catalog, listed.tokens, listed.agent
    exact = "exact" if tokens.exact else "estimate"
    model = agent.agent.model
    lines = [
        style(
            f"{agent.agent.name} · {model.provider} {model.name} · {tokens.encoding} ({exact})", "1"
        ),
        "",
    ]
    per_server = _server_tokens(catalog, tokens)
    name_w = max([len("SERVER"), *(len(s.name) for s in catalog.servers)])
    lines.append(style(f"{'SERVER':<{name_w}}  {'STATE':<8} {'TOOLS':>5} {'TOKENS':>7}  TIME", "1"))
    for s in catalog.servers:
        state = style(f"{s.state:<8}", "31" if not s.ok else "32")
        secs = f"{s.seconds:.1f}s" if s.seconds else ""
        lines.append(
            f"{s.name:<{name_w}}  {state} {s.tools:>5} {per_server.get(s.name, 0):>7,}  {secs}"
        )
        if s.error:
            lines.append(style(f"{'':<{name_w}}  error: {s.error}", "31"))
            if s.log_path:
                lines.append(f"{'':<{name_w}}  log: {s.log_path}")
    lines.append("")
    tool_w = max([len("TOOL (runtime order)"), *(len(t.full_name) for t in catalog.tools)])
    lines.append(style(f"{'TOOL (runtime order)':<{tool_w}}  {'TOKENS':>7}", "1"))
    for tool, n in zip(catalog.tools, tokens.per_tool, strict=True):
        lines.append(f"{tool.full_name:<{tool_w}}  {int(n):>7,}")
    lines.append("")
    lines.append(
        style(f"{len(catalog)} tools: {tokens.all:,} tokens", "1")
        + f" ({tokens.encoding}, {tokens.note or exact}; {tokens.overhead} once per request)"
    )
    for note in catalog.notes:
        lines.append(style(f"note: {note}", "33"))
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    listed = list_agent(args)
    if args.json:
        runtime = runtime_of(args, listed.agent)
        print_json(with_runtime(tools_json(listed.catalog, listed.tokens), runtime))
    else:
        sys.stdout.write(render_table(listed, color=use_color()))
    return 0
