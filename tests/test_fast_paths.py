"""The one-pass readers agree with the general ones they stand in for (issue 13: large files).

Three places read a large file in one pass instead of by way of PyYAML's node tree or line by
line, and each falls back to the general way where it does not apply:

* ``yamlfast.read_plain`` (the loader's parse): the same data, lines, columns and duplicates as
  ``yamltree.parse_nodes``, the same error;
* ``writeback_skeleton.read_skeleton`` (the write-back plan): the same plan (bytes, diff,
  warnings) or the same refusal as with the whole tree, and the same style and end of content;
* the in-place ``${VAR}`` substitution: the same text, file lines and missing names as line by
  line, the same error.

Inputs are the samples mutated, documents generated in every PyYAML layout (half of them with a
construct spliced in that a one-pass reader must decline), and edge cases written out with the
reasons each reader must decline them; the property tests are bounded like the other fuzz tests.
Whether a reader must decline is never taken from the reader: :mod:`oracle.yaml_subset` works it
out from libyaml's events, every example asserts the reader's choice against it, and where the
reader declines, the general way's result is checked against PyYAML's own load (the data, or the
kind of error) instead of against itself.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, currently_in_test_context, event, given, settings
from hypothesis import strategies as st
from oracle import yaml_subset as why
from oracle.mutations import mutated

from workbench.config import load_agent
from workbench.config.envsubst import UnsetVariable, _substitute_by_line, substitute
from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write
from workbench.config.writeback.skeleton import read_skeleton
from workbench.config.writeback.splice import (
    Loader,
    NodeText,
    compose,
    compose_root,
    detect_style,
)
from workbench.config.yamlfast import NotPlain, read_plain
from workbench.config.yamltree import YamlSyntaxError, parse, parse_nodes
from workbench.errors import ConfigError, HoloTuneError, WriteBackError

REPO = Path(__file__).resolve().parents[1]
SAMPLES = [
    *sorted((REPO / "sample_configs").glob("*.yaml")),
    *sorted((REPO / "tests" / "writeback").glob("*.yaml")),
    REPO / "tests" / "configs" / "valid_full.yaml",
]
EXAMPLES = int(os.environ.get("HOLO_TUNE_FUZZ_EXAMPLES", "40"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=5),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: Scalars YAML 1.1 gives a meaning to, as keys and values.
SCALARS = st.sampled_from(
    ["on", "yes", "No", "~", "null", "1", "0x1F", "1_000", "1:30", "0o17", "3.5", ".nan", "-.inf",
     "2001-12-14", "2001-12-14t21:59:43.10-05:00", "=", "<<", "tool_filtering", "model", "x",
     "top_k", "", " lead", "a: b", "#c", "${X}", "é"]
)  # fmt: skip
KEYS = SCALARS | st.text(max_size=6)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | SCALARS | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=20,
)
BLOCKS = st.fixed_dictionaries(
    {},
    optional={
        "enabled": st.booleans(),
        "top_k": st.integers(1, 20) | SCALARS,
        "similarity_threshold": st.floats(0, 1),
        "always_include": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3),
        "search_method": st.sampled_from(["bm25", "semantic", "hybrid"]),
    },
)
AGENT_DATA = st.fixed_dictionaries(
    {"name": st.just("a")},
    optional={
        "model": st.fixed_dictionaries({"provider": st.sampled_from(["openai", "anthropic"])}),
        "tool_filtering": BLOCKS | st.none(),
        "tools": st.lists(VALUES, max_size=3),
        "test_cases": VALUES,
        "zz": VALUES,
    },
)


@st.composite
def dumped(draw: st.DrawFn, data: Any) -> str:
    """``data`` written by PyYAML in one of its layouts."""
    return yaml.safe_dump(
        data,
        default_flow_style=draw(st.sampled_from([False, None, True])),
        indent=draw(st.sampled_from([2, 3, 4])),
        sort_keys=draw(st.booleans()),
        explicit_start=draw(st.booleans()),
        allow_unicode=True,
        width=draw(st.sampled_from([20, 80])),
    )


@st.composite
def freestyle(draw: st.DrawFn, data: Any, column: int = 0) -> str:
    """``data`` as block YAML with its own indent for each mapping and its own offset for each
    list (PyYAML writes one layout; people write many)."""
    lines: list[str] = []
    if isinstance(data, dict) and data:
        for key, value in data.items():
            head = " " * column + (yaml.safe_dump(key).split("\n")[0] if key else "''") + ":"
            if isinstance(value, dict) and value:
                step = draw(st.integers(1, 4))
                lines += [head, draw(freestyle(value, column + step))]
            elif isinstance(value, list) and value:
                offset = draw(st.integers(0, 3))
                lines += [head, draw(freestyle(value, column + offset))]
            else:
                lines.append(head + " " + yaml.safe_dump(value, default_flow_style=True).strip())
    elif isinstance(data, list) and data:
        for item in data:
            pad = " " * column + "-"
            if isinstance(item, dict | list) and item:
                lines += [pad, draw(freestyle(item, column + draw(st.integers(1, 3))))]
            else:
                lines.append(pad + " " + yaml.safe_dump(item, default_flow_style=True).strip())
    else:
        lines.append(" " * column + yaml.safe_dump(data, default_flow_style=True).strip())
    return "\n".join(line.replace("\n...", "") for line in lines if line)


#: Documents each path must agree on, that the generators rarely make, each with every reason a
#: one-pass reader may have to decline it (:mod:`oracle.yaml_subset`; none: both read it).
EDGE_CASES: list[tuple[str, set[str]]] = [
    ("", {why.NO_DOCUMENT}),
    ("# only a comment\n", {why.NO_DOCUMENT}),
    ("---\n...\n", {why.TOP_LEVEL}),
    ("a: 1\n---\nb: 2\n", {why.DOCUMENTS}),
    ("plain scalar\n", {why.TOP_LEVEL}),
    ("- a\n- b\n", {why.TOP_LEVEL}),
    ("a: &x {b: 1}\nc: *x\n", {why.ANCHOR, why.ALIAS}),
    ("base: &b {k: 1}\nd:\n  <<: *b\n  j: 2\n", {why.ANCHOR, why.ALIAS, why.MERGE}),
    ("a: 1\na: 2\n", {why.KEY_TWICE}),
    ("a: {x: 1}\na: {y: 2}\n", {why.KEY_TWICE}),
    ("? [a, b]\n: c\n", {why.COLLECTION_KEY}),
    ("1: one\n'1': two\n", {why.NOT_STRING_KEY}),
    ("on: true\n", {why.NOT_STRING_KEY}),
    ("a: !!str 1\nb: !custom x\n", {why.TAG, why.UNBUILDABLE}),
    ("a: !!str 1\n", {why.TAG}),
    ("<<: {k: 1}\nj: 2\n", {why.MERGE}),
    ("a: =\n", {why.MERGE}),
    ("a: 2001-13-45\n", {why.UNBUILDABLE}),
    ("a:\n  - 2001-12-14\n  - 1" + "1" * 5000 + "\n", {why.UNBUILDABLE}),
    ("x: [" * 120 + "]" * 120 + "\n", {why.TOO_DEEP}),
    ("a: |\n  keep\n\n\nb: 1\n", set()),
    ("a: 'it''s'\nb: \"q\\n\"\nc: >-\n  folded\n", set()),
    ("a:\n  b:\n    c: [1, {d: e}]\n  f: -  g\n", {why.NOT_YAML}),
    ("tool_filtering:\n  top_k: 3\nmodel: {provider: openai}\n", set()),
    ("name: a\ntool_filtering:\n", set()),
    ("name: a\ntool_filtering: ~\n# end\n", set()),
    ("name: a\nlast:\n  - x\n  -\n", set()),
    ("name: a\nlast: {a: [1, 2]}   # c\n\n", set()),
    ("name: a\nlast:\n  k:\n", set()),
    ("%YAML 1.1\n---\nname: a\n", set()),
    ("\ufeffname: a\n", set()),
    ("name: a\r\ntool_filtering:\r\n  top_k: 2\r\n", set()),
    # A value that cannot be built, then a worse error further on: the node tree's order.
    ("a: 2001-13-45\nb: [\n", {why.NOT_YAML}),
    ("a: 2001-13-45\n---\nb: 1\n", {why.UNBUILDABLE, why.DOCUMENTS}),
    ("a: 2001-13-45\nb: " + "[" * 101 + "]" * 101 + "\n", {why.UNBUILDABLE, why.TOO_DEEP}),
    ("a:\n  b: 2001-13-45\n<<: 1\n", {why.UNBUILDABLE, why.MERGE}),
    ("a:\n  b: 2001-13-45\n? [1]\n: 2\n", {why.UNBUILDABLE, why.COLLECTION_KEY}),
    ("a: !!timestamp abc\n", {why.TAG, why.UNBUILDABLE}),
    ("a: !!bool maybe\n", {why.TAG, why.UNBUILDABLE}),
    ("a: !!int ''\n", {why.TAG, why.UNBUILDABLE}),
    # An anchor written twice: the composer refuses it (so must the write-back).
    ("name: a\nx: &a 1\ny: &a 2\ntool_filtering:\n  top_k: 3\n", {why.ANCHOR, why.ANCHOR_TWICE}),
    ("name: a\nx: &a [1]\ntool_filtering:\n  top_k: &a 3\n", {why.ANCHOR, why.ANCHOR_TWICE}),
    # An anchor used once: only the one-pass parse declines it.
    ("name: a\nx: &a [1]\ntool_filtering:\n  top_k: 3\n", {why.ANCHOR}),
    ("name: a\nx: &a [*a]\n", {why.ANCHOR, why.ALIAS, why.RECURSIVE}),
    ("name: a\nx: *a\ny: &a 1\n", {why.ANCHOR, why.ALIAS, why.UNDEFINED}),
    ("name: a\nx: *nowhere\n", {why.ALIAS, why.UNDEFINED}),
    ("{name: a, tool_filtering: {top_k: 3}}\n", {why.FLOW_TOP}),
]
EDGES = [text for text, _ in EDGE_CASES]

#: Top-level lines each of which puts a block mapping outside the one-pass parse's subset (the
#: first seven outside the skeleton's too): spliced into generated documents so that both readers
#: decline a good share of examples.
SPOILERS = [
    "q1: &q 1\nq2: *q\n",
    "q1: *nowhere\n",
    "q1: &q 1\nq2: &q 2\n",
    "? [q]\n: 1\n",
    "---\nq1: 1\n",
    "q1: [\n",
    "q1: " + "[" * 101 + "]" * 101 + "\n",
    "q1: &q [1]\n",
    "q1: !!str 1\n",
    "<<: {q: 1}\n",
    "1: q\n",
    "q1: 1\nq1: 2\n",
    "q1: 2001-13-45\n",
]


@st.composite
def spoiled(draw: st.DrawFn, texts: st.SearchStrategy[str], spoilers: list[str] = SPOILERS) -> str:
    """A text of ``texts`` (block YAML) with, one time in two, one of ``spoilers`` spliced in
    before a top-level line (or at the end). The choices are drawn before the text: drawn after
    a large one, Hypothesis makes them its simplest (no spoiler) four times in five."""
    spoiler = draw(st.sampled_from(spoilers)) if draw(st.booleans()) else ""
    place = draw(st.integers(0, 99))
    lines = draw(texts).splitlines(keepends=True)
    tops = [i for i, line in enumerate(lines) if line[:1] not in (" ", "-", "#")]
    at = [*tops, len(lines)][place % (len(tops) + 1)]
    return "".join(lines[:at]) + spoiler + "".join(lines[at:])


DOCS = (
    st.sampled_from(SAMPLES).flatmap(lambda p: mutated(p.read_text(encoding="utf-8")))
    | VALUES.flatmap(dumped)
    | spoiled(AGENT_DATA.flatmap(dumped))
    | spoiled(AGENT_DATA.flatmap(freestyle).map(lambda text: text + "\n"))
    | st.sampled_from(EDGES)
)


def _outcome(call: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """What a call ends in: its result, or its error's kind and words."""
    try:
        return ("ok", call(*args, **kwargs))
    except (YamlSyntaxError, HoloTuneError) as err:
        return ("error", type(err).__name__, str(err), getattr(err, "line0", None))


