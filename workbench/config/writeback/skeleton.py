"""What the write-back needs of a file, read in one pass over libyaml's events.

The splice (:mod:`workbench.config.writeback.splice`) edits the ``tool_filtering`` block, reads
the model for its warnings and needs, of the rest of the file, only its top-level keys, its style
(:func:`~workbench.config.writeback.splice.detect_style`) and where its content ends (where a new
block goes). Composing PyYAML's node tree of a whole 20 MB file for that took seconds and a
gigabyte; this pass composes nodes only for the top-level keys and the values of the keys it
names, leaves the other top-level values as empty stand-ins with their real marks, and works out
the style and the end on the way, as those functions would on the whole tree.

Where a document is not simple enough for that (an alias, a key that is a mapping or a list, a
top level that is not a block mapping, more than one document, nesting past the limit, a syntax
error, an anchor written twice) :func:`read_skeleton` returns None and the caller composes the
whole tree, which also reports every error. The tests compare both ways on random documents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workbench.config.writeback.render import Style
from workbench.config.writeback.text import detect_newline
from workbench.limits import MAX_DEPTH

__all__ = ["Skeleton", "read_skeleton"]


@dataclass(frozen=True)
class Skeleton:
    """The top level of a document, as much of it as the write-back reads.

    ``root`` is the document's block mapping; its keys are composed, the values of ``wanted``
    keys are whole node trees, every other value is a node of its kind with its marks but no
    children (a stand-in). ``style`` is what ``detect_style`` finds on the whole tree. ``tail``
    is the document's last value (and its key, when that value is a block mapping's) by which the
    splice finds where the content ends: ``content_end`` of the whole root is ``entry_end(*tail)``
    with a key, ``content_end(tail[1])`` without.
    """

    root: MappingNode
    style: Style
    tail: tuple[ScalarNode | None, Node]


class _NotSimple(Exception):
    pass


class _Frame:
    """One open collection of the pass."""

    __slots__ = ("children", "flow", "indent_from", "key_event", "key_node", "mapping", "node")

    def __init__(self, node: Node | None, children: bool, mapping: bool, flow: bool) -> None:
        self.node = node
        #: Whether the items (and values) inside are composed.
        self.children = children
        self.mapping = mapping
        self.flow = flow
        #: In a mapping: the key event whose value comes next (None: a key comes next).
        self.key_event: Any = None
        self.key_node: ScalarNode | None = None
        #: A block mapping that is a value in a block mapping: (BFS depth, its key's column), to
        #: measure the indent at its first key.
        self.indent_from: tuple[int, int] | None = None


def read_skeleton(text: str, loader_class: type[Any], wanted: frozenset[str]) -> Skeleton | None:
    """The skeleton of ``text`` (None: compose the whole tree instead; see the module doc)."""
    loader = loader_class(text)
    try:
        return _Pass(text, loader, wanted).run()
    except (_NotSimple, yaml.YAMLError):
        return None
    finally:
        loader.dispose()


class _Pass:
    def __init__(self, text: str, loader: Any, wanted: frozenset[str]) -> None:
        self.text = text
        self.loader = loader
        self.wanted = wanted
        self.stack: list[_Frame] = []
        #: The first indent and list offset in detect_style's breadth-first order, by depth.
        self.indent_at: dict[int, int] = {}
        self.offset_at: dict[int, int] = {}
        #: The last scalar (and the key event it is a block mapping's value of), or flow end.
        self.last: tuple[Any, Any] = (None, None)
        self.last_flow: Node | None = None
        self.anchors: set[str] = set()

    def run(self) -> Skeleton:
        next_event = self.loader.get_event
        next_event()  # the stream's start
        if type(next_event()) is not yaml.DocumentStartEvent:
            raise _NotSimple
        first = next_event()
        if type(first) is not yaml.MappingStartEvent or first.flow_style:
            raise _NotSimple
        if first.anchor is not None:
            self.anchors.add(first.anchor)
        root = self._collection(first, MappingNode)
        stack = self.stack
        stack.append(_Frame(root, False, True, False))
        top, scalar = stack[0], yaml.ScalarEvent
        while stack:
            event = next_event()
            frame = stack[-1]
            if (
                type(event) is not scalar
                or frame.children
                or frame is top
                or frame.indent_from
                or event.anchor is not None
            ):
                self._event(event)
            elif not frame.mapping:  # a list item inside a stand-in (most events of a big file)
                self.last = (event, None)
            elif frame.key_event is None:
                frame.key_event = event
            else:
                self.last = (event, None if frame.flow else frame.key_event)
                frame.key_event = None
        if type(next_event()) is not yaml.DocumentEndEvent:
            raise _NotSimple
        if type(next_event()) is not yaml.StreamEndEvent:
            raise _NotSimple
        assert isinstance(root, MappingNode)
        return Skeleton(root, self._style(), self._tail())

    # -- events ---------------------------------------------------------------------------------

    def _event(self, event: Any) -> None:
        kind = type(event)
        frame = self.stack[-1]
        anchor = getattr(event, "anchor", None)
        if anchor is not None and kind is not yaml.AliasEvent:
            if anchor in self.anchors:  # the composer refuses a repeated anchor: let it say so
                raise _NotSimple
            self.anchors.add(anchor)
        if kind is yaml.ScalarEvent:
            self._scalar(event, frame)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            self._start(event, frame, kind is yaml.MappingStartEvent)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            self._end(event)
        else:  # an alias: the data is elsewhere
            raise _NotSimple

    def _scalar(self, event: Any, frame: _Frame) -> None:
        if frame.indent_from is not None:
            self._first_key(frame, event.start_mark.column)
        node = self._scalar_node(event) if frame.children or frame is self.stack[0] else None
        if frame.mapping and frame.key_event is None:  # a key
            frame.key_event = event
            frame.key_node = node
            return
        self.last = (event, frame.key_event if frame.mapping and not frame.flow else None)
        self._place(frame, node)

    def _start(self, event: Any, frame: _Frame, mapping: bool) -> None:
        if frame.mapping and frame.key_event is None:  # a mapping or a list as a key
            raise _NotSimple
        if len(self.stack) >= MAX_DEPTH:
            raise _NotSimple
        flow = bool(event.flow_style)
        depth = len(self.stack) - 1
        node: Node | None = None
        children = False
        kind = MappingNode if mapping else SequenceNode
        if frame.children:
            node, children = self._collection(event, kind), True
        elif frame is self.stack[0]:  # a top-level value: whole when its key is wanted
            node, children = self._collection(event, kind), frame.key_event.value in self.wanted
        child = _Frame(node, children, mapping, flow)
        if frame.mapping and not frame.flow and not flow:
            column = frame.key_event.start_mark.column
            if mapping:
                child.indent_from = (depth, column)
            else:
                start = event.start_mark
                step = start.column - column
                if step >= 0 and self.text[start.index : start.index + 1] == "-":
                    self.offset_at.setdefault(depth, step)
        self.stack.append(child)

    def _end(self, event: Any) -> None:
        frame = self.stack.pop()
        node = frame.node
        if node is not None:
            node.end_mark = event.end_mark
        if frame.flow:
            self.last_flow = node or self._flow_stub(frame, event)
            self.last = (None, None)
        if self.stack:
            self._place(self.stack[-1], node)

    def _place(self, frame: _Frame, node: Node | None) -> None:
        """Put a finished value in its (composed) parent; a mapping then waits for a key."""
        if frame.mapping:
            if frame.node is not None and node is not None:
                frame.node.value.append((frame.key_node, node))
            frame.key_event = frame.key_node = None
        elif frame.node is not None and node is not None:
            frame.node.value.append(node)

    def _first_key(self, frame: _Frame, column: int) -> None:
        assert frame.indent_from is not None
        depth, key_column = frame.indent_from
        frame.indent_from = None
        if column - key_column > 0:
            self.indent_at.setdefault(depth, column - key_column)

    # -- nodes ----------------------------------------------------------------------------------

    def _scalar_node(self, event: Any) -> ScalarNode:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
        return ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)

    def _collection(self, event: Any, kind: type[MappingNode] | type[SequenceNode]) -> Node:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(kind, None, event.implicit)
        return kind(tag, [], event.start_mark, event.start_mark, flow_style=event.flow_style)

    def _flow_stub(self, frame: _Frame, event: Any) -> Node:
        kind = MappingNode if frame.mapping else SequenceNode
        return kind("", [], event.end_mark, event.end_mark, flow_style=True)

    # -- results --------------------------------------------------------------------------------

    def _style(self) -> Style:
        indent = self.indent_at[min(self.indent_at)] if self.indent_at else None
        offset = self.offset_at[min(self.offset_at)] if self.offset_at else None
        indent = indent or 2
        return Style(
            newline=detect_newline(self.text),
            indent=indent,
            seq_offset=indent if offset is None else offset,
        )

    def _tail(self) -> tuple[ScalarNode | None, Node]:
        event, key_event = self.last
        if event is None:
            assert self.last_flow is not None
            return None, self.last_flow
        key = self._scalar_node(key_event) if key_event is not None else None
        return key, self._scalar_node(event)
