"""What the engine reads of a tool: its fields, and the words of a text.

A tool's document has four fields (:data:`FIELDS`): the server, the name split into words, the
description, and each parameter's name and description. The lexical index repeats each field's
words as often as its weight says (a name weighted 3 counts three times); the dense text joins
the fields with a weight above 0, in that order.

Words are what :func:`words` makes of a text: lower case, split at every character that is not a
letter or a digit and inside names (``getUserInfo`` -> get user info, ``HTTPServer`` -> http
server, ``find_symbol`` -> find symbol), a plural's ``s`` taken off (files -> file), and common
English words dropped. A run of CJK characters gives its characters and their pairs, so that a
Chinese query meets a Chinese description without a segmenter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from workbench.catalog.models import Tool

#: The fields of a tool's document, in the order the dense text joins them.
FIELDS = ("server", "name", "description", "parameters")

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: camelCase and acronym boundaries inside one alphanumeric run.
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_a-zA-Z]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_STOP = (
    "a an and are as at be by can do for from how i in into is it its me my of on or our so "
    "that the their then there these this to was we what when where which will with you your"
)
STOP_WORDS = frozenset(_STOP.split())


def name_words(name: str) -> list[str]:
    """A name's words, lower case, in order: split on ``_``, ``-``, ``.``, ``/``, spaces and
    camelCase, and between letters and digits: ``get_userInfo.v2`` is ``["get", "user", "info",
    "v", "2"]``. No word is dropped or stemmed: a name's words are what a user types."""
    found: list[str] = []
    for run in _WORD.findall(name):
        found.extend(part.lower() for part in _CAMEL.findall(run) or [run])
    return found


def stem(word: str) -> str:
    """A plural's ending off: files -> file, queries -> query, boxes -> box; ``ss`` kept."""
    if len(word) <= 3 or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _cjk(run: str) -> list[str]:
    """A CJK run's characters and their neighbouring pairs."""
    return [*run, *(run[i : i + 2] for i in range(len(run) - 1))]


def words(text: str) -> list[str]:
    """The searchable words of ``text`` (see the module's doc), in order, repeats kept."""
    out: list[str] = []
    for run in _WORD.findall(text):
        out.extend(_run_words(run))
    return out


@lru_cache(maxsize=1 << 16)
def _run_words(run: str) -> tuple[str, ...]:
    """The words of one run of letters and digits (cached: a catalog repeats its words)."""
    if not _CJK.search(run):
        return tuple(_plain(run))
    out: list[str] = []
    for piece in re.split(f"({_CJK.pattern})", run):
        if not piece:
            continue
        if _CJK.fullmatch(piece):
            out.extend(_cjk(piece))
        else:
            out.extend(_plain(piece))
    return tuple(out)


def _plain(run: str) -> list[str]:
    parts = [part.lower() for part in _CAMEL.findall(run)] or [run.lower()]
    return [stem(p) for p in parts if p not in STOP_WORDS]


@dataclass(frozen=True, slots=True)
class ToolDocument:
    """One tool's fields as text."""

    server: str
    name: str
    description: str
    parameters: str

    def field(self, name: str) -> str:
        return str(getattr(self, name))

    def tokens(self, weights: Mapping[str, int]) -> list[str]:
        """The lexical document: each field's words, repeated ``weights[field]`` times."""
        out: list[str] = []
        for name in FIELDS:
            times = int(weights.get(name, 0))
            if times > 0:
                out.extend(words(self.field(name)) * times)
        return out

    def dense_text(self, weights: Mapping[str, int]) -> str:
        """The text embedded for the tool: the fields weighted above 0, one per line."""
        return "\n".join(
            text for name in FIELDS if weights.get(name, 0) > 0 and (text := self.field(name))
        )


def document(tool: Tool) -> ToolDocument:
    """A catalog tool's document: its server, its name's words, its description and each
    parameter's name (in words) and description."""
    return ToolDocument(
        server=" ".join(name_words(tool.server)),
        name=" ".join(name_words(tool.name)),
        description=tool.description or "",
        parameters=parameter_text(tool.input_schema),
    )


def parameter_text(schema: Mapping[str, Any]) -> str:
    """Each top-level property of an input schema: its name in words and its description."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    lines: list[str] = []
    for key, spec in properties.items():
        said = spec.get("description") if isinstance(spec, Mapping) else None
        text = " ".join(name_words(str(key)))
        lines.append(f"{text}: {said}" if isinstance(said, str) and said else text)
    return "; ".join(lines)


def documents(tools: Sequence[Tool]) -> list[ToolDocument]:
    return [document(tool) for tool in tools]
