"""Merge into a runtime's JSON configuration file: read it, change a copy, diff, write.

What the JSON writers share (Claude Code's ``.mcp.json``, PizzaPi's ``config.json``): a file
that exists is read under the input limits and must be a JSON object (else one line naming the
file and the line, exit 2); the caller changes a deep copy of it, so every key it does not touch
keeps its value and its place; only the members whose values changed are written again
(:mod:`~workbench.config.writeback.json_splice`: an entry it did not touch keeps its bytes, its
one-line arrays too), with the file's indent (two spaces for a new file) and non-ASCII characters
as they are, and a document that did not change keeps the file's own
bytes. :func:`apply_plan` writes the plan atomically, with a backup beside an existing file,
through a symbolic link to its target and with the file's mode, and refuses (nothing written) a
file changed since it was read.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.config.writeback.files import FilePlan
from workbench.config.writeback.json_splice import same, splice
from workbench.config.writeback.text import unified_diff
from workbench.errors import ConfigError
from workbench.limits import read_input

_INDENT = re.compile(r"^[{\[]\s*\n([ \t]+)\S", re.MULTILINE)
_LEAD = re.compile(r"\n([ \t]+)[^ \t\r\n]")


@dataclass(frozen=True)
class JsonFile:
    """A JSON object file as read: its bytes (None: no file yet), text and document."""

    path: Path
    old: bytes | None
    text: str
    doc: dict[str, Any]

    def copy(self) -> dict[str, Any]:
        """A deep copy of the document, for the caller to change."""
        return copy.deepcopy(self.doc)


def read_json_object(path: str | Path, what: str, empty: dict[str, Any]) -> JsonFile:
    """The JSON object at ``path`` (``what`` names it in errors), or ``empty`` when there is no
    file. Not JSON, or not an object: a ConfigError naming the file (and the line)."""
    path = Path(path)
    if not os.path.lexists(path):
        return JsonFile(path, None, "", copy.deepcopy(empty))
    old = read_input(path, ConfigError, what)  # a regular file under the size limit
    try:
        text = old.decode("utf-8")
        loaded = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        line = getattr(err, "lineno", None)
        cause = f"not JSON: {err}".splitlines()[0]
        raise ConfigError(cause, file=str(path), line=line) from None
    except RecursionError:
        raise ConfigError("not read: its JSON is nested too deep", file=str(path)) from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"not a {what}: the document is not a JSON object", file=str(path))
    return JsonFile(path, old, text, loaded)


def plan_json(read: JsonFile, doc: dict[str, Any]) -> FilePlan:
    """The plan that turns ``read`` into ``doc`` (the same bytes when nothing changed)."""
    indent = indent_of(read.text)
    if read.old is not None and same(doc, read.doc):
        new_text = read.text
    else:
        spliced = None if read.old is None else splice(read.text, read.doc, doc, indent)
        dumped = json.dumps(doc, ensure_ascii=False, indent=indent) + "\n"
        new_text = dumped if spliced is None else spliced
    return FilePlan(
        path=read.path,
        old=read.old,
        new=new_text.encode("utf-8"),
        diff=unified_diff(read.text, new_text, label=str(read.path)),
    )


def indent_of(text: str) -> str | int:
    """The indent of a JSON text's first nested line; when its first line holds more than a
    bracket, the shortest indent of any line; two spaces when no line is indented."""
    found = _INDENT.search(text)
    if found:
        return found.group(1)
    leads = _LEAD.findall(text)
    return min(leads, key=len) if leads else 2
