"""Where the ``tool_filtering`` block is in the file, and the text edits that rewrite it.

PyYAML's libyaml composer (what the loader parses with, one pass in C) gives nodes whose marks
are exact character spans; the edits touch only those spans (a changed value, an added key, an
added or removed list item). Nothing outside the block is ever in an edit, so every byte outside
it stays as it was; values that do not change are not touched at all, so their spelling (``0.30``,
``"bm25"``, ``${TOP_K}``), anchors and comments stay too.

The rules (docs/design.md, Write-back; documented for users in ``holo-tune apply --help``):

* keys the block has keep their place and their comments; a changed value is replaced in place;
* a key the block lacks is added (after its last key, or inside ``{...}`` for a flow-style block)
  only when the new value differs from HoloDeck's default, which the runtime would use anyway;
* a flow-style block stays in flow style, a flow list stays a flow list; a block list is edited
  item by item (items that stay keep their comments; a removed item's line goes with it; comment
  lines between items stay);
* a file without a block (or with an empty ``tool_filtering:``) gets the whole block, every key
  written, appended at the end of the file after one blank line, in the file's line ending.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workbench.config.filtering import BLOCK_KEYS, DEFAULT_FILTERING, ToolFiltering
from workbench.config.writeback.render import (
    BLOCK_NAME,
    Style,
    block_lines,
    entry_lines,
    flow_entry_text,
    flow_list_text,
    scalar_text,
    string_text,
)
from workbench.config.writeback.text import (
    Edit,
    break_before,
    detect_newline,
    ends_with_break,
    eol,
    line_start,
)
from workbench.config.yamlvalues import find_bad_scalar
from workbench.errors import ConfigError, InputError, WriteBackError
from workbench.limits import StructureError, check_yaml, no_gc

try:  # the loader's own parser: libyaml when PyYAML has it
    Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment,misc]
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    Loader = yaml.SafeLoader

_LIST_KEY = "always_include"
_DEFAULTS = DEFAULT_FILTERING.block()
_MISSING = object()
#: Why a duplicate key stops the write-back (the loader only warns of it).
_WHICH_ONE = (
    "HoloDeck's loader takes the last value, but holo-tune cannot tell which one to edit: "
    "delete one and run it again"
)
#: A document end marker line (``...``), which the appended block must precede.
_DOC_END = re.compile(r"(?m)^\.\.\.(?=[ \t]*(?:#.*)?$)")


def where(path: str, line: int | None, field_name: str | None, message: str) -> str:
    """``FILE:LINE: FIELD: message``: the one-line form every refusal uses."""
    return InputError(message, file=path, line=line, field=field_name).one_line()


@dataclass
class Composed:
    """A document's node tree and the loader that composed it (to construct parts of it)."""

    root: Node | None
    loader: Any
    path: str = ""

    def construct(self, node: Node) -> Any:
        """The data of one node (merge keys inside it are flattened, in the node itself);
        ConfigError when it cannot be built (an unhashable key, a bad merge)."""
        try:
            with no_gc():
                return self.loader.construct_document(node)
        except yaml.YAMLError as err:
            raise yaml_error(err, self.path) from None
        except Exception as err:  # a constructor's own failure (ValueError, KeyError, ...)
            bad = find_bad_scalar(self.loader, node)
            if bad is None:
                raise ConfigError(f"not valid YAML: {err}", file=self.path) from None
            line = bad.line0 + 1 if bad.line0 is not None else None
            raise ConfigError(bad.cause, file=self.path, line=line) from None


def yaml_error(err: yaml.YAMLError, path: str) -> ConfigError:
    """PyYAML's error as the project's one line, at the line it marks."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        cause = ", ".join(p for p in (err.context, err.problem) if p) or "not valid YAML"
        return ConfigError(f"not valid YAML: {' '.join(cause.split())}", file=path, line=line)
    return ConfigError(f"not valid YAML: {err}".splitlines()[0], file=path)


def compose(text: str, path: str) -> Composed:
    """The node tree of ``text`` (the limits checked first); ConfigError when it is not YAML."""
    loader = Loader(text)
    try:
        check_yaml(text, Loader)
        with no_gc():
            return Composed(loader.get_single_node(), loader, path)
    except StructureError as err:
        line = err.line0 + 1 if err.line0 is not None else None
        raise ConfigError(err.cause, file=path, line=line) from None
    except yaml.YAMLError as err:
        raise yaml_error(err, path) from None


def compose_root(text: str, path: str, node: Node | None = None) -> MappingNode:
    """The document's top-level mapping node; ConfigError when the text is not one YAML mapping."""
    if node is None:
        node = compose(text, path).root
    if not isinstance(node, MappingNode):
        raise ConfigError("not an agent config: the top level is not a mapping", file=path)
    if node.flow_style:
        raise WriteBackError(where(path, 1, None, "the top-level mapping is in flow style"))
    return node


