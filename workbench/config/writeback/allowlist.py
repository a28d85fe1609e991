"""Write HoloDeck 0.7's static allowlists into the agent YAML, every other byte kept.

The lists go where HoloDeck 0.7.1 reads them:

* OpenAI Agents backend (providers openai, azure_openai): ``config.allowed_tools`` inside each MCP
  tool entry (the server's own tool names). An empty list would mean *no filter*, so a server
  with no tool kept is added to ``openai.disallowed_tools`` instead (its name drops the server),
  and a kept server is taken off that list.
* Claude backend (anthropic, ollama): ``claude.allowed_tools`` with ``mcp__<server>__<tool>``
  names for the kept tools and ``claude.disallowed_tools`` for every other tool of those
  servers; entries that name other tools are kept. HoloDeck 0.7.1 passes both lists to the
  Claude Agent SDK as they are, and there ``allowed_tools`` are permission rules (approved
  without asking), not a filter: a tool not listed stays in the model's context. Only a
  bare-name ``disallowed_tools`` entry removes it, so that list is what holds the count.

As for ``tool_filtering`` (:mod:`workbench.config.writeback.block`), the file is edited as text
at the spans libyaml's marks give; only the keys named above change; the result must read back as
the old document with exactly those changes, or nothing is written. :func:`plan_allowlists`
makes the plan (diff, warnings), :func:`workbench.config.writeback.apply_plan` writes it.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workbench.config.writeback.agent_file import agent_mapping, read_agent_bytes
from workbench.config.writeback.files import FilePlan
from workbench.config.writeback.render import Style, string_text
from workbench.config.writeback.splice import (
    NodeText,
    anchored,
    compose_root,
    detect_style,
    where,
)
from workbench.config.writeback.text import Edit, apply_edits, eol, unified_diff
from workbench.config.yamltree import YamlSyntaxError, parse
from workbench.errors import ConfigError, WriteBackError

Backend = Literal["openai-agents", "claude"]
Value = list[str] | dict[str, Any]


def claude_name(server: str, tool: str) -> str:
    return f"mcp__{server}__{tool}"


def plan_allowlists(
    path: str | Path,
    backend: Backend,
    lists: Mapping[str, Sequence[str]],
    *,
    every: Mapping[str, Sequence[str]] | None = None,
    original: bytes | None = None,
) -> FilePlan:
    """The file at ``path`` with ``lists`` (server -> exposed tool names) written for ``backend``.

    ``every``: every tool of each server (the Claude backend denies them all when none is kept).
    ``original``: the bytes the caller read; the plan is refused if the file now differs.
    Raises WriteBackError (refused, nothing written) or ConfigError (the file does not load).
    """
    path = Path(path)
    name = str(path)
    old = read_agent_bytes(path)
    if original is not None and hashlib.sha256(original).digest() != hashlib.sha256(old).digest():
        raise WriteBackError(f"{name}: changed on disk since it was read; nothing written")
    try:
        text = old.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text (byte {err.start})", file=name) from None
    data = agent_mapping(text, name)
    changes = [
        (keys, value)
        for keys, value in _changes(data, backend, lists, every or {}, name)
        if _get(data, keys) != value
    ]
    editor = _Editor(text, name)
    for keys, value in changes:
        editor.set(keys, value)
    new_text = apply_edits(text, editor.edits)
    expected = copy.deepcopy(data)
    for keys, value in changes:
        _assign(expected, keys, value)
    try:
        reread = parse(new_text).data
    except YamlSyntaxError:
        reread = None
    if reread != expected:
        raise WriteBackError(
            f"{name}: this file's layout defeats a safe edit of the allowlists; nothing written "
            "(edit it by hand; `holo-tune tune` under HoloDeck 0.7 prints the lists)"
        )
    return FilePlan(
        path=path,
        old=old,
        new=new_text.encode("utf-8"),
        diff=unified_diff(text, new_text, label=name),
        warnings=tuple(_warnings(data, backend, lists)),
        changes=tuple(_dotted(k) for k, _ in changes),
    )


Keys = tuple[str | int, ...]


def _changes(
    data: dict[str, Any],
    backend: Backend,
    lists: Mapping[str, Sequence[str]],
    every: Mapping[str, Sequence[str]],
    name: str,
) -> list[tuple[Keys, Value]]:
    tools = data.get("tools")
    index: dict[str, int] = {}
    for i, entry in enumerate(tools if isinstance(tools, list) else []):
        if isinstance(entry, dict) and entry.get("type") == "mcp":
            index[str(entry.get("name"))] = i
    missing = [server for server in lists if server not in index]
    if missing:
        raise WriteBackError(
            where(name, None, "tools", f"no MCP entry named {missing[0]!r}; nothing written")
        )
    if backend == "claude":
        return _claude_changes(data, lists, every)
    changes: list[tuple[Keys, Value]] = []
    for server, kept in lists.items():
        if kept:
            changes.append((("tools", index[server], "config", "allowed_tools"), list(kept)))
    dropped = [server for server, kept in lists.items() if not kept]
    openai = data.get("openai")
    existing = openai.get("disallowed_tools") if isinstance(openai, dict) else None
    current = [str(x) for x in existing] if isinstance(existing, list) else []
    wanted = [x for x in current if x not in lists or x in dropped]
    wanted += [s for s in dropped if s not in wanted]
    if wanted != current and (wanted or existing is not None):
        changes.append((("openai", "disallowed_tools"), wanted))
    return changes


def _claude_changes(
    data: dict[str, Any], lists: Mapping[str, Sequence[str]], every: Mapping[str, Sequence[str]]
) -> list[tuple[Keys, Value]]:
    """``claude.allowed_tools`` (the kept tools: the SDK approves them without asking) and
    ``claude.disallowed_tools`` (every other tool of those servers: the SDK removes a bare-name
    deny from the model's context; an allow rule alone hides nothing). Entries naming other
    tools stay in both lists."""
    claude = data.get("claude")
    claude = claude if isinstance(claude, dict) else {}
    ours = tuple(f"mcp__{server}__" for server in lists)
    kept = [claude_name(s, t) for s, tools in lists.items() for t in tools]
    allowed_now = claude.get("allowed_tools")
    allowed = [str(x) for x in allowed_now or [] if not str(x).startswith(ours)]
    denied_now = claude.get("disallowed_tools")
    denied = [str(x) for x in denied_now or [] if not str(x).startswith(ours)]
    denied += [claude_name(s, t) for s in lists for t in every.get(s, ()) if t not in set(lists[s])]
    changes: list[tuple[Keys, Value]] = []
    if kept or allowed or allowed_now is not None:
        changes.append((("claude", "allowed_tools"), allowed + kept))
    if denied or denied_now is not None:
        changes.append((("claude", "disallowed_tools"), denied))
    return changes


def _assign(data: dict[str, Any], keys: Keys, value: Value) -> None:
    node: Any = data
    for key in keys[:-1]:
        if isinstance(key, int):
            node = node[key]
            continue
        if not isinstance(node.get(key), dict | list):
            node[key] = {}
        node = node[key]
    node[keys[-1]] = value


def _get(data: Any, keys: Keys) -> Any:
    for key in keys:
        if isinstance(key, int) and isinstance(data, list) and key < len(data):
            data = data[key]
        elif isinstance(key, str) and isinstance(data, dict):
            data = data.get(key)
        else:
            return None
    return data


def _dotted(keys: Keys) -> str:
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


def _warnings(
    data: dict[str, Any], backend: Backend, lists: Mapping[str, Sequence[str]]
) -> list[str]:
    found: list[str] = []
    if "tool_filtering" in data:
        found.append(
            "the file still has a tool_filtering block: HoloDeck 0.7 refuses to load it (delete "
            "the block)"
        )
    openai = data.get("openai")
    permissions = openai.get("permissions") if isinstance(openai, dict) else None
    denied = permissions.get("disallowed_tools") if isinstance(permissions, dict) else None
    if backend == "openai-agents" and isinstance(denied, list):
        blocked = [s for s in lists if lists[s] and s in denied]
        if blocked:
            found.append(
                f"openai.permissions.disallowed_tools drops {', '.join(blocked)}; left as is"
            )
    return found


# ---------------------------------------------------------------------------------- text edits


class _Editor(NodeText):
    """Text edits that set a key path to a value in a block-style document."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.root = compose_root(text, path)
        self.style: Style = detect_style(text, self.root)
        self.edits: list[Edit] = []

    def refuse(self, node: Node | None, keys: Keys, cause: str) -> WriteBackError:
        line = node.start_mark.line + 1 if node is not None else None
        return WriteBackError(where(self.path, line, _dotted(keys), f"{cause}; nothing written"))

    def set(self, keys: Keys, value: Value) -> None:
        node: Node = self.root
        for depth, key in enumerate(keys):
            here = keys[: depth + 1]
            if isinstance(key, int):
                if not isinstance(node, SequenceNode) or node.flow_style:
                    raise self.refuse(node, here, "not a block list; edit it by hand")
                node = node.value[key]
                continue
            if not isinstance(node, MappingNode) or node.flow_style:
                raise self.refuse(node, here, "not a block mapping; edit it by hand")
            found = [(k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == key]
            if len(found) > 1:
                raise self.refuse(found[1][0], here, "appears twice; delete one")
            rest = _nest(keys[depth + 1 :], value)
            if not found:
                self.add_entry(node, key, rest)
                return
            knode, vnode = found[0]
            if vnode.start_mark.index < knode.end_mark.index or anchored(self.text, vnode):
                raise self.refuse(knode, here, "an alias or anchor; edit it by hand")
            last = depth == len(keys) - 1
            if last or self.is_null(vnode):
                self.replace_value(knode, vnode, key, rest)
                return
            node = vnode

    # -- readers ------------------------------------------------------------------------------

    def is_null(self, node: Node) -> bool:
        """No value to keep: ``key:``, ``~``, ``null`` or ``{}``."""
        if isinstance(node, MappingNode):
            return not node.value
        return isinstance(node, ScalarNode) and str(node.tag).endswith(":null")

    def key_syntax(self, key: Node) -> WriteBackError:
        return self.refuse(key, (), "unsupported key syntax; edit it by hand")

    # -- writers ------------------------------------------------------------------------------

    def lines(self, key: str, value: Any, column: int) -> list[str]:
        pad = " " * column
        if isinstance(value, dict):
            out = [f"{pad}{key}:"]
            for k, v in value.items():
                out += self.lines(k, v, column + self.style.indent)
            return out
        if not value:
            return [f"{pad}{key}: []"]
        dash = " " * (column + self.style.seq_offset)
        return [f"{pad}{key}:"] + [f"{dash}- {string_text(str(v))}" for v in value]

    def add_entry(self, mapping: MappingNode, key: str, value: Any) -> None:
        """A new ``key: value`` after the mapping's last entry, at its keys' column."""
        if not mapping.value:
            raise self.refuse(mapping, (key,), "an empty mapping; edit it by hand")
        column = mapping.value[0][0].start_mark.column
        pos = eol(self.text, self.entry_end(*mapping.value[-1]))
        nl = self.style.newline
        self.edits.append(Edit(pos, pos, "".join(nl + ln for ln in self.lines(key, value, column))))

    def replace_value(self, knode: Node, vnode: Node, key: str, value: Any) -> None:
        """The value of an existing key rewritten (a block list, or a nested block mapping)."""
        column = knode.start_mark.column
        body = self.lines(key, value, column)
        start = self.colon(knode) + 1
        end = self.entry_end(knode, vnode)
        first = body[0][len(" " * column) + len(key) + 1 :]  # what follows "key:" on its line
        nl = self.style.newline
        self.edits.append(Edit(start, end, first + "".join(nl + ln for ln in body[1:])))


def _nest(keys: Keys, value: Value) -> Any:
    out: Any = value
    for key in reversed(keys):
        out = {key: out}
    return out
