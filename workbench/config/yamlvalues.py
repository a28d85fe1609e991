"""Scalars that YAML reads but Python cannot build, said in one line.

PyYAML resolves ``2001-13-45`` to a timestamp and a 5,000-digit number to an integer, then fails
to build them with a plain ``ValueError`` (not a YAML error, and with no line): HoloDeck's loader
fails on such a file too. These helpers turn that failure into a cause with its line and key path,
for the loader's parse (both ways) and the write-back's reads.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workbench.limits import MAX_INT_DIGITS

__all__ = ["BUILD_ERRORS", "BadScalar", "find_bad_scalar", "scalar_cause"]

#: What PyYAML's constructors raise for a value they resolved but cannot build, with a message
#: worth showing (an explicit tag on a wrong value can also raise KeyError, IndexError, ...).
BUILD_ERRORS = (ValueError, OverflowError)

#: A path into the parsed document: mapping keys (str) and list indexes (int).
KeyPath = tuple[str | int, ...]


class BadScalar(Exception):
    """A scalar that cannot be built: ``cause`` (one line), its 0-based line and key path."""

    def __init__(self, cause: str, line0: int | None, path: KeyPath) -> None:
        super().__init__(cause)
        self.cause = cause
        self.line0 = line0
        self.path = path


def scalar_cause(text: str, tag: str, err: Exception) -> str:
    """Why the scalar ``text`` (resolved or tagged ``tag``) cannot be built, in one line."""
    kind = tag.rsplit(":", 1)[-1]
    shown = repr(text) if len(text) <= 40 else repr(text[:37] + "...")
    if not isinstance(err, BUILD_ERRORS):  # a KeyError or IndexError inside PyYAML says nothing
        return f"{shown} is not a valid YAML {kind}"
    reason = " ".join(str(err).split()) or type(err).__name__
    if "digits" in reason and kind == "int":
        reason = f"it has more than {MAX_INT_DIGITS} digits (Python's limit for an integer)"
    return f"{shown} reads as a YAML {kind} but is not a valid one: {reason}"


def find_bad_scalar(loader: Any, root: Node) -> BadScalar | None:
    """The first scalar under ``root`` (document order) the loader cannot build, if any."""
    stack: list[tuple[Node, KeyPath]] = [(root, ())]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            build = loader.yaml_constructors.get(node.tag)
            if build is None:
                continue
            try:
                build(loader, node)
            except yaml.YAMLError:
                continue  # reported as PyYAML words it
            except Exception as err:
                cause = scalar_cause(str(node.value), str(node.tag), err)
                return BadScalar(cause, node.start_mark.line, path)
        elif isinstance(node, MappingNode):
            todo: list[tuple[Node, KeyPath]] = []
            for key, value in node.value:
                name = str(key.value) if isinstance(key, ScalarNode) else "?"
                todo.append((key, (*path, name)))
                todo.append((value, (*path, name)))
            stack.extend(reversed(todo))
        elif isinstance(node, SequenceNode):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(node.value))))
    return None
