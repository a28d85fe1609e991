"""A JSON text changed only where its document changed.

A writer that merges into a user's JSON file (``.mcp.json``, PizzaPi's ``config.json``) changes
a few members of an object. Dumping the whole new document re-indents every entry it did not
touch: a one-line ``"args": ["-y", "server"]`` becomes four lines, and the diff the user reads is
mostly noise. :func:`splice` instead replaces, removes or appends only the members whose values
changed, each new value dumped with the file's indent at its own depth, and leaves every other
byte as it was.

It returns None when it cannot (the text is not one JSON object, or a scan does not find what
the document says is there); the caller then dumps the whole document. Whatever it returns parses
to exactly the new document (checked before it is returned), so a splice is never worse than a
dump.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_SPACE = re.compile(r"[ \t\r\n]*")
_LEAD = re.compile(r"[ \t]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
#: A string, a bracket, or a run of anything else: a container's end is where its brackets close.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]|[^"{}\[\]]+', re.DOTALL)


class _Unscannable(Exception):
    """The text is not what the scanner expects (the caller dumps the whole document)."""


@dataclass(frozen=True, slots=True)
class _Item:
    """One member of an object (``"key": value``) or element of an array: where it starts, where
    its key ends and its value's span (in an array the key is None and every offset but the
    value's end is where it starts)."""

    key: str | None
    start: int
    key_end: int
    value_start: int
    value_end: int


def _space(text: str, pos: int) -> int:
    found = _SPACE.match(text, pos)
    assert found is not None  # the pattern matches the empty string
    return found.end()


def _value_end(text: str, pos: int) -> int:
    """The end of the JSON value starting at ``pos`` (a container by counting its brackets,
    outside strings: no recursion, however deep)."""
    if pos >= len(text):
        raise _Unscannable
    if text[pos] not in "{[":
        found = (_STRING if text[pos] == '"' else _SCALAR).match(text, pos)
        if found is None:
            raise _Unscannable
        return found.end()
    depth = 0
    for token in _TOKEN.finditer(text, pos):
        bracket = token.group()
        if bracket == "{" or bracket == "[":
            depth += 1
        elif bracket == "}" or bracket == "]":
            depth -= 1
            if depth == 0:
                return token.end()
    raise _Unscannable


def _items(text: str, start: int) -> tuple[list[_Item], int]:
    """The members of the object (or the elements of the array) at ``start``, and the offset of
    its closing bracket."""
    opening = text[start] if start < len(text) else ""
    if opening not in ("{", "["):
        raise _Unscannable
    close = "}" if opening == "{" else "]"
    items: list[_Item] = []
    pos = _space(text, start + 1)
    if pos < len(text) and text[pos] == close:
        return items, pos
    while True:
        key, key_end, value_start = None, pos, pos
        if opening == "{":
            if pos >= len(text) or text[pos] != '"':
                raise _Unscannable
            key_end = _value_end(text, pos)
            key = json.loads(text[pos:key_end])
            colon = _space(text, key_end)
            if colon >= len(text) or text[colon] != ":":
                raise _Unscannable
            value_start = _space(text, colon + 1)
        value_end = _value_end(text, value_start)
        items.append(_Item(key, pos, key_end, value_start, value_end))
        pos = _space(text, value_end)
        if pos >= len(text):
            raise _Unscannable
        if text[pos] == close:
            return items, pos
        if text[pos] != ",":
            raise _Unscannable
        pos = _space(text, pos + 1)


def same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same JSON: equal, and of the same types all the way down (Python
    has ``True == 1`` and ``1 == 1.0``; a file that said ``1`` does not say ``true``). An
    object's members in any order; NaN is NaN. Iterative: as deep as the parser reads."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack += [(v, y[k]) for k, v in x.items()]
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack += list(zip(x, y, strict=True))
        elif x != y and not (isinstance(x, float) and x != x and y != y):
            return False
    return True


def _value_edits(
    text: str, start: int, end: int, was: Any, now: Any, style: _Style, layout: _Layout
) -> list[tuple[int, int, str]]:
    """The replacements that turn the value at ``start:end`` (in a container of ``layout``)
    from ``was`` into ``now``: into an object, member by member; into an array of the same
    length, element by element; else the value written again."""
    if same(was, now):
        return []
    if isinstance(was, dict) and isinstance(now, dict):
        return _edits(text, start, was, now, style)
    if isinstance(was, list) and isinstance(now, list) and len(was) == len(now) and was:
        elements, _ = _items(text, start)
        if len(elements) != len(was):
            raise _Unscannable
        inner = _layout(text, start, end)
        edits: list[tuple[int, int, str]] = []
        for element, old_item, new_item in zip(elements, was, now, strict=True):
            span = (element.value_start, element.value_end)
            edits += _value_edits(text, *span, old_item, new_item, style, inner)
        return edits
    return [(start, end, _dump(now, style, _line_indent(text, start), layout))]


