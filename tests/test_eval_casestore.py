"""The cases file as a label store: created on the first label, round-trip, atomic, one case per
query, empty removes; and read back by load_expected and by the cases loader alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.errors import CasesError
from workbench.evaluate import load_cases
from workbench.evaluate.casestore import (
    GENERATED,
    NEW_FILE_MODE,
    load_expected,
    query_key,
    set_expected,
    set_many,
    toggle_expected,
)

HAND = """# my own header
cases:
  # a case I wrote by hand
  - query: read the notes   # keep this
    expected: [read_file]
    category: files
  - query: send a mail
    expected:
      - send_email
"""


def test_first_label_creates_the_file_with_a_header(tmp_path: Path) -> None:
    path = tmp_path / "research-agent.cases.yaml"
    assert load_expected(path) == {}
    assert set_expected(path, "find papers on GNNs", ["search_papers"]) == ("search_papers",)
    text = path.read_text()
    assert text.startswith("# Labelled queries for research-agent.yaml")
    assert "source: labelled" in text
    [case] = load_cases(path)
    assert case.query == "find papers on GNNs" and case.expected == ("search_papers",)
    assert case.origin == "labelled"
    # a new file gets what open() would give it, not the temporary file's 0600
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == NEW_FILE_MODE == 0o666 & ~mask


def test_hand_edits_and_comments_survive(tmp_path: Path) -> None:
    path = tmp_path / "a.cases.yaml"
    path.write_text(HAND)
    set_expected(path, "send  a mail", ["send_email", "list_inbox"])  # the same query
    set_expected(path, "what is on my calendar", ["get_events"])
    text = path.read_text()
    for kept in ("# my own header", "# a case I wrote by hand", "# keep this", "category: files"):
        assert kept in text
    assert load_expected(path) == {
        "read the notes": ("read_file",),
        "send a mail": ("send_email", "list_inbox"),
        "what is on my calendar": ("get_events",),
    }
    assert [c.query for c in load_cases(path)] == [
        "read the notes",
        "send a mail",
        "what is on my calendar",
    ]


def test_unlabelling_the_last_tool_removes_the_case(tmp_path: Path) -> None:
    path = tmp_path / "a.cases.yaml"
    path.write_text(HAND)
    assert toggle_expected(path, "read the notes", "read_file") == ()
    assert "read the notes" not in path.read_text()
    assert toggle_expected(path, "send a mail", "list_inbox") == ("send_email", "list_inbox")
    assert "# my own header" in path.read_text()


def test_a_file_that_does_not_load_is_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "a.cases.yaml"
    path.write_text("cases: [\n  - oops\n")
    before = path.read_bytes()
    with pytest.raises(CasesError, match=r"a\.cases\.yaml"):
        set_expected(path, "q", ["t"])
    assert path.read_bytes() == before
    with pytest.raises(CasesError):
        set_expected(tmp_path / "b.cases.yaml", "   ", ["t"])
    assert not (tmp_path / "b.cases.yaml").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a.cases.yaml"]  # no temporary file left


def test_the_write_is_a_rename(tmp_path: Path) -> None:
    """The old inode is replaced, not rewritten in place (a reader never sees half a file)."""
    path = tmp_path / "a.cases.yaml"
    path.write_text(HAND)
    os.chmod(path, 0o640)
    before = path.stat().st_ino
    set_expected(path, "new query", ["t"])
    assert path.stat().st_ino != before and path.stat().st_mode & 0o777 == 0o640


def test_generated_cases_are_replaced_and_hand_labels_stay(tmp_path: Path) -> None:
    path = tmp_path / "a.cases.yaml"
    path.write_text(HAND)
    set_many(path, [("g1", ["t1"]), ("g2", ["t2"])], source=GENERATED)
    set_expected(path, "g2", ["t2", "t3"])  # a person confirms a generated case
    set_many(path, [("g3", ["t3"])], source=GENERATED, drop_source=GENERATED)
    cases = {c.query: c.origin for c in load_cases(path)}
    assert cases == {
        "read the notes": None,
        "send a mail": None,
        "g2": "labelled",
        "g3": "generated",
    }


def test_json_lines_keep_every_other_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    first = json.dumps({"query": "a", "expected": ["x"], "note": "mine"}, indent=None) + "\n"
    path.write_text(first + '{"query": "b", "expected": ["y"]}\n')
    set_expected(path, "b", ["y", "z"])
    set_expected(path, "c", ["w"])
    lines = path.read_text().splitlines(keepends=True)
    assert lines[0] == first and len(lines) == 3
    assert load_expected(path) == {"a": ("x",), "b": ("y", "z"), "c": ("w",)}
    set_expected(path, "a", [])
    assert [c.query for c in load_cases(path)] == ["b", "c"]


# ------------------------------------------------------------------------------- properties

_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\ufeff"),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() != "")
_TOOL = st.from_regex(r"[a-z][a-z0-9_]{0,10}(-[a-z][a-z0-9_]{0,10})?", fullmatch=True)
_OPS = st.lists(st.tuples(_TEXT, st.lists(_TOOL, max_size=3)), min_size=1, max_size=8)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS, suffix=st.sampled_from([".cases.yaml", ".jsonl"]))
def test_the_file_always_says_what_was_labelled_last(
    tmp_path: Path, ops: list[tuple[str, list[str]]], suffix: str
) -> None:
    """Any queries (quotes, colons, #, other scripts), labelled and relabelled in any order:
    the file holds exactly the last label of each query, loads with the cases loader, and keeps a
    hand-written comment and case."""
    path = tmp_path / f"prop{suffix}"
    if suffix == ".cases.yaml":
        path.write_text("# hand comment\ncases:\n  - query: hand case\n    expected: [kept]\n")
        model: dict[str, tuple[str, ...]] = {"hand case": ("kept",)}
    else:
        path.write_text('{"query": "hand case", "expected": ["kept"]}\n')
        model = {"hand case": ("kept",)}
    try:
        for query, tools in ops:
            if query_key(query) == "hand case":
                continue
            set_expected(path, query, tools)
            cleaned = tuple(dict.fromkeys(tools))
            if cleaned:
                model[query_key(query)] = cleaned
            else:
                model.pop(query_key(query), None)
        assert load_expected(path) == model
        loaded = {query_key(c.query): c.expected for c in load_cases(path)}
        assert loaded == model
        if suffix == ".cases.yaml":
            assert "# hand comment" in path.read_text()
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("name", ["cases.yaml", "cases.jsonl"])
def test_a_label_writes_through_a_symbolic_link(tmp_path: Path, name: str) -> None:
    """A cases file kept elsewhere and linked beside the agent stays a link: the label lands in
    the file it points to, with that file's mode."""
    (tmp_path / "shared").mkdir()
    real = tmp_path / "shared" / name
    real.write_text(HAND if name.endswith(".yaml") else "")
    os.chmod(real, 0o640)
    link = tmp_path / name
    link.symlink_to(real)
    set_expected(link, "what is on my calendar", ["get_events"])
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert os.stat(real).st_mode & 0o777 == 0o640
    assert load_expected(real)[query_key("what is on my calendar")] == ("get_events",)
