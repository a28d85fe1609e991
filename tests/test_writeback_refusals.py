"""Write-back refusals: one-line errors that leave the file (and its folder) as it was."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_writeback_support import FIXTURES

from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write
from workbench.config.writeback.files import apply_plan
from workbench.errors import ConfigError, HoloTuneError, WriteBackError

HEAD = b"name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Callable[[bytes], Path]]:
    """Write an agent file; after the test, the folder must hold exactly that file, unchanged."""
    written: dict[Path, bytes] = {}

    def make(raw: bytes) -> Path:
        path = tmp_path / "agent.yaml"
        path.write_bytes(raw)
        written[path] = raw
        return path

    yield make
    for path, raw in written.items():
        assert path.read_bytes() == raw
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml"]


def _refused(error: type[HoloTuneError], *args: Any, **kwargs: Any) -> str:
    with pytest.raises(error) as caught:
        apply_plan(plan_write(*args, **kwargs))
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("setting", "key"),
    [
        ({"enabled": True, "top_k": 0}, "tool_filtering.top_k"),
        ({"top_k": 51}, "tool_filtering.top_k"),
        ({"similarity_threshold": 1.5}, "tool_filtering.similarity_threshold"),
        ({"always_include_top_n_used": 21}, "tool_filtering.always_include_top_n_used"),
        ({"always_include": [""]}, "tool_filtering.always_include"),
        ({"search_method": "vector"}, "tool_filtering.search_method"),
        ({"top_n": 3}, "tool_filtering.top_n"),
    ],
)
def test_out_of_range_values(
    agent: Callable[[bytes], Path], setting: dict[str, Any], key: str
) -> None:
    path = agent((FIXTURES / "commented.yaml").read_bytes())
    message = _refused(WriteBackError, path, setting)
    assert key in message and "nothing written" in message


def test_a_setting_that_skipped_validation_is_still_refused(
    agent: Callable[[bytes], Path],
) -> None:
    path = agent((FIXTURES / "commented.yaml").read_bytes())
    unchecked = ToolFiltering.model_construct(enabled=True, top_k=99)
    assert "tool_filtering.top_k" in _refused(WriteBackError, path, unchecked)


def test_file_changed_since_it_was_read(agent: Callable[[bytes], Path]) -> None:
    raw = (FIXTURES / "commented.yaml").read_bytes()
    path = agent(raw)
    message = _refused(WriteBackError, path, ToolFiltering(top_k=9), original=raw + b"# old\n")
    assert "changed on disk" in message


def test_file_changed_between_plan_and_write(
    agent: Callable[[bytes], Path], tmp_path: Path
) -> None:
    path = agent((FIXTURES / "commented.yaml").read_bytes())
    plan = plan_write(path, ToolFiltering(enabled=True, top_k=9))
    edited = path.read_bytes().replace(b"research-agent", b"edited-agent")
    path = agent(edited)  # someone else saved the file meanwhile
    with pytest.raises(WriteBackError, match="changed on disk"):
        apply_plan(plan)


def test_file_removed_between_plan_and_write(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes((FIXTURES / "commented.yaml").read_bytes())
    plan = plan_write(path, ToolFiltering(enabled=True, top_k=9))
    path.unlink()
    with pytest.raises(WriteBackError, match="cannot read"):
        apply_plan(plan)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        (HEAD + b"tools: [unclosed\n", "agent.yaml:5"),
        (b"- just\n- a list\n", "not an agent config"),
        (HEAD + b"---\nname: b\n", "not valid YAML"),
        (HEAD + b"description: caf\xe9\n", "not UTF-8"),
        (b"", "not an agent config"),
    ],
)
def test_a_file_that_does_not_load(agent: Callable[[bytes], Path], raw: bytes, cause: str) -> None:
    path = agent(raw)
    assert cause in _refused(ConfigError, path, ToolFiltering(enabled=True))


@pytest.mark.parametrize(
    ("block", "cause"),
    [
        (b"tool_filtering:\n  enabled: true\n  top_n: 3\n", "agent.yaml:6: tool_filtering.top_n"),
        (b"tool_filtering:\n  top_k: 5\n  top_k: 6\n", "appears twice"),
        (b"tool_filtering: [a]\n", "is not a mapping"),
        (b"tool_filtering: {top_k: 5}\ntool_filtering: {top_k: 6}\n", "appears twice"),
        (b"defaults: &tf {top_k: 5}\ntool_filtering: *tf\n", "is an alias"),
        (b"tool_filtering:\n  top_k: &k 5\n", "has an anchor"),
        (b"tool_filtering: {always_include: [a,  # why\n  b]}\n", "comment inside"),
    ],
)
def test_layouts_it_will_not_edit(agent: Callable[[bytes], Path], block: bytes, cause: str) -> None:
    path = agent(HEAD + block)
    setting = ToolFiltering(enabled=True, top_k=7, always_include=("c",))
    assert cause in _refused(WriteBackError, path, setting)


def test_a_backup_it_cannot_write_leaves_no_temp_file_and_the_file_unchanged(
    tmp_path: Path,
) -> None:
    """The write fails after its temp file exists: ``AGENT.yaml.bak`` is a folder, which no rename
    can replace (as root too, where a read-only folder would not stop the write). The temp file
    is removed, the agent file and the folder are as they were, and the line names the backup."""
    raw = (FIXTURES / "commented.yaml").read_bytes()
    path = tmp_path / "agent.yaml"
    path.write_bytes(raw)
    occupied = tmp_path / "agent.yaml.bak"
    (occupied / "notes").mkdir(parents=True)
    plan = plan_write(path, ToolFiltering(enabled=True, top_k=9))
    with pytest.raises(WriteBackError) as caught:
        apply_plan(plan)
    assert str(caught.value) == (
        f"{path}: cannot write its backup {occupied}: Is a directory; file unchanged"
    )
    assert path.read_bytes() == raw
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml", "agent.yaml.bak"]
    assert [p.name for p in occupied.iterdir()] == ["notes"]


@pytest.mark.parametrize("key", ["tool_filterring", "tool_filtring", "tools_filtering"])
def test_a_misspelled_block_is_not_written_beside(agent: Callable[[bytes], Path], key: str) -> None:
    """Before, a new block went at the end while the user's values stayed in the misspelled key
    (which HoloDeck rejects): the file got worse, not tuned."""
    path = agent(HEAD + f"{key}:\n  top_k: 3\n".encode())
    message = _refused(WriteBackError, path, ToolFiltering(enabled=True, top_k=6))
    assert message.startswith(f"{path}:4: {key}: is this tool_filtering, misspelled?")
    assert message.endswith("nothing written")


def test_a_key_not_like_the_block_does_not_stop_a_new_block(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(HEAD + b"tool_notes: keep\n")
    plan = plan_write(path, ToolFiltering(enabled=True, top_k=6))
    assert plan.changed and "+tool_filtering:" in plan.diff
