"""Point a HoloDeck 0.7 agent at ``holo-tune serve``: its MCP entries move to a servers file
beside it, and one MCP entry that runs serve takes their place.

HoloDeck then starts one server, serve, whose listing is the pins, ``search_tools`` and
``call_tool``; serve reads the servers it fronts from the servers file (``serve --servers
FILE``), never from the agent's own MCP entries, so it never fronts itself. The tuned setting is
in serve's arguments: HoloDeck 0.7 refuses a ``tool_filtering`` block.

HoloDeck 0.7 starts only ``npx``, ``node``, ``uvx`` and ``docker``: the entry runs ``uvx
holo-tune serve ...`` (uvx runs the holo-tune installed with ``uv tool install``). Paths are
written ``./NAME``, which HoloDeck resolves against the agent's folder. The ``${VAR}``s the
moved entries name are passed on in the entry's ``env``: HoloDeck gives a stdio server only its
entry's ``env`` (and a few basics such as ``PATH`` and ``HOME``).

As the other writers do, the agent is edited as text: the moved entries' text, comments
included, is cut from the agent's ``tools`` list and pasted into the servers file; both results
must read back as the old documents with exactly that change, or nothing is written. An agent
that already runs serve keeps its servers file; only the entry is rewritten.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workbench.config.envsubst import VAR_PATTERN
from workbench.config.writeback.agent_file import agent_mapping
from workbench.config.writeback.files import FilePlan
from workbench.config.writeback.render import string_text
from workbench.config.writeback.splice import NodeText, compose_root, detect_style, where
from workbench.config.writeback.text import Edit, apply_edits, eol, line_start, unified_diff
from workbench.config.yamltree import YamlSyntaxError, parse
from workbench.errors import ConfigError, WriteBackError
from workbench.limits import read_input

#: The entry's name (HoloDeck 0.7's MCP names are ``[0-9A-Za-z_]+``).
ENTRY = "holo_tune"
#: What the entry runs: uvx (one of the four commands HoloDeck 0.7 starts) and holo-tune.
COMMAND = "uvx"
PROGRAM = "holo-tune"
DESCRIPTION = (
    "holo-tune serve: search_tools finds the tools a task needs, call_tool calls one "
    "(the agent's MCP servers, behind one tuned search)"
)
#: The servers file's header (a comment: the file is otherwise just a ``tools`` list).
HEADER = (
    "# The MCP servers `holo-tune serve` fronts for {agent}: its {entry} entry runs serve with\n"
    "# --servers {servers}. Written by holo-tune; edit these entries here, not in {agent}.\n"
)


def servers_path(agent: Path) -> Path:
    """Where the servers file of ``agent`` goes: ``<stem>.servers.yaml`` beside it."""
    return agent.with_name(f"{agent.stem}.servers.yaml")


def local_arg(path: Path) -> str:
    """A file beside the agent as an argument HoloDeck resolves against the agent's folder."""
    return f"./{path.name}"


def plan_served(
    path: str | Path, serve_args: Sequence[str], *, original: bytes | None = None
) -> tuple[FilePlan, ...]:
    """The agent at ``path`` pointed at serve: ``serve_args`` are the flags after ``serve AGENT
    --servers FILE`` (the setting, the pins). ``original``: the bytes the caller read (refused
    when the file now differs). Raises WriteBackError (refused) or ConfigError (not YAML).

    The plans, in the order they are written (:func:`~workbench.config.writeback.files.
    apply_plans`): the servers file first when entries move (serve needs it once the agent
    names it; its ``changes`` name the entries moved), then the agent (its ``warnings``)."""
    path = Path(path)
    name = str(path)
    old = read_input(path, ConfigError, "YAML agent file")
    if original is not None and hashlib.sha256(original).digest() != hashlib.sha256(old).digest():
        raise WriteBackError(f"{name}: changed on disk since it was read; nothing written")
    try:
        text = old.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text (byte {err.start})", file=name) from None
    data = agent_mapping(text, name)
    side = servers_path(path)
    cutter = _Cutter(text, name)
    items = cutter.tool_items()
    entries = data.get("tools") or []
    ours = [i for i, e in enumerate(entries) if isinstance(e, dict) and e.get("name") == ENTRY]
    moved = [
        i
        for i, e in enumerate(entries)
        if isinstance(e, dict) and e.get("type") == "mcp" and i not in ours
    ]
    if ours and moved:
        raise WriteBackError(
            where(
                name,
                None,
                "tools",
                f"runs serve ({ENTRY}) and other MCP entries; "
                f"move them into {side.name} by hand; nothing written",
            )
        )
    if not ours and not moved:
        raise WriteBackError(where(name, None, "tools", "no MCP entry to serve; nothing written"))
    if ours and not side.exists():
        raise WriteBackError(
            f"{name}: its {ENTRY} entry needs {side}, which is gone; nothing written"
        )
    args = [PROGRAM, "serve", local_arg(path), "--servers", local_arg(side), *serve_args]
    at = (ours or moved)[0]
    spans = [cutter.span(items, i) for i in (ours or moved)]
    variables = _variables("".join(text[a:b] for a, b in spans)) if moved else _env_of(entries[at])
    entry = cutter.entry_text(items[at], args, variables)
    edits = [Edit(spans[0][0], spans[0][1], entry)] + [Edit(a, b, "") for a, b in spans[1:]]
    new_text = apply_edits(text, edits)
    expected = dict(data)
    kept = [e for i, e in enumerate(entries) if i not in ours and i not in moved]
    expected["tools"] = [*kept[:at], _entry_data(args, variables), *kept[at:]]
    _check(new_text, expected, name)
    servers = None
    if moved:
        servers = _servers_plan(path, side, text, spans, [entries[i] for i in moved], cutter)
    warnings = []
    if "tool_filtering" in data:
        warnings.append(
            "the file still has a tool_filtering block: HoloDeck 0.7 refuses to load it (delete "
            "the block; serve's arguments hold the setting)"
        )
    agent_plan = FilePlan(
        path,
        old,
        new_text.encode("utf-8"),
        unified_diff(text, new_text, label=name),
        tuple(warnings),
    )
    if servers is None:
        return (agent_plan,)
    names = tuple(str(entries[i].get("name")) for i in moved)
    return (replace(servers, changes=names), agent_plan)


