"""YAML parsing that remembers, for every key and list item, the file line it is on.

HoloDeck parses with ``yaml.safe_load``; this composes the same document with PyYAML's safe loader
(same types, same YAML 1.1 rules, same last-wins duplicate keys) but keeps the node tree so every
error and warning can name its line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

#: A path into the parsed document: mapping keys (str) and list indexes (int).
KeyPath = tuple[str | int, ...]

try:  # the C loader when PyYAML was built with libyaml: same results, several times faster
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment,misc]
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader


@dataclass(frozen=True)
class Duplicate:
    """A mapping key given twice; YAML (and HoloDeck) keep the last value."""

    path: KeyPath
    line0: int
    first_line0: int


@dataclass
class YamlTree:
    """The parsed document and the 0-based line (in the parsed text) of each key path."""

    data: Any
    lines0: dict[KeyPath, int] = field(default_factory=dict)
    columns0: dict[KeyPath, int] = field(default_factory=dict)
    """0-based column of each key (or item), beside :attr:`lines0`."""
    duplicates: list[Duplicate] = field(default_factory=list)

    def line0_of(self, path: KeyPath) -> int | None:
        """The line of ``path``, else of its nearest ancestor that is in the file."""
        for end in range(len(path), -1, -1):
            line = self.lines0.get(path[:end])
            if line is not None:
                return line
        return None


class YamlSyntaxError(Exception):
    """The text is not YAML; ``line0`` is the 0-based line of the problem, ``cause`` one line."""

    def __init__(self, cause: str, line0: int | None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.line0 = line0


def parse(text: str) -> YamlTree:
    """Parse one YAML document, keeping the line of every key and item."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        duplicates = _duplicates(node, ()) if node is not None else []
        # Construction flattens merge keys (<<) into their mappings; lines are indexed after it.
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise YamlSyntaxError(_cause(err), mark.line if mark else None) from None
    except yaml.YAMLError as err:
        raise YamlSyntaxError(str(err).replace("\n", " "), None) from None
    finally:
        loader.dispose()
    tree = YamlTree(data, duplicates=duplicates)
    if node is not None:
        _index(node, (), tree)
    return tree


def _cause(err: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (err.context, err.problem) if p]
    cause = ", ".join(parts) if parts else "not valid YAML"
    mark = err.problem_mark or err.context_mark
    if mark is not None:
        cause += f" (column {mark.column + 1})"
    return " ".join(cause.split())


def _key(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def _index(node: yaml.Node, path: KeyPath, tree: YamlTree) -> None:
    if path not in tree.lines0:
        tree.lines0[path] = node.start_mark.line
        tree.columns0[path] = node.start_mark.column
    walk: Callable[[yaml.Node, KeyPath, YamlTree], None] = _index
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = _key(key_node)
            if key in seen:  # the last occurrence wins, as in the constructed data
                _forget(tree, (*path, key))
            seen.add(key)
            tree.lines0[(*path, key)] = key_node.start_mark.line
            tree.columns0[(*path, key)] = key_node.start_mark.column
            walk(value_node, (*path, key), tree)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            walk(item, (*path, i), tree)


def _duplicates(node: yaml.Node, path: KeyPath) -> list[Duplicate]:
    """Keys written twice in one mapping (before merge keys are flattened)."""
    found: list[Duplicate] = []
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = _key(key_node)
            line0 = key_node.start_mark.line
            if key in first and key != "<<":
                found.append(Duplicate((*path, key), line0, first[key]))
            first.setdefault(key, line0)
            found.extend(_duplicates(value_node, (*path, key)))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found.extend(_duplicates(item, (*path, i)))
    return found


def _forget(tree: YamlTree, prefix: KeyPath) -> None:
    """Drop the lines recorded under ``prefix`` (a duplicate key's earlier value)."""
    n = len(prefix)
    for path in [p for p in tree.lines0 if p[:n] == prefix]:
        del tree.lines0[path]
        tree.columns0.pop(path, None)