def _tree(call: Any, text: str) -> tuple[Any, ...]:
    found = _outcome(call, text)
    if found[0] != "ok":
        return found
    tree = found[1]
    # repr: NaN equals itself, and 1, 1.0, True and "1" stay apart.
    return ("ok", repr(tree.data), tree.lines0, tree.columns0, tree.duplicates)


# -- the loader's parse -------------------------------------------------------------------------


def _note(*labels: str) -> None:
    """Count each label among a property test's examples (the shares the statistics show)."""
    if currently_in_test_context():
        for label in labels:
            event(label)


def _node_tree_should_give(text: str, reasons: frozenset[str]) -> tuple[Any, ...]:
    """What the general read must end in, from the oracle's reasons and PyYAML's own load: the
    data (as ``_tree`` shows it), or the kind of error."""
    if reasons & why.LIMITS:  # checked on the events as they come, before any tree
        return ("error", "YamlLimitError")
    if why.NOT_YAML in reasons:
        return ("error", "YamlSyntaxError")
    try:
        data = yaml.load(text, Loader=Loader)  # the safe loader (libyaml's)
    except yaml.YAMLError:  # two documents, an anchor written twice, an unknown tag
        return ("error", "YamlSyntaxError")
    except Exception:  # a scalar Python cannot build
        return ("error", "YamlValueError")
    return ("ok", repr(data))


