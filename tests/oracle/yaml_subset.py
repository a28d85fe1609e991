"""Why a one-pass reader must decline a document, worked out from libyaml's events alone.

The loader's one-pass parse (``yamlfast.read_plain``) and the write-back's skeleton
(``writeback_skeleton.read_skeleton``) each read a subset of YAML and hand anything else to the
general path. The tests need to know, for any document, whether declining is right; this module
says it without their code: it lists the document's events (libyaml's parser, the one both read)
and names every construct outside each subset. A document is in a subset exactly when none of
that subset's reasons applies.
"""

from __future__ import annotations

from typing import Any

import yaml

from workbench.limits import MAX_DEPTH

NOT_YAML = "not YAML"
NO_DOCUMENT = "no document"
DOCUMENTS = "more than one document"
TOP_LEVEL = "top level not a mapping"
FLOW_TOP = "top level a flow mapping"
ALIAS = "an alias"
ANCHOR = "an anchor"
ANCHOR_TWICE = "an anchor written twice"
TAG = "a tag"
COLLECTION_KEY = "a mapping or list as a key"
TOO_DEEP = "nested too deep"
RECURSIVE = "an alias inside its own anchor"
UNDEFINED = "an alias to no anchor before it"
NOT_STRING_KEY = "a key that is not a string"
KEY_TWICE = "a key written twice"
MERGE = "a << or = scalar (merge or value key)"
UNBUILDABLE = "a value that cannot be built"

#: What makes ``read_plain`` decline: anything but one document (or none) of untagged, unanchored
#: scalars, lists and mappings with distinct string keys whose values Python can build.
PLAIN = frozenset(
    {NOT_YAML, DOCUMENTS, ALIAS, ANCHOR, TAG, COLLECTION_KEY, TOO_DEEP, NOT_STRING_KEY, KEY_TWICE}
    | {MERGE, UNBUILDABLE, RECURSIVE, UNDEFINED}
)
#: What makes ``read_skeleton`` decline: it composes one block mapping's top level, so tags,
#: merge keys, duplicates and values are the general composer's business, not its own.
SKELETON = frozenset(
    {NOT_YAML, NO_DOCUMENT, DOCUMENTS, TOP_LEVEL, FLOW_TOP, ALIAS, ANCHOR_TWICE, COLLECTION_KEY}
    | {TOO_DEEP, RECURSIVE, UNDEFINED}
)

#: The reasons holo-tune's limits refuse a document for, before reading it any further.
LIMITS = frozenset({TOO_DEEP, RECURSIVE})

_STR = "tag:yaml.org,2002:str"
_SPECIAL = ("tag:yaml.org,2002:merge", "tag:yaml.org,2002:value")


def reasons(text: str, loader: type[Any]) -> frozenset[str]:
    """Every reason (the constants above) a one-pass reader may have to decline ``text``.

    With ``not YAML`` come only the limits the events before the error break (the events after
    it are unknown); ``nested too deep`` stands alone when libyaml stops at its own nesting limit.
    """
    events: list[Any] = []
    try:
        events.extend(yaml.parse(text, Loader=loader))
    except yaml.YAMLError as err:
        if "maximum nesting depth" in str(getattr(err, "problem", "")):
            return frozenset({TOO_DEEP})
        # What the events before the error already break stays known (the limits are checked
        # on the events as they come).
        return frozenset({NOT_YAML} | (_walk(events, loader("")) & LIMITS))
    found: set[str] = set()
    starts = [i for i, e in enumerate(events) if isinstance(e, yaml.DocumentStartEvent)]
    if not starts:
        found.add(NO_DOCUMENT)
    elif len(starts) > 1:
        found.add(DOCUMENTS)
    if starts:
        first = events[starts[0] + 1]
        if not isinstance(first, yaml.MappingStartEvent):
            found.add(TOP_LEVEL)
        elif first.flow_style:
            found.add(FLOW_TOP)
    found |= _walk(events, loader(""))
    return frozenset(found)


class _Open:
    """One open collection: a mapping or a list, its anchor, nodes so far, string keys seen and
    the height of the tallest node inside."""

    def __init__(self, mapping: bool, anchor: str | None) -> None:
        self.mapping = mapping
        self.anchor = anchor
        self.count = 0
        self.keys: set[str] = set()
        self.height = 0


def _walk(events: list[Any], builder: Any) -> set[str]:
    found: set[str] = set()
    heights: dict[str, int] = {}  # each anchor's node: how many levels it nests (a scalar: 0)
    stack: list[_Open] = []
    for event in events:
        if isinstance(event, yaml.DocumentStartEvent):
            heights = {}  # anchors are a document's own
        if isinstance(event, yaml.CollectionEndEvent):
            done = stack.pop()
            if done.anchor is not None:
                heights[done.anchor] = done.height + 1
            if stack:
                stack[-1].height = max(stack[-1].height, done.height + 1)
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        parent = stack[-1] if stack else None
        is_key = parent is not None and parent.mapping and parent.count % 2 == 0
        if parent is not None:
            parent.count += 1
        if isinstance(event, yaml.AliasEvent):
            found.add(ALIAS)
            if any(o.anchor == event.anchor for o in stack):
                found.add(RECURSIVE)
            elif event.anchor not in heights:
                found.add(UNDEFINED)
            elif len(stack) + heights.get(event.anchor, 0) > MAX_DEPTH:
                found.add(TOO_DEEP)  # once the alias is expanded
            continue
        if event.anchor is not None:
            found.add(ANCHOR_TWICE if event.anchor in heights else ANCHOR)
            heights[event.anchor] = 0
        if event.tag is not None:
            found.add(TAG)
        if isinstance(event, yaml.CollectionStartEvent):
            if is_key:
                found.add(COLLECTION_KEY)
            stack.append(_Open(isinstance(event, yaml.MappingStartEvent), event.anchor))
            if len(stack) > MAX_DEPTH:
                found.add(TOO_DEEP)
            continue
        tag = _tag(event, builder)
        if tag in _SPECIAL:
            found.add(MERGE)
        elif not _builds(builder, tag, event.value):
            found.add(UNBUILDABLE)
        if is_key and parent is not None and tag not in _SPECIAL:
            if tag != _STR:
                found.add(NOT_STRING_KEY)
            elif event.value in parent.keys:
                found.add(KEY_TWICE)
            else:
                parent.keys.add(event.value)
    if ANCHOR_TWICE in found:
        found.add(ANCHOR)
    return found


def _tag(event: Any, builder: Any) -> str:
    if event.tag is not None and event.tag != "!":
        return str(event.tag)
    return str(builder.resolve(yaml.ScalarNode, event.value, event.implicit))


def _builds(builder: Any, tag: str, value: str) -> bool:
    try:
        builder.construct_object(yaml.ScalarNode(tag, value))
    except Exception:
        return False
    return True
