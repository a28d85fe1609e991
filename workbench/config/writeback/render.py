"""Text of the ``tool_filtering`` block and of its values, as holo-tune writes them.

The write-back never re-dumps a document: it splices small pieces of text. These functions make
those pieces. Each value is written so that PyYAML (what HoloDeck loads with, YAML 1.1) and
ruamel.yaml (YAML 1.2) both read back exactly the value meant: floats always carry a dot and no
exponent (``1e-05`` is a *string* to PyYAML), strings that could read as something else are quoted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml
from ruamel.yaml import YAML

from workbench.config.filtering import BLOCK_KEYS, ToolFiltering

BLOCK_NAME = "tool_filtering"

#: Characters a plain (unquoted) string may use; anything else is double-quoted.
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")


@dataclass(frozen=True)
class Style:
    """How the file is written, so inserted lines look like their neighbours."""

    newline: str = "\n"
    indent: int = 2
    #: Columns from a key to the ``-`` of its block sequence items (0 for "indentless" lists).
    seq_offset: int = 2


def float_text(value: float) -> str:
    """A float both YAML 1.1 and 1.2 read as that float: a dot, never an exponent."""
    text = repr(float(value))
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if "." not in text:
        text += ".0"
    return text


def _reads_back(text: str, value: str) -> bool:
    """Whether ``text`` as a plain scalar reads as the string ``value`` in YAML 1.1 and 1.2."""
    loaded_11 = yaml.safe_load(f"k: {text}")
    loaded_12 = YAML(typ="safe", pure=True).load(f"k: {text}")
    return bool(loaded_11 == {"k": value} and loaded_12 == {"k": value})


def string_text(value: str, quote: str | None = None) -> str:
    """A string scalar: in ``quote`` style (``'`` or ``"``) if given, else plain when safe."""
    printable = value.isprintable()
    if quote == "'" and printable:
        return "'" + value.replace("'", "''") + "'"
    if quote is None and _PLAIN.fullmatch(value) and _reads_back(value, value):
        return value
    return json.dumps(value, ensure_ascii=not printable)


def scalar_text(value: Any, quote: str | None = None) -> str:
    """One scalar value of the block (bool, int, float or str)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        return string_text(value, quote)
    raise TypeError(f"not a block scalar: {value!r}")


def flow_list_text(items: list[str]) -> str:
    """A list in flow style: ``[a, b]`` (``[]`` when empty)."""
    return "[" + ", ".join(string_text(item) for item in items) + "]"


def entry_lines(key: str, value: Any, *, column: int, style: Style) -> list[str]:
    """The lines of one ``key: value`` entry of a block mapping, the key at ``column``.

    A non-empty list becomes a block sequence (its ``-`` at ``column + style.seq_offset``); an
    empty one is ``[]``. Lines carry no line ending.
    """
    pad = " " * column
    if isinstance(value, list):
        if not value:
            return [f"{pad}{key}: []"]
        dash = " " * (column + style.seq_offset)
        return [f"{pad}{key}:"] + [f"{dash}- {string_text(item)}" for item in value]
    return [f"{pad}{key}: {scalar_text(value)}"]


def flow_entry_text(key: str, value: Any) -> str:
    """One ``key: value`` entry of a flow mapping."""
    if isinstance(value, list):
        return f"{key}: {flow_list_text(value)}"
    return f"{key}: {scalar_text(value)}"


def block_lines(setting: ToolFiltering, *, column: int = 0, style: Style = Style()) -> list[str]:
    """The whole block, ``tool_filtering:`` at ``column`` and every key in BLOCK_KEYS order."""
    data = setting.block()
    lines = [" " * column + f"{BLOCK_NAME}:"]
    for key in BLOCK_KEYS:
        lines += entry_lines(key, data[key], column=column + style.indent, style=style)
    return lines


def render_block(setting: ToolFiltering) -> dict[str, Any]:
    """The block as data: ``{"tool_filtering": {...}}`` with HoloDeck's key names in order."""
    return {BLOCK_NAME: setting.block()}


def render_block_text(setting: ToolFiltering, *, style: Style = Style()) -> str:
    """The block as YAML text (what ``holo-tune export`` prints), ending with a line break."""
    return "".join(line + style.newline for line in block_lines(setting, style=style))
