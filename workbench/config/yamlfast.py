"""The common case of :func:`workbench.config.yamltree.parse` in one pass over libyaml's events.

Composing PyYAML's node tree, constructing the data from it and walking it again for the lines
costs three passes and a node object per value: most of the time and memory a large agent file
takes to load. Real agent files are plain (no anchors, aliases, tags, merge keys, duplicate or
non-string keys), and such a document can be read straight from the event stream: each value is
built as ``yaml.safe_load`` builds it (the same resolver and the same constructors decide every
plain scalar) and each key's line and column are noted on the way.

Anything else ends the pass with :class:`NotPlain` and the caller takes the general path (the node
tree), which stays the reference: the property tests compare the two on random documents. The
limits (:mod:`workbench.limits`) need no pass of their own here: without aliases nothing expands,
and a document nested deeper than :data:`~workbench.limits.MAX_DEPTH` is not plain either, so the
general path refuses it in its own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import ScalarNode

from workbench.config.yamlvalues import KeyPath
from workbench.limits import MAX_DEPTH

__all__ = ["KeyPath", "NotPlain", "PlainTree", "read_plain"]

_STR = "tag:yaml.org,2002:str"
#: Plain scalars these tags resolve to are not data values (merge keys, the ``=`` value key).
_SPECIAL = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


class NotPlain(Exception):
    """The document is not in the plain subset, not YAML, or holds a value that cannot be built:
    read it the general way (which reports every error in the node tree's order)."""


@dataclass
class PlainTree:
    """What the pass found: the data, and the 0-based line and column of every key and item."""

    data: Any
    lines0: dict[KeyPath, int]
    columns0: dict[KeyPath, int]


class _Frame:
    """One open mapping or list: the value being built, its key path, the key awaiting a value."""

    __slots__ = ("key", "mapping", "path", "value")

    def __init__(self, value: Any, path: KeyPath, mapping: bool) -> None:
        self.value = value
        self.path = path
        self.mapping = mapping
        self.key: str | None = None


def read_plain(text: str, loader_class: type[Any]) -> PlainTree:
    """Read one plain YAML document; :class:`NotPlain` when it is not plain (or not valid).

    ``loader_class`` is the loader the general path uses (its resolver and constructors decide
    each scalar, so both paths build the same values).
    """
    loader = loader_class(text)
    try:
        return _read(loader)
    except yaml.YAMLError:
        raise NotPlain from None
    finally:
        loader.dispose()


def _read(loader: Any) -> PlainTree:
    if loader.yaml_path_resolvers:  # a resolver that depends on where a node is: not plain
        raise NotPlain
    next_event = loader.get_event
    scalar = _ScalarReader(loader)
    resolved_first, wildcard = scalar.resolvers, scalar.wildcard
    lines0: dict[KeyPath, int] = {}
    columns0: dict[KeyPath, int] = {}
    tree = PlainTree(None, lines0, columns0)
    next_event()  # the stream's start
    event = next_event()
    if type(event) is yaml.StreamEndEvent:  # nothing but comments and blank lines
        return tree
    stack: list[_Frame] = []
    done = False
    scalar_event, mapping_start, sequence_start = (
        yaml.ScalarEvent,
        yaml.MappingStartEvent,
        yaml.SequenceStartEvent,
    )
    mapping_end, sequence_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    while not done:
        event = next_event()
        kind = type(event)
        if kind is scalar_event:
            value: Any = event.value
            if event.anchor is not None or event.tag is not None:
                raise NotPlain
            if event.implicit[0] and (value[:1] in resolved_first or wildcard):
                value = scalar.value(value)
        elif kind is mapping_start or kind is sequence_start:
            if event.anchor is not None or event.tag is not None or len(stack) >= MAX_DEPTH:
                raise NotPlain
            mapping = kind is mapping_start
            mark = event.start_mark
            if stack:
                frame = stack[-1]
                if frame.mapping:
                    if frame.key is None:  # a mapping or a list as a key
                        raise NotPlain
                    path: KeyPath = (*frame.path, frame.key)
                else:
                    path = (*frame.path, len(frame.value))
                    lines0[path] = mark.line
                    columns0[path] = mark.column
            else:
                path = ()
                lines0[path] = mark.line
                columns0[path] = mark.column
            stack.append(_Frame({} if mapping else [], path, mapping))
            continue
        elif kind is mapping_end or kind is sequence_end:
            value = stack.pop().value
            if not stack:
                tree.data = value
                done = True
                continue
            frame = stack[-1]
            if frame.mapping:
                frame.value[frame.key] = value
                frame.key = None
            else:
                frame.value.append(value)
            continue
        else:  # an alias (or an event a single document cannot have here)
            raise NotPlain
        # a scalar: the document itself, a key, a mapping's value or a list item
        if not stack:
            mark = event.start_mark
            lines0[()] = mark.line
            columns0[()] = mark.column
            tree.data = value
            break
        frame = stack[-1]
        if not frame.mapping:
            path = (*frame.path, len(frame.value))
            mark = event.start_mark
            lines0[path] = mark.line
            columns0[path] = mark.column
            frame.value.append(value)
        elif frame.key is not None:
            frame.value[frame.key] = value
            frame.key = None
        else:
            if type(value) is not str or value in frame.value:  # not a string, or written twice
                raise NotPlain
            frame.key = value
            path = (*frame.path, value)
            mark = event.start_mark
            lines0[path] = mark.line
            columns0[path] = mark.column
    if type(next_event()) is not yaml.DocumentEndEvent or type(next_event()) is not (
        yaml.StreamEndEvent
    ):
        raise NotPlain  # more than one document: the general path says so
    return tree


class _ScalarReader:
    """A plain scalar's value, as the loader's resolver and constructors make it."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.resolvers: dict[str | None, list[tuple[str, Any]]] = loader.yaml_implicit_resolvers
        self.wildcard = self.resolvers.get(None, [])
        self.constructors = loader.yaml_constructors

    def value(self, text: str) -> Any:
        """The value of a plain, untagged scalar (quoted and block scalars are strings)."""
        tag = _STR
        for candidate, pattern in self.resolvers.get(text[:1], []) + self.wildcard:
            if pattern.match(text):
                tag = candidate
                break
        if tag == _STR:
            return text
        if tag in _SPECIAL:
            raise NotPlain
        construct = self.constructors.get(tag)
        if construct is None:
            raise NotPlain
        try:
            return construct(self.loader, ScalarNode(tag, text))
        except Exception:
            raise NotPlain from None  # any error earlier in the file, as the node tree does
