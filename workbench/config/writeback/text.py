"""Text plumbing of the write-back: line ends, splices, and a unified diff that ``patch`` applies.

Positions are indexes into the decoded text, the same indexes ruamel.yaml's marks give. Only
``\\n`` and ``\\r`` end a line here (``str.splitlines`` would also split on form feeds and
U+2028, which YAML keeps inside scalars).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

_BREAKS = "\r\n"


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``new`` (an insertion when ``start == end``).

    ``order`` breaks ties between edits at the same position: lower goes first.
    """

    start: int
    end: int
    new: str
    order: int = 0


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """``text`` with every edit applied; edits must not overlap."""
    out: list[str] = []
    pos = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.order, e.end)):
        if edit.start < pos:
            raise ValueError(f"overlapping edits at {edit.start}")
        out.append(text[pos : edit.start])
        out.append(edit.new)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)


def detect_newline(text: str) -> str:
    """The file's line ending: that of its first line (``\\n`` for a one-line file)."""
    first = text.find("\n")
    if first > 0 and text[first - 1] == "\r":
        return "\r\n"
    if first < 0 and "\r" in text:
        return "\r"
    return "\n"


def eol(text: str, pos: int) -> int:
    """Where the line holding ``pos`` ends (the index of its line break, or the text's end)."""
    ends = [i for i in (text.find("\n", pos), text.find("\r", pos)) if i >= 0]
    return min(ends) if ends else len(text)


def line_start(text: str, pos: int) -> int:
    """Where the line holding ``pos`` starts."""
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def break_before(text: str, start: int) -> int:
    """Where the line break that ends the line before the one starting at ``start`` begins."""
    if start >= 2 and text[start - 2 : start] == "\r\n":
        return start - 2
    return max(start - 1, 0)


def ends_with_break(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def split_lines(text: str) -> list[str]:
    """Lines with their endings; the last one has none when the text does not end with one."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


NO_NEWLINE = "\\ No newline at end of file\n"


def unified_diff(old: str, new: str, *, label: str, context: int = 3) -> str:
    """A unified diff of ``old`` to ``new`` that GNU ``patch`` applies to give exactly ``new``.

    Lines keep their own endings (CRLF stays CRLF) and a last line without one is marked
    ``\\ No newline at end of file`` as diff(1) does. Empty when nothing changes. The lines the
    two texts share at their start and end are set aside first (but for the context), so a small
    change in a large file costs the time of reading it once, not of matching every line.
    """
    if old == new:
        return ""
    head = _common_prefix(old, new)
    head = old.rfind("\n", 0, head) + 1
    tail = _common_suffix(old[head:], new[head:])
    # Keep the line holding the first differing character from the end, and the line break
    # before the common tail, in the part that is matched.
    old_end = _next_line(old, len(old) - tail)
    new_end = len(new) - (len(old) - old_end)
    while old_end < len(old) and new_end > 0 and new[new_end - 1] != "\n":  # a line start in both
        old_end = _next_line(old, old_end + 1)
        new_end = len(new) - (len(old) - old_end)
    before = split_lines(old[:head])
    keep = before[-context:] if context else []
    start = head - sum(len(line) for line in keep)
    skipped = len(before) - len(keep)
    after = split_lines(old[old_end:])[:context]
    extra = sum(len(line) for line in after)
    out: list[str] = []
    hunks = difflib.unified_diff(
        split_lines(old[start : old_end + extra]),
        split_lines(new[start : new_end + extra]),
        fromfile=label,
        tofile=label,
        n=context,
        lineterm="\n",
    )
    for line in hunks:
        if skipped and line.startswith("@@ "):
            line = _HUNK.sub(lambda m: f"{m[1]}{int(m[2]) + skipped}", line)
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + NO_NEWLINE)
    return "".join(out)


_HUNK = re.compile(r"([-+])(\d+)")


def _common_prefix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their start (slices compared in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str) -> int:
    """How many characters ``a`` and ``b`` share at their end."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _next_line(text: str, pos: int) -> int:
    """The start of the line after the one holding ``pos`` (``pos`` itself at a line start)."""
    if pos >= len(text):
        return len(text)
    if pos == 0 or text[pos - 1] in "\n":
        return pos
    end = text.find("\n", pos)
    return len(text) if end < 0 else end + 1