@dataclass(frozen=True, slots=True)
class _Style:
    """How the file writes: its indent unit and its line break."""

    indent: str
    newline: str


@dataclass(frozen=True, slots=True)
class _Layout:
    """How one container is written: on one line or not, its separators."""

    inline: bool
    item: str = ", "
    key: str = ": "


def _layout(text: str, start: int, end: int, members: list[_Item] | None = None) -> _Layout:
    """The layout of the container at ``start:end`` (its members, for an object's separators)."""
    inline = "\n" not in text[start:end]
    item, key = ", ", ": "
    if members:
        key = text[members[0].key_end : members[0].value_start]
        # one member: a file compact after its keys is compact after its items too
        item = ", " if key.endswith(" ") else ","
        if len(members) > 1:
            item = text[members[0].value_end : members[1].start]
    return _Layout(inline, item if inline else ", ", key)


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line ``pos`` is on."""
    line_start = text.rfind("\n", 0, pos) + 1
    found = _LEAD.match(text, line_start)
    assert found is not None  # the pattern matches the empty string
    return found.group()


def _dump(value: Any, style: _Style, column: str, layout: _Layout) -> str:
    """``value`` as the file writes it where it goes: on one line in a one-line container (with
    its separators), else indented from ``column``."""
    if layout.inline:
        separators = (layout.item.strip() + " " * (" " in layout.item), layout.key)
        return json.dumps(value, ensure_ascii=False, separators=separators)
    dumped = json.dumps(value, ensure_ascii=False, indent=style.indent)
    return dumped.replace("\n", style.newline + column)


def _edits(
    text: str, start: int, old: dict[str, Any], new: dict[str, Any], style: _Style
) -> list[tuple[int, int, str]]:
    """The replacements ``(start, end, text)`` that turn the object at ``start`` from ``old``
    into ``new``."""
    members, close = _items(text, start)
    if text[start] != "{" or [m.key for m in members] != list(old):
        raise _Unscannable  # duplicate keys, or a document that is not this text's
    layout = _layout(text, start, close + 1, members)
    kept = [m for m in members if m.key in new]
    if not kept:  # every member goes (or there were none): write the object again
        if not members and not new:
            return []
        return [(start, close + 1, _dump(new, style, _line_indent(text, start), layout))]
    edits: list[tuple[int, int, str]] = []
    last = kept[-1]
    if members[-1] is not last:  # the members after the last kept one go with the comma before
        edits.append((last.value_end, members[-1].value_end, ""))
    for i, member in enumerate(members):
        if member.start > last.start:
            break
        if member.key not in new:  # the member and the comma after it
            edits.append((member.start, members[i + 1].start, ""))
            continue
        was, now = old[member.key], new[member.key]
        span = (member.value_start, member.value_end)
        edits += _value_edits(text, *span, was, now, style, layout)
    added = [key for key in new if key not in old]
    if added:
        column = _line_indent(text, last.start)
        if len(members) > 1:
            separator = text[members[-2].value_end : members[-1].start]
        else:
            separator = layout.item if layout.inline else "," + style.newline + column
        inserted = "".join(
            f"{separator}{json.dumps(key, ensure_ascii=False)}{layout.key}"
            f"{_dump(new[key], style, column, layout)}"
            for key in added
        )
        edits.append((last.value_end, last.value_end, inserted))
    return edits


def splice(text: str, old: dict[str, Any], new: dict[str, Any], indent: str | int) -> str | None:
    """``text`` (a JSON object that parses to ``old``) changed to parse to ``new``, every member
    whose value did not change left byte for byte (module docstring); None when it cannot."""
    pad = " " * indent if isinstance(indent, int) else indent
    style = _Style(pad, "\r\n" if "\r\n" in text else "\n")
    try:  # text after the object, or a text that is not ``old``'s, fails the check at the end
        edits = _edits(text, _space(text, 0), old, new, style)
    except (_Unscannable, json.JSONDecodeError):
        return None
    parts: list[str] = []
    pos = 0
    # ascending; at one offset an insertion (empty span) before a removal that starts there
    for edit_start, edit_end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        if edit_start < pos:
            return None  # overlapping edits: leave it to the full dump
        parts += (text[pos:edit_start], replacement)
        pos = edit_end
    parts.append(text[pos:])
    out = "".join(parts)
    try:
        return out if same(json.loads(out), new) else None
    except (json.JSONDecodeError, RecursionError):
        return None