def anchored(text: str, node: Node) -> bool:
    """Whether ``node`` carries an anchor (``&name``): its span starts with its properties
    (``&name``, ``!tag``), as libyaml marks it."""
    pos = int(node.start_mark.index)
    while pos < len(text) and text[pos] in "&!":
        if text[pos] == "&":
            return True
        while pos < len(text) and text[pos] not in " \t\r\n":
            pos += 1
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
    return False


def coerced(key: str, literal: Any) -> Any:
    """What HoloDeck reads ``literal`` as for ``key`` (``_MISSING`` when it would reject it)."""
    try:
        return ToolFiltering.model_validate({key: literal}).block()[key]
    except ValidationError:
        return _MISSING


def detect_style(text: str, root: MappingNode) -> Style:
    """The file's line ending, mapping indent and block-list offset (defaults 2 and the indent)."""
    indent: int | None = None
    seq_offset: int | None = None
    queue: deque[Node] = deque([root])  # breadth first: the top level's children decide
    seen: set[int] = set()
    while queue and (indent is None or seq_offset is None):
        node = queue.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, SequenceNode):
            queue.extend(node.value)
        if not isinstance(node, MappingNode) or node.flow_style:
            continue
        for key, value in node.value:
            queue.append(value)
            col = key.start_mark.column
            if isinstance(value, MappingNode) and not value.flow_style and value.value:
                step = value.value[0][0].start_mark.column - col
                indent = step if indent is None and step > 0 else indent
            if isinstance(value, SequenceNode) and not value.flow_style and value.value:
                at_dash = text[value.start_mark.index : value.start_mark.index + 1] == "-"
                step = value.start_mark.column - col
                seq_offset = step if seq_offset is None and at_dash and step >= 0 else seq_offset
    indent = indent or 2
    return Style(
        newline=detect_newline(text),
        indent=indent,
        seq_offset=indent if seq_offset is None else seq_offset,
    )


class NodeText:
    """Where nodes' own text starts and ends in ``text`` (libyaml's marks include trailing blanks
    and comments): the readers both text editors (the block's and the allowlists') share.
    ``key_syntax`` says why a key without a plain ``:`` after it is refused."""

    text: str

    def key_syntax(self, key: Node) -> WriteBackError:
        raise NotImplementedError

    def empty(self, node: Node) -> bool:
        """An empty value (``key:`` and nothing): an empty span (or only blanks)."""
        span = self.text[node.start_mark.index : node.end_mark.index]
        return isinstance(node, ScalarNode) and not span.strip()

    def content_end(self, node: Node) -> int:
        """Where a node's own text ends (a block collection: where its last item's text ends)."""
        if isinstance(node, ScalarNode):
            start, end = node.start_mark.index, node.end_mark.index
            while end > start and self.text[end - 1] in " \t\r\n":
                end -= 1
            return int(end)
        if not isinstance(node, MappingNode | SequenceNode) or node.flow_style or not node.value:
            return int(node.end_mark.index)
        last = node.value[-1]
        if isinstance(last, tuple):
            return self.entry_end(*last)
        return self.content_end(last)

    def entry_end(self, key: Node, value: Node) -> int:
        return self.colon(key) + 1 if self.empty(value) else self.content_end(value)

    def colon(self, key: Node) -> int:
        """The index of the ``:`` after a mapping key."""
        pos: int = self.content_end(key)
        while pos < len(self.text) and self.text[pos] in " \t":
            pos += 1
        if self.text[pos : pos + 1] != ":":
            raise self.key_syntax(key)
        return pos


