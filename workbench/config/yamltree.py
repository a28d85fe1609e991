"""YAML parsing that remembers, for every key and list item, the file line it is on.

HoloDeck parses with ``yaml.safe_load``; this reads the same document with PyYAML's safe loader
(same types, same YAML 1.1 rules, same last-wins duplicate keys) and keeps the line of every key so
every error and warning can name it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from workbench.config.yamlfast import NotPlain, read_plain
from workbench.config.yamlvalues import KeyPath, find_bad_scalar
from workbench.limits import StructureError, check_yaml, no_gc

__all__ = [
    "Duplicate",
    "KeyPath",
    "YamlLimitError",
    "YamlSyntaxError",
    "YamlTree",
    "YamlValueError",
    "parse",
    "parse_nodes",
    "refusal_by_pure_pyyaml",
]

_MERGE = "tag:yaml.org,2002:merge"


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


class YamlValueError(YamlSyntaxError):
    """The text is YAML but a scalar in it cannot be built (``2001-13-45``); ``path`` is its key."""

    def __init__(self, cause: str, line0: int | None, path: KeyPath) -> None:
        super().__init__(cause, line0)
        self.path = path


def parse(text: str) -> YamlTree:
    """Parse one YAML document, keeping the line of every key and item.

    A plain document (no anchors, aliases, tags, merge keys, duplicate or non-string keys: most
    agent files) is read in one pass over the events (:mod:`workbench.config.yamlfast`). Any other
    is composed into PyYAML's node tree; the limits of :mod:`workbench.limits` (nesting depth,
    alias expansion) are checked on the event stream first, so no tree is built for a document
    that breaks them; every walk here is iterative.
    """
    try:
        with no_gc():
            plain = read_plain(text, _Loader)
    except NotPlain:
        return parse_nodes(text)
    return YamlTree(plain.data, plain.lines0, plain.columns0)


def refusal_by_pure_pyyaml(text: str) -> YamlSyntaxError | None:
    """Why PyYAML's pure-Python loader refuses ``text``, which libyaml read (None: it reads it).

    HoloDeck parses with ``yaml.safe_load``, PyYAML's pure-Python reader, and that reader is
    stricter than libyaml in places: a tab after a value (``a: b<TAB>``) or between tokens, a
    ``?`` inside a flow scalar (``{name: g?pt-4o}``). Only its event stream is read, under the
    same limits: the syntax is where the two differ (a file both accept could still read
    differently, e.g. two byte order marks; none is known in a real agent file).
    """
    try:
        check_yaml(text, yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        cause = " ".join(str(err.problem or err.context or "not valid YAML").split())
        if mark is not None:
            cause += f" (column {mark.column + 1})"
        return YamlSyntaxError(cause, mark.line if mark else None)
    except yaml.YAMLError as err:
        return YamlSyntaxError(" ".join(str(err).split()), None)
    except StructureError:  # libyaml's events passed these limits: not a refusal by HoloDeck
        return None
    return None


def parse_nodes(text: str) -> YamlTree:
    """:func:`parse` by way of PyYAML's node tree: any document, every duplicate key noted."""
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
            tree = YamlTree(None)
            merges = _walk(node, tree) if node is not None else False
            # Construction flattens merge keys (<<) into their mappings; lines are indexed after.
            tree.data = _construct(loader, node) if node is not None else None
            if merges and node is not None:
                tree.lines0.clear()
                tree.columns0.clear()
                _index(node, tree)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise YamlSyntaxError(_cause(err), mark.line if mark else None) from None
    except yaml.YAMLError as err:
        raise YamlSyntaxError(str(err).replace("\n", " "), None) from None
    finally:
        loader.dispose()
    return tree


def _construct(loader: Any, node: yaml.Node) -> Any:
    """The document's data; a scalar that cannot be built is a :class:`YamlValueError`."""
    try:
        return loader.construct_document(node)
    except yaml.YAMLError:
        raise
    except Exception as err:  # a constructor's own failure (ValueError, KeyError, ...)
        bad = find_bad_scalar(loader, node)
        if bad is None:
            raise YamlSyntaxError(" ".join(str(err).split()), None) from None
        raise YamlValueError(bad.cause, bad.line0, bad.path) from None


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


def _walk(root: yaml.Node, tree: YamlTree) -> bool:
    """One iterative walk, in document order, that fills the tree's lines, columns and duplicates.

    Every key path gets the line and column of its key (or item); of a key written twice only the
    last occurrence is indexed (it is the one the data holds), but the earlier one's value is
    still searched for duplicate keys. A duplicate is recorded before merge keys (``<<``) are
    flattened, in document order. True when a mapping has a merge key: constructing the data
    flattens it in the node tree, and the lines must then be indexed again after that.
    """
    merges = False
    lines0, columns0, found = tree.lines0, tree.columns0, tree.duplicates
    mapping, sequence = yaml.MappingNode, yaml.SequenceNode
    stack: list[tuple[yaml.Node, KeyPath, bool] | Duplicate] = [(root, (), True)]
    while stack:
        task = stack.pop()
        if type(task) is Duplicate:
            found.append(task)
            continue
        node, path, live = task  # type: ignore[misc]
        if live and path not in lines0:
            mark = node.start_mark
            lines0[path] = mark.line
            columns0[path] = mark.column
        if isinstance(node, mapping):
            entries = node.value
            keys = [_key(key_node) for key_node, _ in entries]
            last = {key: i for i, key in enumerate(keys)} if live else {}
            first: dict[str, int] = {}
            todo: list[tuple[yaml.Node, KeyPath, bool] | Duplicate] = []
            for i, (key_node, value_node) in enumerate(entries):
                key = keys[i]
                child = (*path, key)
                mark = key_node.start_mark
                line0 = mark.line
                if key == "<<" and key_node.tag == _MERGE:
                    merges = True
                if key in first and key != "<<":
                    todo.append(Duplicate(child, line0, first[key]))
                first.setdefault(key, line0)
                shown = live and last[key] == i
                if shown:
                    lines0[child] = line0
                    columns0[child] = mark.column
                todo.append((value_node, child, shown))
            stack.extend(reversed(todo))
        elif isinstance(node, sequence):
            stack.extend(
                (item, (*path, i), live) for i, item in reversed(list(enumerate(node.value)))
            )
    return merges
