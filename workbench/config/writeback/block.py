"""Write a setting back into the agent YAML: only the ``tool_filtering`` block changes.

Two steps, so that a caller can show the change before making it (the CLI's ``--dry-run``, the
TUI's confirmation):

* :func:`plan_write` reads the file, works out the new bytes by splicing the block's text (see
  :mod:`workbench.config.writeback.splice` for the rules), checks that the result reads back as the
  old document with just the new block, and returns a :class:`FilePlan` with the unified diff and
  the warnings. It writes nothing and prints nothing.
* :func:`apply_plan` writes the plan atomically, after a backup, unless the file changed on disk
  since the plan read it.

Every byte outside the block stays identical; ``${VAR}`` references are never expanded (the file
is edited as text, never re-dumped from loaded data).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode

from workbench.config.filtering import BLOCK_KEYS, DEFAULT_FILTERING, ToolFiltering
from workbench.config.writeback.agent_file import read_agent_bytes
from workbench.config.writeback.files import FilePlan, apply_plan, backup_path
from workbench.config.writeback.render import (
    BLOCK_NAME,
    Style,
    render_block,
    render_block_text,
)
from workbench.config.writeback.skeleton import read_skeleton
from workbench.config.writeback.splice import (
    Composed,
    Loader,
    Splice,
    coerced,
    compose,
    compose_root,
    where,
)
from workbench.config.writeback.text import (
    Edit,
    apply_edits,
    ends_with_break,
    line_start,
    unified_diff,
)
from workbench.errors import ConfigError, WriteBackError
from workbench.limits import no_gc

__all__ = [
    "FilePlan",
    "Style",
    "apply_plan",
    "backup_path",
    "plan_write",
    "render_block",
    "render_block_text",
    "runtime_warnings",
    "start_setting",
]

WARN_07 = (
    "this is a HoloDeck 0.7+ config (it has an `openai:` block): 0.7 removed tool_filtering "
    "and refuses to load a file that has it"
)
WARN_ANTHROPIC = (
    "the model provider is anthropic: HoloDeck reads tool_filtering but filters tools only for "
    "openai, azure_openai and ollama models, so this block will have no effect"
)


#: The top-level values a plan reads: the block it edits and the model its warnings name.
_READ = frozenset({BLOCK_NAME, "model"})


def start_setting(filtering: ToolFiltering | None) -> ToolFiltering:
    """What export/apply start from before the flags: the file's block, else the defaults with
    ``enabled: true`` (writing a new block that leaves filtering off is rarely what is meant)."""
    return filtering if filtering is not None else DEFAULT_FILTERING.with_(enabled=True)


def plan_write(
    path: str | Path,
    setting: ToolFiltering | Mapping[str, Any],
    *,
    original: bytes | None = None,
    current: ToolFiltering | None = None,
) -> FilePlan:
    """Work out how the file at ``path`` changes when its block becomes ``setting``.

    ``original`` is the file as the caller read it (``AgentConfig.raw``): the plan is refused if
    the file on disk differs. ``current`` is the block as loaded with ``${VAR}`` expanded
    (``AgentConfig.filtering``): a key whose reference already gives the wanted value is left
    alone instead of being replaced by the literal. Raises WriteBackError (refused: out-of-range
    value, changed file, a layout it will not edit) or ConfigError (the file does not load).
    """
    with no_gc():  # two node trees of a large file are built here
        return _plan(Path(path), setting, original, current)


def _plan(
    path: Path,
    setting: ToolFiltering | Mapping[str, Any],
    original: bytes | None,
    current: ToolFiltering | None,
) -> FilePlan:
    name = str(path)
    checked = validated(setting, name)
    old = read_agent_bytes(path)
    if original is not None and original != old:
        raise WriteBackError(f"{name}: changed on disk since it was read; nothing written")
    text = _decode(old, name)
    # libyaml does not count a byte order mark in its marks: the splice works on the text after
    # it, and its edits move back by its length.
    bom = 1 if text.startswith("\ufeff") else 0
    body = text[bom:]
    skeleton = read_skeleton(body, Loader, _READ)
    if skeleton is None:
        doc = compose(body, name)
        root = compose_root(body, name, doc.root)
    else:  # the keys, the block and the model: the rest is composed only if the check needs it
        doc = Composed(skeleton.root, Loader(""), name)
        root = skeleton.root
    top = _top_level(root)
    _refuse_misspelled_block(top, name)
    block = top.get(BLOCK_NAME)
    literal = None
    if block is not None and not _has_merge_key(block[1]):
        found = doc.construct(block[1])
        literal = found if isinstance(found, dict) else None
    splice = Splice(
        text=body,
        path=name,
        setting=checked,
        literal=literal,
        current=current,
        node=root,
        known_style=skeleton.style if skeleton is not None else None,
        known_tail=skeleton.tail if skeleton is not None else None,
    )
    splice.run()
    edits = [Edit(e.start + bom, e.end + bom, e.new, e.order) for e in splice.edits]
    new_text = apply_edits(text, edits)

    def whole() -> Composed:
        return doc if skeleton is None else compose(body, name)

    _verify(text, new_text, edits, root, doc, whole, literal, checked, splice.untouched, name, bom)
    model = top.get("model")
    # What runtime_warnings reads of the document: the ``openai:`` key and the model.
    facts: dict[str, Any] = {"model": doc.construct(model[1]) if model else None}
    if "openai" in top:
        facts["openai"] = True
    warnings = runtime_warnings(facts) + splice.warnings
    return FilePlan(
        path=path,
        old=old,
        new=new_text.encode("utf-8"),
        diff=unified_diff(text, new_text, label=name),
        warnings=tuple(warnings),
    )


def _refuse_misspelled_block(top: Mapping[str, tuple[Node, Node]], name: str) -> None:
    """No block but a key that looks like its misspelling (``tool_filterring``): writing a new
    block beside it would leave the user's values in a key HoloDeck rejects."""
    if BLOCK_NAME in top:
        return
    close = difflib.get_close_matches(BLOCK_NAME, list(top), n=1, cutoff=0.8)
    if close:
        key = top[close[0]][0]
        raise WriteBackError(
            where(
                name,
                key.start_mark.line + 1,
                close[0],
                f"is this {BLOCK_NAME}, misspelled? rename it (HoloDeck rejects the unknown "
                "key) and run this again; nothing written",
            )
        )


