"""Random edits of a text, for the property tests of files users hand us.

Cuts, repeats, replacements and insertions of characters YAML and JSON give meaning to (and a
few that mean trouble), and deep nesting around holo-tune's limit.
"""

from __future__ import annotations

from hypothesis import strategies as st

from workbench.limits import MAX_DEPTH

#: Characters that mean something to YAML or JSON, and a few that mean trouble.
SPECIAL = [*list("[]{}:,&*!|>#'\"-?%@`\\\n\t "), "\r\n", "\ufeff", "\x00", "é", "${X}", "<<: "]


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """``text`` with a few random edits: cut, repeat, replace or insert."""
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            text = draw(st.sampled_from(SPECIAL))
            continue
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start, min(len(text), start + 40)))
        kind = draw(st.sampled_from(["cut", "repeat", "replace", "insert", "nest"]))
        if kind == "cut":
            text = text[:start] + text[end:]
        elif kind == "repeat":
            text = text[:end] + text[start:end] * draw(st.integers(1, 50)) + text[end:]
        elif kind == "replace":
            text = text[:start] + draw(st.sampled_from(SPECIAL)) + text[end:]
        elif kind == "insert":
            parts = draw(st.lists(st.sampled_from([*SPECIAL, "a", "b", "1", "."]), max_size=8))
            piece = "".join(parts)
            text = text[:start] + piece + text[start:]
        else:  # deep nesting, around the limit
            depth = draw(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 200))
            text = text[:start] + "[" * depth + "]" * depth + text[start:]
    return text
