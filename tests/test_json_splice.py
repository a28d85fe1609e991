"""The JSON writers change only what changed (workbench.config.writeback.json_splice): a user's
``.mcp.json`` or PizzaPi ``config.json`` keeps the bytes of every entry a merge did not touch.

A unit test of the splice on hand-made files, a property test (Hypothesis) on random documents
written in several styles and changed at random, and the writers' own plan on a real file."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from json_values import VALUES

from workbench.config.writeback.json_file import indent_of, plan_json, read_json_object
from workbench.config.writeback.json_splice import same, splice

MCP_JSON = """{
  "mcpServers": {
    "brave": {"command": "npx", "args": ["-y", "@brave/brave-search-mcp-server"]},
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"]
    }
  }
}
"""


def test_a_changed_member_is_written_again_and_the_others_keep_their_bytes() -> None:
    old = json.loads(MCP_JSON)
    new = copy.deepcopy(old)
    new["mcpServers"]["memory"]["alwaysLoad"] = True
    out = splice(MCP_JSON, old, new, indent_of(MCP_JSON))
    assert out is not None and json.loads(out) == new
    # the untouched entry, one line as the user wrote it, is still one line
    assert '"brave": {"command": "npx", "args": ["-y", "@brave/brave-search-mcp-server"]},' in out
    assert '"args": ["-y", "@modelcontextprotocol/server-memory"],\n' in out
    assert '      "alwaysLoad": true\n    }' in out


def test_removed_and_added_members_take_their_commas_with_them() -> None:
    text = '{\n    "a": 1,\n    "b": [1, 2],\n    "c": {"x": 1},\n    "d": null\n}\n'
    old = json.loads(text)
    new = {"a": 1, "b": [1, 2], "e": {"y": [3]}}
    out = splice(text, old, new, indent_of(text))
    assert out is not None and json.loads(out) == new
    assert out.startswith('{\n    "a": 1,\n    "b": [1, 2],\n    "e": {\n        "y": [\n')
    assert out.endswith("}\n")


def test_a_value_python_calls_equal_but_json_does_not_is_written_again() -> None:
    """``[1] == [True]`` in Python; in the file ``1`` is not ``true``."""
    text = '{"on": [1], "n": 1}'
    out = splice(text, json.loads(text), {"on": [True], "n": 1.0}, 2)
    assert out == '{"on": [true], "n": 1.0}'
    assert not same([1], [True]) and not same(1, 1.0) and same({"a": [1]}, {"a": [1]})


def test_an_array_of_the_same_length_changes_element_by_element() -> None:
    """PizzaPi's ``mcp.servers`` is an array of objects: a server whose ``deferLoading`` changes
    is written again member by member, the others keep their bytes."""
    text = (
        '{"mcp": {"servers": [\n  {"name": "a", "command": "x"},\n'
        '  {"name": "b", "command": "y", "deferLoading": true}\n]}}\n'
    )
    old = json.loads(text)
    new = copy.deepcopy(old)
    new["mcp"]["servers"][0]["deferLoading"] = True
    del new["mcp"]["servers"][1]["deferLoading"]
    out = splice(text, old, new, indent_of(text))
    assert out == (
        '{"mcp": {"servers": [\n  {"name": "a", "command": "x", "deferLoading": true},\n'
        '  {"name": "b", "command": "y"}\n]}}\n'
    )


def test_a_crlf_file_keeps_crlf_in_what_is_added() -> None:
    text = '{\r\n  "a": 1\r\n}\r\n'
    out = splice(text, {"a": 1}, {"a": 1, "b": {"c": [1]}}, indent_of(text))
    assert out == '{\r\n  "a": 1,\r\n  "b": {\r\n    "c": [\r\n      1\r\n    ]\r\n  }\r\n}\r\n'


def test_a_one_line_object_gets_one_line_members_with_its_own_separators() -> None:
    """A minified PizzaPi config stays minified; a one-line server entry in a pretty file stays
    one line when it gains an object."""
    text = '{"defaultModel":{"provider":"anthropic","id":"claude-sonnet-4"}}'
    old = json.loads(text)
    new = {**old, "toolSearch": {"enabled": True, "maxResults": 5}}
    assert splice(text, old, new, indent_of(text)) == (
        '{"defaultModel":{"provider":"anthropic","id":"claude-sonnet-4"},'
        '"toolSearch":{"enabled":true,"maxResults":5}}'
    )
    old = json.loads(MCP_JSON)
    new = copy.deepcopy(old)
    new["mcpServers"]["brave"]["env"] = {"K": "v"}
    new["mcpServers"]["brave"]["args"] = ["-y", "s", "--flag"]
    out = splice(MCP_JSON, old, new, indent_of(MCP_JSON))
    assert out is not None
    assert '"brave": {"command": "npx", "args": ["-y", "s", "--flag"], "env": {"K": "v"}},' in out


def test_the_indent_is_read_from_the_lines_when_the_first_holds_more_than_a_bracket() -> None:
    text = '{"mcpServers": {\n    "a": {"command": "x"}\n}}\n'
    assert indent_of(text) == "    "
    old = json.loads(text)
    new = copy.deepcopy(old)
    new["mcpServers"]["b"] = {"command": "y"}
    out = splice(text, old, new, indent_of(text))
    assert out == (
        '{"mcpServers": {\n    "a": {"command": "x"},\n    "b": {\n        "command": "y"\n'
        "    }\n}}\n"
    )


def test_a_deeply_nested_file_is_planned_not_a_traceback(tmp_path: Path) -> None:
    """Nested as deep as the parser reads (400 levels): the comparison walks it without
    recursion, and an untouched deep member keeps its bytes."""
    deep = "[" * 400 + "]" * 400
    path = tmp_path / ".mcp.json"
    path.write_text('{"x": ' + deep + ', "mcpServers": {}}\n')
    read = read_json_object(path, ".mcp.json", {"mcpServers": {}})
    doc = read.copy()
    doc["mcpServers"]["a"] = {"command": "x"}
    plan = plan_json(read, doc)
    assert deep in plan.new.decode() and same(json.loads(plan.new), doc)


def test_text_that_is_not_one_object_is_left_to_the_full_dump() -> None:
    assert splice("[1, 2]", {}, {"a": 1}, 2) is None
    dup = '{"a": 1, "a": 2}'
    assert splice(dup, json.loads(dup), {"a": 3}, 2) is None  # two members, one key


def test_the_writers_plan_keeps_untouched_entries(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(MCP_JSON)
    read = read_json_object(path, ".mcp.json", {"mcpServers": {}})
    doc = read.copy()
    doc["mcpServers"]["brave"]["alwaysLoad"] = True
    plan = plan_json(read, doc)
    new_text = plan.new.decode()
    assert json.loads(new_text) == doc
    assert '      "args": ["-y", "@modelcontextprotocol/server-memory"]\n' in new_text
    # the diff the user reads is the one entry, not the whole file re-indented
    changed = [line for line in plan.diff.splitlines() if line[:1] in "+-"]
    assert len(changed) <= 10, plan.diff


OBJECTS = st.dictionaries(st.text(max_size=4), VALUES, max_size=4)
STYLES = st.sampled_from(
    [
        {"indent": 2},
        {"indent": 4},
        {"indent": "\t"},
        {"indent": None},
        {"indent": None, "separators": (",", ":")},
    ]
)


def _changed(draw: st.DrawFn, doc: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """A copy of ``doc`` with members kept, changed, removed, or added at random."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        what = draw(st.sampled_from(["keep", "keep", "change", "drop", "nest"]))
        if what == "keep":
            out[key] = value
        elif what == "change":
            out[key] = draw(VALUES)
        elif what == "nest" and depth < 3:
            out[key] = _nested(draw, value, depth + 1)
        elif what == "nest":
            out[key] = value
    for key, value in draw(st.dictionaries(st.text(max_size=4), VALUES, max_size=2)).items():
        out.setdefault(key, value)
    return out