def _top_level(root: MappingNode) -> dict[str, tuple[Node, Node]]:
    """The top-level entries by key (the last one of a key written twice, as the data has it)."""
    return {str(k.value): (k, v) for k, v in root.value if isinstance(k, ScalarNode)}


def _has_merge_key(node: Node) -> bool:
    return isinstance(node, MappingNode) and any(
        str(k.tag).endswith(":merge") for k, _ in node.value
    )


def validated(setting: ToolFiltering | Mapping[str, Any], name: str) -> ToolFiltering:
    """The setting checked against HoloDeck's bounds again (it may come from anywhere)."""
    data = setting.block() if isinstance(setting, ToolFiltering) else dict(setting)
    try:
        return ToolFiltering.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(part) for part in first["loc"]) or "setting"
        cause = f"{first['msg']} (got {first.get('input')!r}); nothing written"
        raise WriteBackError(where(name, None, f"{BLOCK_NAME}.{key}", cause)) from None


def _decode(raw: bytes, name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text (byte {err.start})", file=name) from None


def _safe_load(text: str, name: str) -> Any:
    """The document as HoloDeck's loader (PyYAML, YAML 1.1) reads it, ``${VAR}`` unexpanded."""
    doc = compose(text, name)
    return doc.construct(doc.root) if doc.root is not None else None


def _verify(
    text: str,
    new_text: str,
    edits: list[Edit],
    root: MappingNode,
    doc: Composed,
    whole: Callable[[], Composed],
    literal: Mapping[str, Any] | None,
    setting: ToolFiltering,
    untouched: set[str],
    name: str,
    bom: int,
) -> None:
    """The new text must read as the old document with only the block changed, to ``setting``.

    A guard against layouts the splicer does not foresee: better refuse than write a wrong file.
    When the edits stay inside the block's own lines (whole top-level entries of a block
    mapping, no anchor, alias or directive there), only those lines are read again: the rest of
    the file is the same text in the same parser state, so it reads the same. Otherwise the whole
    new file is read and compared with the old one (``whole()``: the old file's whole tree; ``root``
    and ``doc`` may hold only its top level, see :mod:`workbench.config.writeback.skeleton`).
    """
    refusal = WriteBackError(
        f"{name}: this file's layout defeats a safe edit of {BLOCK_NAME}; nothing written "
        "(edit the block by hand; `holo-tune export` prints it)"
    )
    region = _block_region(text, edits, root, bom)
    unchanged = _unchanged_block(doc, root) if not edits else None
    if unchanged is not None:
        # No edit: the new text is the old one, so it reads as the old document; only its block
        # is read (reading a 20 MB file again to compare it with itself took most of a dry run).
        new = {BLOCK_NAME: unchanged[0]}
    elif region is not None:
        start, end = region
        delta = len(new_text) - len(text)
        piece = new_text[start : end + delta]
        if end < len(text) and not ends_with_break(piece):
            raise refusal
        try:
            new = _safe_load(piece, name)
        except ConfigError:
            raise refusal from None
        if not isinstance(new, dict) or list(new) != [BLOCK_NAME]:
            raise refusal
    else:
        try:
            new = _safe_load(new_text, name)
            full = whole()
            old = full.construct(full.root) if full.root is not None else None
        except ConfigError:
            raise refusal from None
        if not isinstance(new, dict) or not isinstance(old, dict):
            raise refusal
        if {k: v for k, v in new.items() if k != BLOCK_NAME} != {
            k: v for k, v in old.items() if k != BLOCK_NAME
        }:
            raise refusal
    block = new.get(BLOCK_NAME)
    if not isinstance(block, dict):
        raise refusal
    old_block: Mapping[str, Any] = literal or {}
    want, defaults = setting.block(), DEFAULT_FILTERING.block()
    if not set(block) <= set(BLOCK_KEYS):
        raise refusal
    for key in BLOCK_KEYS:
        if key in untouched:
            ok = block.get(key) == old_block.get(key)
        else:
            ok = coerced(key, block.get(key, defaults[key])) == want[key]
        if not ok:
            raise refusal


_MAP_TAG = "tag:yaml.org,2002:map"
_STR_TAG = "tag:yaml.org,2002:str"


def _unchanged_block(doc: Composed, root: MappingNode) -> tuple[Any] | None:
    """The block's data as the unedited document reads (a 1-tuple), when the top level is a plain
    mapping of string keys (no merge key), so the block is the value of its last key; else None
    (the caller reads the whole document)."""
    if root.tag != _MAP_TAG:
        return None
    value: Node | None = None
    for key, node in root.value:
        if not isinstance(key, ScalarNode) or key.tag != _STR_TAG:
            return None
        if key.value == BLOCK_NAME:
            value = node
    return (doc.construct(value) if value is not None else None,)


_DIRECTIVE = re.compile(r"(?m)^%")
#: A block scalar header with "keep" chomping (``|+``, ``>2+``, ...).
_KEEP = re.compile(r"[|>](?:\d?\+|\+\d?)")


def _block_region(
    text: str, edits: list[Edit], root: MappingNode, bom: int
) -> tuple[int, int] | None:
    """The whole lines of the block's top-level entry (or the end, where a new block goes),
    when every edit is inside them and they can be read on their own; else None."""
    if not edits or _DIRECTIVE.search(text):
        return None
    entries = root.value
    at = [
        i for i, (k, _) in enumerate(entries) if isinstance(k, ScalarNode) and k.value == BLOCK_NAME
    ]
    lo = min(e.start for e in edits)
    hi = max(e.end for e in edits)
    if at:
        i = at[-1]
        key = entries[i][0]
        column = entries[0][0].start_mark.column
        if any(k.start_mark.column != column for k, _ in entries):
            return None
        start = line_start(text, int(key.start_mark.index) + bom)
        if i + 1 < len(entries):
            end = line_start(text, int(entries[i + 1][0].start_mark.index) + bom)
        else:
            end = len(text)
        old_piece = text[start:end]
        if ("&" in old_piece or "*" in old_piece) and _has_anchor_or_alias(old_piece):
            return None
    else:  # a new block: only the appended text changes
        start = end = lo
        if hi != lo or any(e.start != lo or e.end != lo for e in edits):
            return None
        if _KEEP.search(text):  # a "keep" block scalar (|+) would take the blank line in
            return None
    if not (start <= lo and hi <= end):
        return None
    return start, end


def _has_anchor_or_alias(piece: str) -> bool:
    """Whether the text defines an anchor or uses an alias (unreadable alone: assume so)."""
    try:
        return any(getattr(e, "anchor", None) is not None for e in yaml.parse(piece, Loader=Loader))
    except yaml.YAMLError:
        return True


def runtime_warnings(data: Mapping[str, Any]) -> list[str]:
    """What the user must know before writing: the target HoloDeck will not use the block."""
    warnings: list[str] = []
    if "openai" in data:
        warnings.append(WARN_07)
    model = data.get("model")
    if isinstance(model, dict) and str(model.get("provider", "")).strip() == "anthropic":
        warnings.append(WARN_ANTHROPIC)
    return warnings