@dataclass
class Splice(NodeText):
    """The edits that turn the file's block into ``setting``, and what the user should know."""

    text: str
    path: str
    setting: ToolFiltering
    #: The block as the file holds it, read by PyYAML (``${VAR}`` unexpanded).
    literal: Mapping[str, Any] | None
    #: The block as loaded with ``${VAR}`` expanded, when the caller has it.
    current: ToolFiltering | None = None
    edits: list[Edit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Keys whose text is left exactly as it was.
    untouched: set[str] = field(default_factory=set)
    #: The composed document (composed here when not given).
    node: Node | None = None
    #: The file's style and last value when a skeleton
    #: (:mod:`~workbench.config.writeback.skeleton`) stands in for the whole tree: what
    #: ``detect_style`` and ``content_end`` would find on the whole tree.
    known_style: Style | None = None
    known_tail: tuple[ScalarNode | None, Node] | None = None

    def __post_init__(self) -> None:
        self.root = compose_root(self.text, self.path, self.node)
        self.style = self.known_style or detect_style(self.text, self.root)
        self.want = self.setting.block()

    def root_end(self) -> int:
        """Where the document's content ends (its last value's text)."""
        if self.known_tail is None:
            return self.content_end(self.root)
        key, last = self.known_tail
        return self.entry_end(key, last) if key is not None else self.content_end(last)

    # -- small readers of the text ------------------------------------------------------------

    def refuse(self, node: Node | None, key: str | None, cause: str) -> WriteBackError:
        line = node.start_mark.line + 1 if node is not None else None
        name = f"{BLOCK_NAME}.{key}" if key else BLOCK_NAME
        return WriteBackError(where(self.path, line, name, cause))

    def key_syntax(self, key: Node) -> WriteBackError:
        return self.refuse(key, None, "unsupported key syntax; edit the block by hand")

    def anchored(self, node: Node) -> bool:
        return anchored(self.text, node)

    def is_alias(self, key: Node, value: Node) -> bool:
        """An alias (``*name``) resolves to the anchored node, which sits before its key."""
        return bool(value.start_mark.index < key.end_mark.index)

    # -- the block ------------------------------------------------------------------------------

    def run(self) -> None:
        found = [(k, v) for k, v in self.root.value if _is_key(k, BLOCK_NAME)]
        if len(found) > 1:
            raise self.refuse(found[1][0], None, f"appears twice at the top level; {_WHICH_ONE}")
        if not found:
            self.append_block()
            return
        key, value = found[0]
        if self.is_alias(key, value):
            raise self.refuse(key, None, "is an alias (*name); edit its anchor by hand")
        if isinstance(value, ScalarNode) and str(value.tag).endswith(":null"):
            self.fill_null_block(key, value)
        elif isinstance(value, MappingNode):
            self.edit_block(value)
        else:
            raise self.refuse(value, None, "is not a mapping")

    def append_block(self) -> None:
        """No block: append it at the end (before a ``...`` end marker), after one blank line,
        at the top level's column."""
        nl = self.style.newline
        marker = _DOC_END.search(self.text, self.root_end())
        at = marker.start() if marker else len(self.text)
        text = self.text[:at]
        prefix = ""
        if text.lstrip("\ufeff") and not ends_with_break(text):
            prefix += nl
        body = (text + prefix)[: break_before(text + prefix, len(text + prefix))]
        if body.lstrip("\ufeff") and not ends_with_break(body):
            prefix += nl
        column = self.entry_column(self.root.value[0][0]) if self.root.value else 0
        lines = block_lines(self.setting, column=column, style=self.style)
        self.edits.append(Edit(at, at, prefix + "".join(ln + nl for ln in lines)))

    def entry_column(self, key: Node) -> int:
        """The column a block mapping's entry starts at: its key's, or its ``?``'s when the key
        is written explicitly (``? name``)."""
        column = int(key.start_mark.column)
        index = int(key.start_mark.index)
        head = self.text[index - column : index]
        return head.index("?") if head.strip() == "?" else column

    def fill_null_block(self, key: ScalarNode, value: ScalarNode) -> None:
        """``tool_filtering:`` (``~``, ``null``): the runtime reads no block; write every key."""
        if self.anchored(value):
            raise self.refuse(value, None, "has an anchor (&name); edit it by hand")
        colon = self.colon(key)
        after = colon + 1
        if not self.empty(value):
            end = self.content_end(value)
            between = self.text[after : value.start_mark.index]
            start = after if not between.strip() else value.start_mark.index
            self.edits.append(Edit(start, end, ""))
            after = end
        column = key.start_mark.column + self.style.indent
        lines = [
            ln
            for k in BLOCK_KEYS
            for ln in entry_lines(k, self.want[k], column=column, style=self.style)
        ]
        at = eol(self.text, after)
        self.edits.append(Edit(at, at, "".join(self.style.newline + ln for ln in lines), 1))

    def edit_block(self, block: MappingNode) -> None:
        entries: dict[str, tuple[ScalarNode, Node]] = {}
        for key, value in block.value:
            if not isinstance(key, ScalarNode) or str(key.tag).endswith(":merge"):
                raise self.refuse(key, None, "merge keys (<<) are not supported; edit it by hand")
            if key.value not in BLOCK_KEYS:
                raise self.refuse(key, str(key.value), "unknown key (HoloDeck rejects it)")
            if key.value in entries:
                raise self.refuse(key, str(key.value), f"appears twice; {_WHICH_ONE}")
            entries[str(key.value)] = (key, value)
        literal = self.literal or {}
        tail: int | None = None
        missing: list[str] = []
        for name in BLOCK_KEYS:
            if name not in entries:
                if self.want[name] != _DEFAULTS[name]:
                    missing.append(name)
                continue
            if self.unchanged(name, literal.get(name, _MISSING)):
                self.untouched.add(name)
                continue
            key, value = entries[name]
            end = self.edit_value(name, key, value, literal.get(name))
            if key is block.value[-1][0]:
                tail = end
        if missing:
            self.add_keys(block, missing, tail)

    def unchanged(self, name: str, literal: Any) -> bool:
        if self.current is not None and self.current.block()[name] == self.want[name]:
            return True
        return bool(coerced(name, literal) == self.want[name])

    def add_keys(self, block: MappingNode, names: list[str], tail: int | None) -> None:
        """Add ``names`` after the block's last key (or inside an empty ``{}``)."""
        if block.flow_style:
            entries = [flow_entry_text(n, self.want[n]) for n in names]
            if block.value:
                pos = self.entry_end(*block.value[-1])
                self.edits.append(Edit(pos, pos, "".join(", " + e for e in entries), 1))
            else:
                pos = self.text.index("{", block.start_mark.index) + 1
                self.edits.append(Edit(pos, pos, ", ".join(entries), 1))
            return
        first_key = block.value[0][0]
        column = first_key.start_mark.column
        lines = [
            ln
            for n in names
            for ln in entry_lines(n, self.want[n], column=column, style=self.style)
        ]
        pos = tail if tail is not None else eol(self.text, self.entry_end(*block.value[-1]))
        nl = self.style.newline
        self.edits.append(Edit(pos, pos, "".join(nl + ln for ln in lines), 1))

    # -- values ---------------------------------------------------------------------------------

    def edit_value(self, name: str, key: ScalarNode, value: Node, old: Any) -> int:
        """Rewrite one value; returns where the entry's kept text now ends (its line's end)."""
        if self.is_alias(key, value):
            raise self.refuse(key, name, "is an alias (*name); edit it by hand")
        if self.anchored(value):
            raise self.refuse(value, name, "has an anchor (&name); edit it by hand")
        new = self.want[name]
        if isinstance(new, list) and isinstance(value, SequenceNode):
            return self.edit_list(key, value, new, old if isinstance(old, list) else [])
        if not isinstance(value, ScalarNode):
            raise self.refuse(value, name, "is not a single value; edit it by hand")
        quote = value.style if value.style in ("'", '"') else None
        text = flow_list_text(new) if isinstance(new, list) else scalar_text(new, quote)
        self.replace_scalar(name, key, value, text)
        return eol(self.text, self.entry_end(key, value))

    def replace_scalar(self, name: str, key: ScalarNode, value: ScalarNode, text: str) -> None:
        if self.empty(value):
            at = self.colon(key) + 1
            self.edits.append(Edit(at, at, " " + text))
            return
        start, end = value.start_mark.index, self.content_end(value)
        old_text = self.text[start:end]
        if "${" in old_text:
            self.warnings.append(
                f"{BLOCK_NAME}.{name}: the reference {old_text} is replaced by the value {text}"
            )
        self.edits.append(Edit(start, end, text))

    def edit_list(self, key: ScalarNode, seq: SequenceNode, new: list[str], old: list[Any]) -> int:
        """Edit a list; returns where its kept text ends (the end of its last kept line).

        A flow list is rewritten whole. A block list is edited item by item: items that stay
        keep their lines and comments, a removed item's line goes (with its comment), new
        items get new lines; comment lines between items stay.
        """
        items: list[ScalarNode] = []
        for item in seq.value:
            aliased = item.start_mark.index < seq.start_mark.index
            if not isinstance(item, ScalarNode) or self.anchored(item) or aliased:
                raise self.refuse(item, _LIST_KEY, "items must be plain strings; edit it by hand")
            items.append(item)
        if seq.flow_style:
            span = self.text[seq.start_mark.index : seq.end_mark.index]
            if has_comment(span):
                raise self.refuse(seq, _LIST_KEY, "a comment inside [...] would be lost")
            self.edits.append(Edit(seq.start_mark.index, seq.end_mark.index, flow_list_text(new)))
            return eol(self.text, self.content_end(seq))
        if not new:
            return self.empty_block_list(key, items)
        old = old if len(old) == len(items) else [_MISSING] * len(items)
        opcodes = SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        gone = {
            i for op, i1, i2, _, _ in opcodes if op in ("delete", "replace") for i in range(i1, i2)
        }
        for item in (items[i] for i in sorted(gone)):
            self.delete_item(item)
        for op, i1, _, j1, j2 in opcodes:
            if op in ("insert", "replace"):
                self.insert_items(key, items, gone, i1, new[j1:j2], seq.start_mark.column)
        kept = [i for i in range(len(items)) if i not in gone]
        if kept:
            return eol(self.text, self.content_end(items[kept[-1]]))
        return eol(self.text, self.colon(key))

    def delete_item(self, item: ScalarNode) -> None:
        """Remove a block list item's line (with its comment); comment lines around it stay."""
        dash = self.dash_of(item)
        end = eol(self.text, self.content_end(item))
        rest = self.text[self.content_end(item) : end].strip()
        if rest and not rest.startswith("#"):
            raise self.refuse(item, _LIST_KEY, "unsupported list layout; edit it by hand")
        self.edits.append(Edit(break_before(self.text, line_start(self.text, dash)), end, "", 2))

    def insert_items(
        self,
        key: ScalarNode,
        items: list[ScalarNode],
        gone: set[int],
        at: int,
        values: list[str],
        column: int,
    ) -> None:
        """New items where ``items[at]`` was: after the line of the last item kept before it,
        else before the next kept item's line (its leading comments stay with it), else right
        under the key's line."""
        nl, pad = self.style.newline, " " * column
        lines = [f"{pad}- {string_text(v)}" for v in values]
        before = [i for i in range(at) if i not in gone]
        if before:
            pos = eol(self.text, self.content_end(items[before[-1]]))
        elif at < len(items) and at not in gone:
            pos = line_start(self.text, self.dash_of(items[at]))
            self.edits.append(Edit(pos, pos, "".join(line + nl for line in lines)))
            return
        else:
            pos = eol(self.text, self.colon(key))
        self.edits.append(Edit(pos, pos, "".join(nl + line for line in lines)))

    def empty_block_list(self, key: ScalarNode, items: list[ScalarNode]) -> int:
        """Every item goes: their lines are removed and the key says ``[]``."""
        for item in items:
            self.delete_item(item)
        at = self.colon(key) + 1
        self.edits.append(Edit(at, at, " []"))
        return eol(self.text, at)

    def dash_of(self, item: ScalarNode) -> int:
        """The ``-`` of a block list item, which must start its line."""
        pos: int = item.start_mark.index - 1
        while pos >= 0 and self.text[pos] in " \t":
            pos -= 1
        before = self.text[line_start(self.text, max(pos, 0)) : max(pos, 0)]
        if pos < 0 or self.text[pos] != "-" or before.strip():
            raise self.refuse(item, _LIST_KEY, "unsupported list layout; edit it by hand")
        return pos


def has_comment(span: str) -> bool:
    """Whether a YAML flow span holds a ``#`` comment (a ``#`` after a blank, outside quotes)."""
    quote: str | None = None
    previous = " "
    for char in span:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and previous in " \t\r\n":
            return True
        previous = char
    return False


def _is_key(node: Node, name: str) -> bool:
    return isinstance(node, ScalarNode) and node.value == name
