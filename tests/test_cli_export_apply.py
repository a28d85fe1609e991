"""``holo-tune export`` and ``holo-tune apply`` as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_writeback_support import ENV, FIXTURES, apply_unified_diff

from workbench.cli import main


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", "/nonexistent-home-for-tests")


def _copy(tmp_path: Path, fixture: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_bytes((FIXTURES / fixture).read_bytes())
    return path


def test_export_prints_the_files_block_with_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "commented.yaml")
    assert main(["export", str(path), "--top-k", "9", "--method", "bm25"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out) == {
        "tool_filtering": {
            "enabled": True,
            "top_k": 9,
            "similarity_threshold": 0.3,
            "always_include": ["brave_search-brave_web_search", "memory-read_graph"],
            "always_include_top_n_used": 3,
            "search_method": "bm25",
        }
    }
    assert out.startswith("tool_filtering:\n  enabled: true\n  top_k: 9\n")


def test_export_enables_a_new_block_and_keeps_a_files_enabled_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "noblock.yaml")
    assert main(["export", str(path)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["tool_filtering"]["enabled"] is True
    path.write_text(path.read_text() + "tool_filtering:\n    enabled: false\n")
    assert main(["export", str(path)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["tool_filtering"]["enabled"] is False
    assert main(["export", str(path), "--enabled", "true"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["tool_filtering"]["enabled"] is True


def test_export_warns_on_stderr_for_anthropic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "anthropic.yaml")
    assert main(["export", str(path)]) == 0
    captured = capsys.readouterr()
    assert "anthropic" in captured.err and "warning" in captured.err
    assert "tool_filtering" in yaml.safe_load(captured.out)


def test_apply_dry_run_prints_the_diff_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "commented.yaml")
    old = path.read_text()
    assert main(["apply", str(path), "--top-k", "7", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "-  top_k: 5\n+  top_k: 7\n" in captured.out
    assert "dry run" in captured.err
    assert path.read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml"]
    # What the dry run shows is what apply then writes.
    assert main(["apply", str(path), "--top-k", "7"]) == 0
    assert apply_unified_diff(old, captured.out) == path.read_text()


def test_apply_shows_the_diff_writes_and_keeps_a_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "commented.yaml")
    old = path.read_bytes()
    assert main(["apply", str(path), "--threshold", "0.5", "--always-include", "x-y"]) == 0
    captured = capsys.readouterr()
    assert "+  similarity_threshold: 0.5   # tuned on 2026-01-10\n" in captured.out
    backup = tmp_path / "agent.yaml.bak"
    assert str(backup) in captured.err
    assert backup.read_bytes() == old
    assert apply_unified_diff(old.decode(), captured.out) == path.read_text()

    # Same flags again: nothing to do, nothing written.
    after = path.read_bytes()
    assert main(["apply", str(path), "--threshold", "0.5", "--always-include", "x-y"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "no change" in captured.err
    assert path.read_bytes() == after


def test_apply_no_backup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(tmp_path, "noblock.yaml")
    assert main(["apply", str(path), "--no-backup"]) == 0
    assert "no backup" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml"]
    assert path.read_text().endswith(
        "\n\ntool_filtering:\n    enabled: true\n    top_k: 5\n"
        "    similarity_threshold: 0.3\n    always_include: []\n"
        "    always_include_top_n_used: 3\n"
        "    search_method: semantic\n"
    )


def test_apply_refuses_a_07_config_and_leaves_it_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "holodeck07.yaml")
    before = path.read_bytes()
    assert main(["apply", str(path), "--top-k", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "holodeck-0.7" in lines[0] and "openai:" in lines[0]
    assert "tune --runtime holodeck-0.7 --apply" in lines[0]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml"]


def test_apply_force_writes_a_07_config_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _copy(tmp_path, "holodeck07.yaml")
    assert main(["apply", str(path), "--top-k", "4", "--force"]) == 0
    err = capsys.readouterr().err
    assert err.index("0.7") < err.index("written")
    assert "--force" in err
    assert "top_k: 4" in path.read_text()


def test_apply_runtime_flag_decides_over_the_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--runtime holodeck-0.6 on a file with an openai: block writes (the user said so);
    --runtime anthropic on a plain 0.6 file refuses (that API does not read agent.yaml)."""
    seven = _copy(tmp_path, "holodeck07.yaml")
    assert main(["apply", str(seven), "--top-k", "4", "--runtime", "holodeck-0.6"]) == 0
    assert "top_k: 4" in seven.read_text()
    plain = tmp_path / "plain.yaml"
    plain.write_bytes((FIXTURES / "noblock.yaml").read_bytes())
    before = plain.read_bytes()
    assert main(["apply", str(plain), "--top-k", "4", "--runtime", "anthropic"]) == 2
    assert "export --runtime anthropic" in capsys.readouterr().err
    assert plain.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--top-k", "0"], "--top-k"),
        (["--threshold", "2"], "--threshold"),
        (["--top-n-used", "99"], "--top-n-used"),
    ],
)
def test_apply_refuses_bad_flags_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    path = _copy(tmp_path, "commented.yaml")
    old = path.read_bytes()
    assert main(["apply", str(path), *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("holo-tune: error:")
    assert captured.out == ""
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.yaml"]


def test_apply_refuses_a_file_that_does_not_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(b"name: a\nmodel: [\n")
    assert main(["apply", str(path), "--top-k", "3"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "agent.yaml" in lines[0]
    assert path.read_bytes() == b"name: a\nmodel: [\n"


def test_apply_in_a_subprocess_exits_2_with_one_line(tmp_path: Path) -> None:
    path = _copy(tmp_path, "anthropic.yaml")
    old = path.read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "apply", str(path), "--top-k", "77"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--top-k" in lines[0] and "Traceback" not in result.stderr
    assert path.read_bytes() == old


def test_dry_run_output_patches_the_file(tmp_path: Path) -> None:
    """``apply --dry-run | patch`` gives the file apply writes (stdout holds only the diff)."""
    import shutil

    if shutil.which("patch") is None:  # the system's, not make test's: nothing to check against
        pytest.skip("GNU patch not installed")
    path = _copy(tmp_path, "flow.yaml")
    copy = tmp_path / "copy.yaml"
    copy.write_bytes(path.read_bytes())
    dry = subprocess.run(
        [sys.executable, "-m", "workbench", "apply", str(path), "--method", "hybrid", "--dry-run"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    subprocess.run(["patch", "--quiet", str(copy)], input=dry.stdout, check=True, timeout=30)
    assert main(["apply", str(path), "--method", "hybrid"]) == 0
    assert copy.read_bytes() == path.read_bytes()


def test_the_coloured_diff_is_the_diff_plus_colour_codes() -> None:
    import re

    from workbench.commands.apply import colored_diff

    diff = "--- a\r\n+++ a\r\n@@ -1 +1 @@\r\n-x: 1\r\n+x: 2\r\n"
    coloured = colored_diff(diff)
    assert "\x1b[31m-x: 1\x1b[0m\r\n" in coloured and "\x1b[32m+x: 2\x1b[0m\r\n" in coloured
    assert re.sub(r"\x1b\[\d+m", "", coloured) == diff


DUPLICATE = (
    "name: dup\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
    "tool_filtering:\n  enabled: true\n  top_k: 3\n  top_k: 4\n"
)


@pytest.mark.parametrize(
    "command",
    [["tools", "--catalog", "CATALOG"], ["export"], ["check", "--catalog", "CATALOG"]],
)
def test_every_command_warns_of_a_duplicate_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """One rule: the loader warns (HoloDeck's PyYAML takes the last value); every command says."""
    path = tmp_path / "agent.yaml"
    path.write_text(DUPLICATE)
    catalog = tmp_path / "catalog.json"
    catalog.write_text('{"holo_tune_catalog": 1, "servers": {}}')
    argv = [command[0], str(path), *(str(catalog) if a == "CATALOG" else a for a in command[1:])]
    assert main(argv) == 0
    captured = capsys.readouterr()
    expected = (
        "tool_filtering.top_k: appears twice (first on line 6); "
        "HoloDeck's loader takes the last value"
    )
    shown = captured.err + captured.out
    assert expected in shown
    # check lists it as a finding with its place; the others print the loader's line on stderr
    assert (f"[{path}:7]" if command[0] == "check" else f"{path}:7: {expected}") in shown
    if command[0] == "export":
        assert "top_k: 4" in captured.out  # the value HoloDeck uses


def test_apply_refuses_a_duplicate_key_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(DUPLICATE)
    assert main(["apply", str(path), "--top-k", "6"]) == 2
    err = capsys.readouterr().err
    assert "appears twice (first on line 6)" in err  # the warning of every command
    assert f"{path}:7: tool_filtering.top_k: appears twice; HoloDeck's loader takes the last" in err
    assert "cannot tell which one to edit" in err
    assert path.read_text() == DUPLICATE
