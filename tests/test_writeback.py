"""Write-back: only the tool_filtering block changes, and the file says exactly what was planned."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from test_writeback_support import (
    ENV,
    FIXTURES,
    apply_unified_diff,
    assert_outside_identical,
    loaded,
    variants,
)

from workbench.config import load_agent
from workbench.config.filtering import BLOCK_KEYS, ToolFiltering
from workbench.config.writeback.block import (
    WARN_07,
    WARN_ANTHROPIC,
    backup_path,
    plan_write,
    render_block,
    render_block_text,
    start_setting,
)
from workbench.config.writeback.files import apply_plan

#: Settings that exercise every kind of edit: values in place, added keys, list grow/shrink/empty.
SETTINGS = {
    "values": ToolFiltering(enabled=True, top_k=7, similarity_threshold=0.45),
    "grow-list": ToolFiltering(
        enabled=True,
        always_include=("brave_search-brave_web_search", "memory-read_graph", "time-now"),
        always_include_top_n_used=0,
        search_method="hybrid",
    ),
    "shrink-list": ToolFiltering(enabled=True, always_include=("memory-read_graph",)),
    "empty-list": ToolFiltering(enabled=False, top_k=50, always_include=()),
    "replace-list": ToolFiltering(enabled=True, always_include=("a-b", "true", "x y")),
}

#: Fixtures with a block, in several layouts.
WITH_BLOCK = ["commented.yaml", "flow.yaml", "env.yaml", "anthropic.yaml"]


def _write(tmp_path: Path, raw: bytes, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(raw)
    return path


def _expanded_block(raw: bytes) -> ToolFiltering:
    return ToolFiltering.model_validate(loaded(raw)["tool_filtering"])


@pytest.mark.parametrize("fixture", WITH_BLOCK)
@pytest.mark.parametrize("variant", ["lf", "crlf", "no-final-newline"])
@pytest.mark.parametrize("setting_name", sorted(SETTINGS))
def test_only_the_block_changes(
    tmp_path: Path, fixture: str, variant: str, setting_name: str
) -> None:
    old = variants(fixture)[variant]
    path = _write(tmp_path, old)
    setting = SETTINGS[setting_name]

    plan = plan_write(path, setting)
    apply_plan(plan)
    new = path.read_bytes()

    assert new == plan.new
    assert_outside_identical(old, new)
    # It reads back as the setting, and the rest of the document as it was.
    assert _expanded_block(new) == setting
    old_rest, new_rest = loaded(old), loaded(new)
    old_rest.pop("tool_filtering")
    new_rest.pop("tool_filtering")
    assert new_rest == old_rest
    # The file's line ending, in the new lines too; a missing final break stays missing.
    if variant == "crlf":
        assert new.count(b"\n") == new.count(b"\r\n")
    else:
        assert b"\r" not in new
    assert new.endswith(b"\n") == old.endswith(b"\n")


@pytest.mark.parametrize("fixture", WITH_BLOCK)
def test_the_real_loader_reads_the_setting_back(
    tmp_path: Path, fixture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, (FIXTURES / fixture).read_bytes())
    setting = SETTINGS["grow-list"]
    apply_plan(plan_write(path, setting))
    agent = load_agent(path, environ=ENV, dotenv_files=[])
    assert agent.filtering == setting


def test_comments_in_the_block_stay_with_their_keys(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes())
    setting = ToolFiltering(
        enabled=True,
        top_k=3,
        similarity_threshold=0.25,
        always_include=("brave_search-brave_web_search", "memory-read_graph", "extra-tool"),
        search_method="bm25",
    )
    apply_plan(plan_write(path, setting))
    lines = path.read_text().splitlines()

    def line_with(text: str) -> str:
        return next(line for line in lines if text in line)

    assert line_with("enabled:") == "  enabled: true        # turn filtering on"
    assert (
        line_with("similarity_threshold:") == "  similarity_threshold: 0.25   # tuned on 2026-01-10"
    )
    assert line_with("- brave_search") == "    - brave_search-brave_web_search   # the workhorse"
    top_k = lines.index("  top_k: 3")
    assert lines[top_k - 1] == "  # keep the prompt small"
    block = lines[lines.index("tool_filtering:") :]
    # Keys keep their order; the list keeps its comment line; the new item goes after its last.
    assert block[1:11] == [
        "  enabled: true        # turn filtering on",
        "  # keep the prompt small",
        "  top_k: 3",
        "  similarity_threshold: 0.25   # tuned on 2026-01-10",
        "  always_include:",
        "    - brave_search-brave_web_search   # the workhorse",
        "    # memory is cheap",
        "    - memory-read_graph",
        "    - extra-tool",
        "  search_method: bm25",
    ]


def test_a_removed_item_takes_its_comment_and_leaves_comment_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes())
    apply_plan(plan_write(path, ToolFiltering(enabled=True, always_include=("memory-read_graph",))))
    text = path.read_text()
    assert "the workhorse" not in text
    assert "    # memory is cheap\n    - memory-read_graph\n" in text


def test_an_emptied_block_list_becomes_flow_empty(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes())
    apply_plan(plan_write(path, ToolFiltering(enabled=True)))
    text = path.read_text()
    assert "  always_include: []\n    # memory is cheap\n  search_method: semantic\n" in text


def test_keys_missing_from_the_block_are_added_only_when_not_default(tmp_path: Path) -> None:
    raw = b"name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
    raw += b"tool_filtering:\n  enabled: true\n  top_k: 5  # five\n"
    path = _write(tmp_path, raw)
    setting = ToolFiltering(enabled=True, top_k=5, search_method="bm25")
    plan = plan_write(path, setting)
    assert plan.new.endswith(b"  top_k: 5  # five\n  search_method: bm25\n")
    assert b"similarity_threshold" not in plan.new


def test_flow_block_stays_flow(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "flow.yaml").read_bytes())
    setting = ToolFiltering(enabled=True, top_k=8, always_include=("a-b", "c-d"))
    apply_plan(plan_write(path, setting))
    line = next(ln for ln in path.read_text().splitlines() if ln.startswith("tool_filtering"))
    assert line == (
        "tool_filtering: {enabled: true, top_k: 8, always_include: [a-b, c-d]}   # compact"
    )


def test_flow_block_gets_missing_keys_inside_its_braces(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "flow.yaml").read_bytes())
    setting = ToolFiltering(
        enabled=True, always_include=("memory-read_graph",), search_method="hybrid"
    )
    apply_plan(plan_write(path, setting))
    assert (
        "tool_filtering: {enabled: true, top_k: 5, always_include: [memory-read_graph], "
        "search_method: hybrid}   # compact\n"
    ) in path.read_text()


@pytest.mark.parametrize("variant", ["lf", "crlf", "no-final-newline"])
def test_a_file_without_block_gets_it_appended(tmp_path: Path, variant: str) -> None:
    old = variants("noblock.yaml")[variant]
    path = _write(tmp_path, old)
    setting = ToolFiltering(enabled=True, top_k=4, always_include=("memory-read_graph",))
    apply_plan(plan_write(path, setting))
    new = path.read_bytes()
    nl = b"\r\n" if variant == "crlf" else b"\n"
    # The old bytes, a line break if the file had none, one blank line, then the whole block
    # in the file's own indent (4 spaces here) and line ending.
    head = old if old.endswith(b"\n") else old + nl
    expected_block = render_block_text(setting).replace("  ", "    ").encode()
    assert new == head + nl + expected_block.replace(b"\n", nl)
    assert _expanded_block(new) == setting


def test_appending_after_a_blank_line_adds_no_second_one(tmp_path: Path) -> None:
    old = (FIXTURES / "noblock.yaml").read_bytes() + b"\n"
    path = _write(tmp_path, old)
    apply_plan(plan_write(path, ToolFiltering(enabled=True)))
    assert path.read_bytes().startswith(old + b"tool_filtering:\n")


@pytest.mark.parametrize("empty", ["tool_filtering:", "tool_filtering: ~   # off for now"])
def test_an_empty_block_is_filled(tmp_path: Path, empty: str) -> None:
    head = "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
    tail = "test_cases:\n  - input: hi\n"
    path = _write(tmp_path, f"{head}{empty}\n{tail}".encode())
    setting = ToolFiltering(enabled=True, top_k=6)
    apply_plan(plan_write(path, setting))
    text = path.read_text()
    assert text.startswith(head) and text.endswith(tail)
    assert _expanded_block(text.encode()) == setting
    if "#" in empty:
        assert "tool_filtering:   # off for now\n  enabled: true\n" in text


def test_var_references_are_never_expanded(tmp_path: Path) -> None:
    old = (FIXTURES / "env.yaml").read_bytes()
    path = _write(tmp_path, old)
    current = _expanded_block(old)  # what the loader sees: top_k 5 from ${TOP_K}
    plan = plan_write(path, current.with_(search_method="hybrid"), current=current)
    apply_plan(plan)
    text = path.read_text()
    assert "  top_k: ${TOP_K}   # set per environment\n" in text
    assert "${PROVIDER}" in text and "${MODEL_NAME}" in text and "${USER_NAME}" in text
    assert "search_method: hybrid" in text
    assert plan.warnings == ()


def test_a_changed_reference_is_replaced_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "env.yaml").read_bytes())
    current = _expanded_block(path.read_bytes())
    plan = plan_write(path, current.with_(top_k=9), current=current)
    assert any("${TOP_K}" in w and "9" in w for w in plan.warnings)
    assert b"  top_k: 9   # set per environment\n" in plan.new


def test_anchors_and_aliases_elsewhere_are_kept(tmp_path: Path) -> None:
    old = (FIXTURES / "commented.yaml").read_bytes()
    path = _write(tmp_path, old)
    apply_plan(plan_write(path, SETTINGS["values"]))
    text = path.read_text()
    assert "env: &brave_env\n" in text and "env: *brave_env   # same key\n" in text


def test_no_change_when_the_block_already_says_it(tmp_path: Path) -> None:
    old = (FIXTURES / "commented.yaml").read_bytes()
    path = _write(tmp_path, old)
    plan = plan_write(path, _expanded_block(old))
    assert not plan.changed and plan.diff == ""
    assert apply_plan(plan) is None
    assert path.read_bytes() == old and not backup_path(path).exists()


def test_equal_values_keep_their_spelling(tmp_path: Path) -> None:
    raw = b"name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
    raw += b"tool_filtering:\n  enabled: 'true'\n  similarity_threshold: 0.30\n  top_k: 5\n"
    path = _write(tmp_path, raw)
    plan = plan_write(path, ToolFiltering(enabled=True, top_k=6, similarity_threshold=0.3))
    assert plan.new == raw.replace(b"top_k: 5", b"top_k: 6")


@pytest.mark.parametrize("fixture", [*WITH_BLOCK, "noblock.yaml"])
@pytest.mark.parametrize("variant", ["lf", "crlf", "no-final-newline"])
def test_the_diff_is_exactly_what_is_written(tmp_path: Path, fixture: str, variant: str) -> None:
    old = variants(fixture)[variant]
    path = _write(tmp_path, old)
    plan = plan_write(path, SETTINGS["grow-list"])
    apply_plan(plan)
    written = path.read_bytes().decode()
    assert apply_unified_diff(old.decode(), plan.diff) == written


# GNU patch is the system's, not something make test installs: where it is absent there is
# nothing to check the diff against, so the test is skipped (it runs wherever patch is, CI too).
@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch not installed")
@pytest.mark.parametrize("variant", ["lf", "crlf", "no-final-newline"])
def test_gnu_patch_applies_the_diff(tmp_path: Path, variant: str) -> None:
    import subprocess

    old = variants("commented.yaml")[variant]
    path = _write(tmp_path, old)
    plan = plan_write(path, SETTINGS["shrink-list"])
    copy = _write(tmp_path, old, "copy.yaml")
    subprocess.run(
        ["patch", "--quiet", "--binary", str(copy)],
        input=plan.diff.encode(),
        check=True,
        timeout=30,
    )
    apply_plan(plan)
    assert copy.read_bytes() == path.read_bytes()


def test_backup_holds_the_old_file_and_mode_is_kept(tmp_path: Path) -> None:
    old = (FIXTURES / "commented.yaml").read_bytes()
    path = _write(tmp_path, old)
    path.chmod(0o640)
    saved = apply_plan(plan_write(path, SETTINGS["values"]))
    assert saved == tmp_path / "agent.yaml.bak"
    assert saved.read_bytes() == old
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml", "agent.yaml.bak"]


def test_no_backup_when_asked(tmp_path: Path) -> None:
    path = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes())
    assert apply_plan(plan_write(path, SETTINGS["values"]), backup=False) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml"]


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes(), "real.yaml")
    link = tmp_path / "agent.yaml"
    link.symlink_to(real)
    apply_plan(plan_write(link, SETTINGS["values"]), backup=False)
    assert link.is_symlink()
    assert b"top_k: 7" in real.read_bytes()


def test_warnings_for_a_runtime_that_would_not_use_the_block(tmp_path: Path) -> None:
    anthropic = _write(tmp_path, (FIXTURES / "anthropic.yaml").read_bytes(), "a.yaml")
    assert WARN_ANTHROPIC in plan_write(anthropic, SETTINGS["values"]).warnings
    new = _write(tmp_path, (FIXTURES / "holodeck07.yaml").read_bytes(), "b.yaml")
    plan = plan_write(new, SETTINGS["values"])
    assert WARN_07 in plan.warnings
    assert plan.changed  # it says so, and still writes what was asked
    openai = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes(), "c.yaml")
    assert plan_write(openai, SETTINGS["values"]).warnings == ()


def test_render_block() -> None:
    setting = ToolFiltering(enabled=True, similarity_threshold=0.00001, always_include=("on",))
    data = render_block(setting)
    assert list(data) == ["tool_filtering"]
    assert list(data["tool_filtering"]) == list(BLOCK_KEYS)
    text = render_block_text(setting)
    assert "similarity_threshold: 0.00001\n" in text  # PyYAML reads 1e-05 as a string
    assert yaml.safe_load(text) == data  # "on" is quoted: PyYAML reads a plain on as true


def test_start_setting_enables_a_new_block_and_keeps_a_files_value() -> None:
    assert start_setting(None) == ToolFiltering(enabled=True)
    off = ToolFiltering(enabled=False, top_k=9)
    assert start_setting(off) is off


@pytest.mark.parametrize("name", ["a b", "true", "1.5", "x: y", "it's", "#tag", "~", "null"])
def test_names_that_need_quotes_read_back(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, (FIXTURES / "commented.yaml").read_bytes())
    setting = ToolFiltering(enabled=True, always_include=(name, "plain-name"))
    apply_plan(plan_write(path, setting))
    assert loaded(path.read_bytes())["tool_filtering"]["always_include"] == [name, "plain-name"]


@pytest.mark.parametrize(
    ("old", "expected"),
    [
        # A document end marker: the block goes before it.
        (b"name: a\n...\n", b"name: a\n\ntool_filtering:\n  enabled: true\n  top_k: 2\n"),
        # A byte order mark stays first.
        (
            b"\xef\xbb\xbfname: a\ntool_filtering:  # tuned\n  'top_k': 5\n",
            b"\xef\xbb\xbfname: a\ntool_filtering:  # tuned\n  'top_k': 2\n",
        ),
        # An indentless list gets its new items at its own column.
        (
            b"tool_filtering:\n  always_include:\n  - a\n  top_k: 5\n",
            b"tool_filtering:\n  always_include:\n  - a\n  - b\n  top_k: 2\n",
        ),
        # An empty value gets one.
        (b"tool_filtering:\n  top_k:\n  enabled: true\n", b"tool_filtering:\n  top_k: 2\n"),
        # A first key written explicitly (``? ''`` is how PyYAML writes an empty key): a new
        # block goes at the column of its ``?``, not of the key (that wrote a file YAML refuses).
        (b"? name\n: a\n", b"? name\n: a\n\ntool_filtering:\n  enabled: true\n  top_k: 2\n"),
        (b"  ? ''\n  : a\n", b"  ? ''\n  : a\n\n  tool_filtering:\n    enabled: true\n"),
    ],
)
def test_small_layouts(tmp_path: Path, old: bytes, expected: bytes) -> None:
    path = _write(tmp_path, old)
    always = ("a", "b") if b"always_include" in old else ()
    plan = plan_write(path, ToolFiltering(enabled=True, top_k=2, always_include=always))
    assert plan.new.startswith(expected)
    assert _expanded_block(plan.new).top_k == 2
    if old.endswith(b"...\n"):
        assert plan.new.endswith(b"  search_method: semantic\n...\n")


def test_a_splice_that_would_change_more_than_the_block_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: the new text must read as the old document with only the block changed.

    The splicer is made to go wrong on purpose (a fake edit) to see the guard refuse it.
    """
    from workbench.config.writeback import splice as writeback_splice
    from workbench.config.writeback.text import Edit
    from workbench.errors import WriteBackError

    def wrong(self: writeback_splice.Splice) -> None:
        self.edits.append(Edit(0, 0, "extra: 1\n"))

    monkeypatch.setattr(writeback_splice.Splice, "run", wrong)
    old = (FIXTURES / "commented.yaml").read_bytes()
    path = _write(tmp_path, old)
    with pytest.raises(WriteBackError, match="nothing written"):
        plan_write(path, SETTINGS["values"])
    assert path.read_bytes() == old


_DATASETS = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets"


def test_the_data_sets_agents(tmp_path: Path) -> None:
    """The agents that ship with the labelled data sets, as their users would tune them."""
    agents = sorted(_DATASETS.glob("*/agent.yaml"))
    assert agents
    setting = ToolFiltering(
        enabled=True,
        top_k=8,
        similarity_threshold=0.2,
        always_include=("x-y",),
        search_method="hybrid",
    )
    for source in agents:
        old = source.read_bytes()
        path = _write(tmp_path, old, f"{source.parent.name}.yaml")
        plan = plan_write(path, setting)
        apply_plan(plan, backup=False)
        assert_outside_identical(old, path.read_bytes())
        assert _expanded_block(path.read_bytes()) == setting
        assert apply_unified_diff(old.decode(), plan.diff) == path.read_text()
