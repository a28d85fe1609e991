"""Shared by the write-back tests: fixture variants, the block's region, a diff applier.

Everything here is computed independently of ``workbench.config.writeback.block`` so that the tests
check the write-back against their own idea of "the block" and of a unified diff.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).parent / "writeback"

#: Environment the fixtures' ${VAR} references need to load.
ENV = {
    "BRAVE_API_KEY": "k",
    "PROVIDER": "openai",
    "MODEL_NAME": "gpt-4o",
    "USER_NAME": "ada",
    "TOP_K": "5",
}


def variants(name: str) -> dict[str, bytes]:
    """A fixture as written, with CRLF line ends, and without its final line break."""
    raw = (FIXTURES / name).read_bytes()
    return {
        "lf": raw,
        "crlf": raw.replace(b"\n", b"\r\n"),
        "no-final-newline": raw.rstrip(b"\n"),
    }


_BLOCK_LINE = re.compile(r"(?m)^tool_filtering:")
_TOP_LEVEL_LINE = re.compile(r"(?m)^(?=\S)")


def around_block(text: str) -> tuple[str, str]:
    """The text before the block's first line and from the next top-level line on.

    The block is the ``tool_filtering:`` line and every following line that does not start at
    column 0 (its keys, items, comments and blank lines).
    """
    found = _BLOCK_LINE.search(text)
    assert found is not None, "fixture has no block"
    line_end = text.find("\n", found.end())
    if line_end < 0:
        return text[: found.start()], ""
    after = _TOP_LEVEL_LINE.search(text, line_end + 1)
    return text[: found.start()], text[after.start() :] if after else ""


def assert_outside_identical(old: bytes, new: bytes) -> None:
    """Every byte before and after the block is as it was."""
    before, after = around_block(old.decode("utf-8"))
    text = new.decode("utf-8")
    assert text.startswith(before)
    assert text.endswith(after)
    assert len(text) >= len(before) + len(after)


def loaded(text: str | bytes, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The document as HoloDeck reads it: ${VAR} substituted in the text, then PyYAML."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    values = ENV if env is None else env
    text = re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", lambda m: values.get(m[1], m[2] or ""), text)
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def apply_unified_diff(old: str, diff: str) -> str:
    """Apply a unified diff (as GNU diff writes it) to ``old``; asserts every context line."""
    old_lines = _lines(old)
    out: list[str] = []
    pos = 0
    last: tuple[str, int] | None = None  # which list the previous diff line touched, and where
    for line in _lines(diff):
        if line.startswith(("--- ", "+++ ")):
            continue
        if line.startswith("@@"):
            start = int(re.match(r"@@ -(\d+)", line)[1])  # type: ignore[index]
            hunk_at = max(start - 1, 0) if ",0 " not in line.split("+")[0] else start
            out += old_lines[pos:hunk_at]
            pos = hunk_at
            continue
        if line.startswith("\\"):
            assert last is not None
            where, index = last
            if where == "out":
                out[index] = out[index].removesuffix("\n")
            continue
        tag, body = line[0], line[1:]
        if tag in " -":
            assert old_lines[pos].removesuffix("\n") == body.removesuffix("\n")
            pos += 1
        if tag in " +":
            out.append(body)
            last = ("out", len(out) - 1)
        else:
            last = ("old", pos - 1)
    out += old_lines[pos:]
    return "".join(out)


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
