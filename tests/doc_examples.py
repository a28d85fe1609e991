"""The Python examples of the docs, read the way the tests run them."""

from __future__ import annotations

import re
from pathlib import Path

ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def python_block(heading: str, doc: Path = ARCHITECTURE) -> str:
    """The first Python block under ``heading`` (a Markdown heading line, ``### ...``)."""
    text = doc.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found is not None, f"{doc.name}: no Python block under {heading!r}"
    return found.group(1)
