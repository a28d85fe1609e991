"""YAML parsing that remembers, for every key and list item, the file line it is on.

HoloDeck parses with ``yaml.safe_load``; this composes the same document with PyYAML's safe loader
(same types, same YAML 1.1 rules, same last-wins duplicate keys) but keeps the node tree so every
error and warning can name its line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from workbench.limits import StructureError, check_yaml, no_gc

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


class YamlLimitError(YamlSyntaxError):
    """The text is YAML but breaks one of holo-tune's limits (:mod:`workbench.limits`)."""


def parse(text: str) -> YamlTree:
    """Parse one YAML document, keeping the line of every key and item.

    The limits of :mod:`workbench.limits` (nesting depth, alias expansion) are checked on the event
    stream first, so no tree is built for a document that breaks them; every walk here is
    iterative.
    """
    try:
        check_yaml(text, _Loader)
    except StructureError as err:
        raise YamlLimitError(err.cause, err.line0) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise YamlSyntaxError(_cause(err), mark.line if mark else None) from None
    except yaml.YAMLError as err:
        raise YamlSyntaxError(str(err).replace("\n", " "), None) from None
    loader = _Loader(text)
    try:
        with no_gc():
            node = loader.get_single_node()
            duplicates = _duplicates(node) if node is not None else []
            # Construction flattens merge keys (<<) into their mappings; lines are indexed after.
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
        with no_gc():
            _index(node, tree)
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


def _index(root: yaml.Node, tree: YamlTree) -> None:
    """Record the line and column of every key path, depth first (an explicit stack).

    Of a key written twice only the last occurrence is indexed: it is the one the data holds.
    """
    lines0, columns0 = tree.lines0, tree.columns0
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if path not in lines0:
            lines0[path] = node.start_mark.line
            columns0[path] = node.start_mark.column
        if isinstance(node, yaml.MappingNode):
            last = {_key(key_node): i for i, (key_node, _) in enumerate(node.value)}
            children: list[tuple[yaml.Node, KeyPath]] = []
            for i, (key_node, value_node) in enumerate(node.value):
                key = _key(key_node)
                if last[key] != i:  # an earlier duplicate: the data keeps the last value
                    continue
                child = (*path, key)
                lines0[child] = key_node.start_mark.line
                columns0[child] = key_node.start_mark.column
                children.append((value_node, child))
            stack.extend(reversed(children))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(node.value))))


def _duplicates(root: yaml.Node) -> list[Duplicate]:
    """Keys written twice in one mapping (before merge keys are flattened), in document order."""
    found: list[Duplicate] = []
    stack: list[tuple[yaml.Node, KeyPath] | Duplicate] = [(root, ())]
    while stack:
        task = stack.pop()
        if isinstance(task, Duplicate):
            found.append(task)
            continue
        node, path = task
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            todo: list[tuple[yaml.Node, KeyPath] | Duplicate] = []
            for key_node, value_node in node.value:
                key = _key(key_node)
                line0 = key_node.start_mark.line
                if key in first and key != "<<":
                    todo.append(Duplicate((*path, key), line0, first[key]))
                first.setdefault(key, line0)
                todo.append((value_node, (*path, key)))
            stack.extend(reversed(todo))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(node.value))))
    return found
