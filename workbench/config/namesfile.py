"""Lists of tool names handed in as a file: ``--keep-file``, ``--always-include-file``, instead
of one flag per tool.

A names file is one of:

* text: one name a line; blank lines and ``#`` comments are skipped;
* JSON: a list of names, or what a tuner printed with ``--json`` (``holo-tune tune ... --json >
  tuned.json``): the names of its proposal, read from the first of :data:`JSON_KEYS` it has.

Any other file is a one-line error naming the file (and the line, where there is one): exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import InputError
from workbench.limits import read_input

#: Where a tuner's ``--json`` keeps the names of its proposal, in the order they are looked for:
#: the search-tool runtimes' loaded tools, a gateway's kept or pinned tools, the block's
#: always_include, HoloDeck 0.7's exposed tools.
JSON_KEYS: tuple[tuple[str, ...], ...] = (
    ("setting", "loaded"),
    ("setting", "keep_tools"),
    ("setting", "always_visible"),
    ("setting", "always_include"),
    ("exposed",),
)


def read_names(path: str | Path, flag: str) -> list[str]:
    """The names in the file at ``path`` (``flag``: the option that named it, for errors)."""
    raw = read_input(path, InputError, "names file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", file=path, field=flag) from None
    if text.lstrip().startswith(("{", "[")):
        return _from_json(text, Path(path), flag)
    names = []
    for number, line in enumerate(text.splitlines(), start=1):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if any(c.isspace() for c in name):
            raise InputError(
                f"one tool name a line; {name!r} has a space in it", file=path, line=number
            )
        names.append(name)
    return names


def _from_json(text: str, path: Path, flag: str) -> list[str]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"not JSON: {err.msg}", file=path, line=err.lineno) from None
    found: Any = doc
    if isinstance(doc, dict):
        found = next((v for keys in JSON_KEYS if (v := _get(doc, keys)) is not None), None)
        if found is None:
            wanted = ", ".join(".".join(keys) for keys in JSON_KEYS)
            raise InputError(
                f"a JSON object without the names of a proposal (looked for {wanted})",
                file=path,
                field=flag,
            )
    if not isinstance(found, list) or not all(isinstance(n, str) and n.strip() for n in found):
        raise InputError("the names must be a JSON list of tool names", file=path, field=flag)
    return [n.strip() for n in found]


def _get(doc: dict[str, Any], keys: Sequence[str]) -> Any:
    value: Any = doc
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value