def _check_plain(text: str) -> None:
    """The one-pass parse declines exactly the documents outside its subset, and either way
    ``parse`` gives what the node tree gives, which is what PyYAML loads."""
    reasons = why.reasons(text, Loader) & why.PLAIN
    try:
        read_plain(text, Loader)
        declined = False
    except NotPlain:
        declined = True
    _note("one pass declines" if declined else "one pass reads")
    _note(*(f"not plain: {reason}" for reason in sorted(reasons)))
    assert declined == bool(reasons), sorted(reasons)
    general = _tree(parse_nodes, text)
    assert _tree(parse, text) == general
    assert general[:2] == _node_tree_should_give(text, reasons)
    if why.KEY_TWICE in reasons and general[0] == "ok":
        assert general[4], "a key written twice is a duplicate"


@PROPERTY
@given(DOCS)
def test_the_one_pass_parse_reads_as_the_node_tree_does(text: str) -> None:
    _check_plain(text)


@pytest.mark.parametrize(("text", "reasons"), EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_the_oracle_names_why_each_edge_document_is_declined(text: str, reasons: set[str]) -> None:
    """The oracle the property tests trust, held to the reasons written out by hand."""
    assert why.reasons(text, Loader) == reasons


@pytest.mark.parametrize(("text", "reasons"), EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_the_edge_documents_read_the_same_both_ways(text: str, reasons: set[str]) -> None:
    with pytest.raises(NotPlain) if reasons & why.PLAIN else nullcontext():
        read_plain(text, Loader)
    _check_plain(text)


def _has_alias(text: str) -> bool:
    return any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(text, Loader=Loader))


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_the_samples_take_the_one_pass_parse(sample: Path) -> None:
    """Real agent files are plain: the fast path is the one they take, unless they use an alias
    (``commented.yaml`` does: anchors and aliases go the general way)."""
    text = sample.read_text(encoding="utf-8")
    try:
        read_plain(text, Loader)
    except NotPlain:
        assert _has_alias(text), f"{sample.name} fell back to the node tree"
    else:
        assert not _has_alias(text)


@pytest.mark.parametrize(
    "text",
    ["a: &x 1\nb: *x\n", "a: !!str 1\n", "a: 1\na: 2\n", "? [a]\n: b\n", "1: a\n", "<<: {}\n",
     "a: 1\n---\nb: 2\n", "x: " + "[" * 101 + "]" * 101 + "\n", "a: [1\n"],
)  # fmt: skip
def test_what_is_not_plain_goes_the_general_way(text: str) -> None:
    with pytest.raises(NotPlain):
        read_plain(text, Loader)


@pytest.mark.parametrize("anchor", ["", "&a "], ids=["plain", "anchored"])
@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ("2001-13-45", "'2001-13-45' reads as a YAML timestamp but is not a valid one: month"),
        ("1" * 5000, "reads as a YAML int but is not a valid one: it has more than 4300 digits"),
        ("!!timestamp abc", "'abc' is not a valid YAML timestamp"),
        ("!!bool maybe", "'maybe' is not a valid YAML bool"),
        ("!!int ''", "'' is not a valid YAML int"),
    ],
    ids=["date", "int", "tagged-date", "tagged-bool", "tagged-int"],
)
def test_a_value_yaml_reads_but_python_cannot_build_is_one_line_with_its_place(
    tmp_path: Path, anchor: str, value: str, cause: str
) -> None:
    """Before, ``x: 2001-13-45`` (and a tagged value PyYAML cannot build) was an internal error
    (exit 3); now it is the file's one line, whichever way the file is read."""
    path = tmp_path / "agent.yaml"
    path.write_text(f"name: a\nmodel:\n  provider: openai\n  extra: [ok, {anchor}{value}]\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(path, environ={}, dotenv_files=[], global_configs=[])
    line = caught.value.one_line()
    assert line.startswith(f"{path}:4: model.extra[1]: ") and cause in line
    assert "\n" not in line


def test_a_value_python_cannot_build_in_the_block_refuses_the_plan(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("name: a\ntool_filtering:\n  enabled: true\n  top_k: 2001-13-45\n")
    with pytest.raises(ConfigError, match=r":4: .*'2001-13-45' reads as a YAML timestamp"):
        plan_write(path, ToolFiltering(enabled=True, top_k=3))


# -- the write-back's skeleton ------------------------------------------------------------------

SETTINGS = st.builds(
    ToolFiltering,
    enabled=st.booleans(),
    top_k=st.integers(1, 20),
    similarity_threshold=st.sampled_from([0.0, 0.3, 0.55]),
    always_include=st.lists(st.sampled_from(["a", "b", "d"]), max_size=3, unique=True),
    search_method=st.sampled_from(["bm25", "semantic", "hybrid"]),
)


def _plan(path: Path, setting: ToolFiltering) -> tuple[Any, ...]:
    found = _outcome(plan_write, path, setting)
    if found[0] != "ok":
        return found
    plan = found[1]
    return ("ok", plan.new, plan.diff, plan.warnings)


#: Why the skeleton may decline and the whole tree's composition then refuses the file.
_REFUSED = frozenset(
    {why.NOT_YAML, why.DOCUMENTS, why.TOO_DEEP, why.RECURSIVE, why.ANCHOR_TWICE, why.UNDEFINED}
    | {why.NO_DOCUMENT, why.TOP_LEVEL}
)


def _skeleton_reasons(text: str) -> frozenset[str]:
    """Why the skeleton must decline ``text`` (the text after a byte order mark, as the
    write-back reads it); empty: it must read it."""
    body = text[1:] if text.startswith("\ufeff") else text
    reasons = why.reasons(body, Loader) & why.SKELETON
    _note("skeleton declines" if reasons else "skeleton reads")
    _note(*(f"no skeleton: {reason}" for reason in sorted(reasons)))
    return reasons


def _whole_tree_should_give(reasons: frozenset[str]) -> str:
    """What composing the whole file ends in when the skeleton declines for ``reasons``: the
    error's kind (not YAML, not one mapping: ConfigError; a flow top level: a refused write), or
    ``ok`` (an alias or a mapping as a key: the whole tree is the way)."""
    if reasons & _REFUSED:
        return "ConfigError"
    return "WriteBackError" if why.FLOW_TOP in reasons else "ok"


def _loaded_less_block(text: str) -> tuple[Any, ...]:
    """The document as PyYAML loads it, less its block: the data (repr), or the error's kind."""
    try:
        data = yaml.load(text, Loader=Loader)  # the safe loader (libyaml's)
    except Exception as err:
        return ("error", type(err).__name__)
    if not isinstance(data, dict):
        return ("not a mapping", repr(data))
    return ("ok", repr({k: v for k, v in data.items() if k != "tool_filtering"}))


def _check_plan_reads_back(text: str, new: bytes, setting: ToolFiltering) -> None:
    """A plan's new file loads as the old one with only the block changed, to ``setting``
    (when the old one loads: of a file PyYAML cannot load the plan promises nothing)."""
    new_text = new.decode("utf-8").removeprefix("\ufeff")
    old = _loaded_less_block(text.removeprefix("\ufeff"))
    _note(f"old file loads: {old[0]}")
    if old[0] == "ok":
        assert _loaded_less_block(new_text) == old
        block = yaml.load(new_text, Loader=Loader)["tool_filtering"]
        assert ToolFiltering.model_validate(block) == setting


def _check_plan(path: Path, text: str, setting: ToolFiltering) -> None:
    """The plan with the skeleton is the plan with the whole tree; when the skeleton declines,
    rightly, the whole tree's plan ends as its reasons say; a plan made reads back."""
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    fast = _plan(path, setting)
    with mock.patch("workbench.config.writeback.block.read_skeleton", return_value=None):
        whole = _plan(path, setting)
    assert fast == whole
    reasons = _skeleton_reasons(text)
    body = text[1:] if text.startswith("\ufeff") else text
    assert (read_skeleton(body, Loader, frozenset()) is None) == bool(reasons), sorted(reasons)
    expected = _whole_tree_should_give(reasons)
    if expected != "ok":
        assert fast[:2] == ("error", expected), sorted(reasons)
    _note(f"plan {fast[0]}")
    if fast[0] == "ok":
        _check_plan_reads_back(text, fast[1], setting)


@PROPERTY
@given(DOCS, SETTINGS)
def test_a_plan_from_the_skeleton_is_the_plan_from_the_whole_tree(
    tmp_path: Path, text: str, setting: ToolFiltering
) -> None:
    _check_plan(tmp_path / "agent.yaml", text, setting)


class _Reader(NodeText):
    def __init__(self, text: str) -> None:
        self.text = text

    def key_syntax(self, key: yaml.Node) -> Exception:  # type: ignore[override]
        return ValueError("key syntax")


def _end(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except ValueError as err:
        return str(err)


def _same_node(a: yaml.Node, b: yaml.Node) -> bool:
    """Equal as the splice reads nodes: kind, tag, value, style and exact marks, all the way."""
    if type(a) is not type(b) or a.tag != b.tag or a.start_mark.index != b.start_mark.index:
        return False
    if a.end_mark.index != b.end_mark.index or a.start_mark.line != b.start_mark.line:
        return False
    if isinstance(a, yaml.ScalarNode):
        return bool(a.value == b.value and a.style == b.style)
    if a.flow_style != b.flow_style or len(a.value) != len(b.value):
        return False
    if isinstance(a, yaml.MappingNode):
        return all(
            _same_node(ka, kb) and _same_node(va, vb)
            for (ka, va), (kb, vb) in zip(a.value, b.value, strict=True)
        )
    return all(_same_node(x, y) for x, y in zip(a.value, b.value, strict=True))


def _check_skeleton(text: str) -> None:
    """The skeleton is found exactly when the oracle says the document is simple enough, and
    then has the whole tree's top level, style and end; else the whole tree ends as it must."""
    reasons = _skeleton_reasons(text)
    skeleton = read_skeleton(text, Loader, frozenset({"tool_filtering", "model"}))
    assert (skeleton is None) == bool(reasons), sorted(reasons)
    if skeleton is None:
        _check_whole_tree(text, reasons)
        return
    root = compose(text, "agent.yaml").root
    assert isinstance(root, yaml.MappingNode)
    assert detect_style(text, root) == skeleton.style
    assert len(root.value) == len(skeleton.root.value)
    for (key, value), (s_key, s_value) in zip(root.value, skeleton.root.value, strict=True):
        assert _same_node(key, s_key)
        if key.value in ("tool_filtering", "model") or isinstance(value, yaml.ScalarNode):
            assert _same_node(value, s_value)
        else:  # a stand-in: its kind and marks
            assert type(value) is type(s_value) and value.flow_style == s_value.flow_style
            assert value.start_mark.index == s_value.start_mark.index
            assert value.end_mark.index == s_value.end_mark.index
    reader = _Reader(text)
    key, last = skeleton.tail
    tail_end = _end(reader.entry_end, key, last) if key is not None else reader.content_end(last)
    assert tail_end == _end(reader.content_end, root)


def _check_whole_tree(text: str, reasons: frozenset[str]) -> None:
    """The way the write-back goes without a skeleton: the whole tree, which refuses the file
    or gives the root whose style and end the splice reads."""
    try:
        root = compose_root(text, "agent.yaml")
    except (ConfigError, WriteBackError) as err:
        assert type(err).__name__ == _whole_tree_should_give(reasons), sorted(reasons)
        return
    assert _whole_tree_should_give(reasons) == "ok", sorted(reasons)
    assert root.flow_style is False
    assert detect_style(text, root).newline in ("\n", "\r\n", "\r")
    assert 0 < _end(_Reader(text).content_end, root) <= len(text)


@PROPERTY
@given(DOCS)
def test_the_skeleton_has_the_whole_trees_top_level_style_and_end(text: str) -> None:
    _check_skeleton(text.lstrip("\ufeff"))


@PROPERTY
@given(
    spoiled(
        st.dictionaries(
            st.sampled_from(["model", "tool_filtering", "a", "b", "c"]),
            st.dictionaries(st.sampled_from(["k", "l"]), VALUES, min_size=1) | st.lists(VALUES),
            min_size=2,
        )
        .flatmap(freestyle)
        .map(lambda text: text + "\n"),
        SPOILERS[:7],
    )
)
def test_the_skeleton_finds_the_layout_of_hand_written_files(text: str) -> None:
    """Each mapping with its own indent, each list with its own offset: the first of each in
    ``detect_style``'s breadth-first order is the one the skeleton finds (half of them spoiled by
    a construct that makes it decline)."""
    _check_skeleton(text)


@pytest.mark.parametrize(("text", "reasons"), EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_the_plan_of_each_edge_document_is_the_whole_trees(
    tmp_path: Path, text: str, reasons: set[str]
) -> None:
    setting = ToolFiltering(enabled=True, top_k=7, always_include=["x"])
    _check_plan(tmp_path / "agent.yaml", text, setting)


@pytest.mark.parametrize(("text", "reasons"), EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_the_skeleton_of_each_edge_document(text: str, reasons: set[str]) -> None:
    body = text.lstrip("\ufeff")
    declines = bool(reasons & why.SKELETON)
    assert (read_skeleton(body, Loader, frozenset()) is None) == declines
    _check_skeleton(body)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_the_samples_take_the_skeleton(sample: Path) -> None:
    """Unless they use an alias (an alias may stand for a block mapping anywhere, which changes
    the style the whole tree shows)."""
    text = sample.read_text(encoding="utf-8")
    skeleton = read_skeleton(text, Loader, frozenset({"tool_filtering"}))
    assert (skeleton is None) == _has_alias(text)
    _check_skeleton(text)


# -- ${VAR} substitution ------------------------------------------------------------------------

PIECES = ["a", "x: ", "${X}", "${Y}", "${MISSING}", "\n", "\r\n", "\r", "\x85", "\u2028", "#", "${"]
ENV_VALUES = st.sampled_from(["v", "", "two\nlines", "cr\r", "sep\u2028", "${X}"])


def _substituted(call: Any, text: str, env: dict[str, str], tolerate: bool) -> tuple[Any, ...]:
    missing: dict[str, int] | None = {} if tolerate else None
    try:
        done = call(text, env, file="agent.yaml", missing=missing)
    except UnsetVariable as err:
        return ("unset", str(err), err.line, err.column)
    lines = [done.source_line(i) for i in range(-1, done.text.count("\n") + 3)]
    return ("ok", done.text, lines, missing)


@PROPERTY
@given(
    st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
    | mutated((REPO / "tests" / "writeback" / "env.yaml").read_text(encoding="utf-8")),
    st.dictionaries(st.sampled_from(["X", "Y"]), ENV_VALUES),
    st.booleans(),
)
def test_substitution_in_place_is_substitution_line_by_line(
    text: str, env: dict[str, str], tolerate: bool
) -> None:
    assert _substituted(substitute, text, env, tolerate) == _substituted(
        _substitute_by_line, text, env, tolerate
    )