def _servers_plan(
    agent: Path,
    side: Path,
    text: str,
    spans: list[tuple[int, int]],
    entries: list[Any],
    cutter: _Cutter,
) -> FilePlan:
    nl = cutter.newline
    header = HEADER.format(agent=agent.name, entry=ENTRY, servers=local_arg(side))
    body = "".join(text[a:b] for a, b in spans)
    if not body.endswith(("\n", "\r")):
        body += nl
    new_text = header.replace("\n", nl) + "tools:" + nl + body
    _check(new_text, {"tools": entries}, str(side))
    old = side.read_bytes() if side.exists() else None
    old_text = "" if old is None else old.decode("utf-8", "replace")
    diff = unified_diff(old_text, new_text, label=str(side))
    return FilePlan(side, old, new_text.encode("utf-8"), diff)


def _check(new_text: str, expected: dict[str, Any], name: str) -> None:
    """Refuse a result that does not read back as ``expected`` (an anchor shared across the cut,
    a layout the cut broke)."""
    try:
        reread = parse(new_text).data
    except YamlSyntaxError:
        reread = None
    if reread != expected:
        raise WriteBackError(
            f"{name}: this file's layout defeats a safe move of the MCP entries; nothing written "
            "(edit it by hand: docs/serve.md says what goes where)"
        )


def _variables(text: str) -> list[str]:
    """The ``${VAR}`` names in the moved entries, in order."""
    return list(dict.fromkeys(VAR_PATTERN.findall(text)))


def _env_of(entry: Any) -> list[str]:
    """The variables an existing serve entry passes on (kept on a rewrite)."""
    env = entry.get("env") if isinstance(entry, dict) else None
    return [str(k) for k in env] if isinstance(env, dict) else []


def _entry_data(args: list[str], variables: list[str]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": ENTRY,
        "type": "mcp",
        "description": DESCRIPTION,
        "command": COMMAND,
        "args": args,
    }
    if variables:
        data["env"] = {v: "${" + v + "}" for v in variables}
    return data


class _Cutter(NodeText):
    """Where each item of the agent's block ``tools`` list is in the text, and the new entry's
    text at the items' own columns."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.root = compose_root(text, path)
        self.newline = detect_style(text, self.root).newline

    def key_syntax(self, key: Node) -> WriteBackError:
        return self.refuse(key, "unsupported key syntax; edit it by hand")

    def refuse(self, node: Node | None, cause: str) -> WriteBackError:
        line = node.start_mark.line + 1 if node is not None else None
        return WriteBackError(where(self.path, line, "tools", f"{cause}; nothing written"))

    def tool_items(self) -> list[Node]:
        found = [v for k, v in self.root.value if isinstance(k, ScalarNode) and k.value == "tools"]
        if len(found) != 1 or not isinstance(found[0], SequenceNode):
            raise self.refuse(None, "not one block list of tools")
        seq = found[0]
        if seq.flow_style:
            raise self.refuse(seq, "a flow list; edit it by hand")
        for item in seq.value:
            if not isinstance(item, MappingNode) or item.flow_style:
                raise self.refuse(item, "an entry that is not a block mapping; edit it by hand")
        return list(seq.value)

    def dash(self, item: Node) -> int:
        """The index of the ``-`` that opens ``item``."""
        pos = int(item.start_mark.index) - 1
        while pos >= 0 and self.text[pos] in " \t\r\n":
            pos -= 1
        if pos < 0 or self.text[pos] != "-":
            raise self.refuse(item, "an entry whose dash cannot be found; edit it by hand")
        return pos

    def span(self, items: list[Node], i: int) -> tuple[int, int]:
        """The text of item ``i``: from its dash's line to the next item's (its trailing blank
        lines and comments with it), or to the end of its last line."""
        start = line_start(self.text, self.dash(items[i]))
        if i + 1 < len(items):
            return start, line_start(self.text, self.dash(items[i + 1]))
        end = eol(self.text, self.content_end(items[i]))
        end += len(self.newline) if self.text.startswith(self.newline, end) else 0
        return start, end

    def entry_text(self, item: Node, args: list[str], variables: list[str]) -> str:
        """The serve entry, its dash and keys at ``item``'s columns."""
        dash = self.dash(item)
        pad = " " * (dash - line_start(self.text, dash))
        first = item.value[0][0] if isinstance(item, MappingNode) and item.value else item
        keys = " " * int(first.start_mark.column)
        step = max(2, len(keys) - len(pad))
        flow = "[" + ", ".join(string_text(a, '"') for a in args) + "]"
        lines = [
            f"{pad}-{' ' * (len(keys) - len(pad) - 1)}name: {ENTRY}",
            f"{keys}type: mcp",
            f"{keys}description: {string_text(DESCRIPTION, chr(34))}",
            f"{keys}command: {COMMAND}",
            f"{keys}args: {flow}",
        ]
        if variables:
            lines.append(f"{keys}env:")
            lines += [
                f"{keys}{' ' * step}{v}: {string_text('${' + v + '}', chr(34))}" for v in variables
            ]
        return "".join(line + self.newline for line in lines)