Case = tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]


def _nested(draw: st.DrawFn, value: Any, depth: int) -> Any:
    """``value`` changed inside: an object's members, an array's elements (its length kept)."""
    if isinstance(value, dict):
        return _changed(draw, value, depth)
    if isinstance(value, list):
        return [
            draw(st.sampled_from([item, draw(VALUES), _nested(draw, item, depth + 1)]))
            if depth < 3
            else item
            for item in value
        ]
    return value


@st.composite
def edits(draw: st.DrawFn) -> Case:
    """A file's text (a document in one of the styles), its document, the changed document and
    the style's ``json.dumps`` arguments."""
    old = draw(OBJECTS)
    style = {**draw(STYLES), "ensure_ascii": draw(st.booleans())}
    text = json.dumps(old, **style) + draw(st.sampled_from(["", "\n"]))
    if draw(st.booleans()):
        style["newline"] = "\r\n"
        text = text.replace("\n", "\r\n")
    return text, old, _changed(draw, old), style


def _as_written(value: Any, style: dict[str, Any]) -> str:
    """A top-level member's value as the style wrote it (nested lines one indent deeper)."""
    args = {k: v for k, v in style.items() if k != "newline"}
    text = json.dumps(value, **args)
    indent = style["indent"]
    if indent is None:
        return text
    pad = " " * indent if isinstance(indent, int) else indent
    return text.replace("\n", style.get("newline", "\n") + pad)


@settings(max_examples=300, deadline=None)
@given(edits())
def test_a_splice_parses_to_the_new_document_and_keeps_untouched_members(case: Case) -> None:
    text, old, new, style = case
    out = splice(text, old, new, indent_of(text))
    assert out is not None, "a file json.dumps wrote is always spliced"
    assert same(json.loads(out), new)
    if style.get("newline") == "\r\n":
        assert "\n" not in out.replace("\r\n", ""), "a CRLF file gets no bare line break"
    for key, value in old.items():
        if key in new and same(new[key], value):
            assert _as_written(value, style) in out  # byte for byte as it was


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='{}[]":, \n\t0123456789abcdeflnrstu-.\\', max_size=40), OBJECTS)
def test_any_text_is_spliced_right_or_left_to_the_dump(text: str, new: dict[str, Any]) -> None:
    """Whatever the file holds, a splice never raises and never returns a wrong document."""
    try:
        old = json.loads(text)
    except json.JSONDecodeError:
        old = {}
    if not isinstance(old, dict):
        old = {}
    out = splice(text, old, new, 2)
    assert out is None or same(json.loads(out), new)


def test_a_file_nested_too_deep_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    from workbench.errors import ConfigError

    path = tmp_path / ".mcp.json"
    path.write_text('{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}")
    try:
        read_json_object(path, ".mcp.json", {"mcpServers": {}})
    except ConfigError as err:
        assert "nested too deep" in str(err) and ".mcp.json" in str(err)
    else:
        raise AssertionError("a file nested that deep is refused")
