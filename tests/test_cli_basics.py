"""The command line's own contract: --version, --help, usage errors (exit 2, one line)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cli_run import run_cli

from workbench import __version__
from workbench.cli import COMMANDS, main


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=60)


def test_version() -> None:
    """``python -m workbench`` itself, as a child process (the rest run in this one)."""
    result = run_cli("--version", timeout=60, process=True)
    assert result.returncode == 0
    assert result.stdout.strip() == f"holo-tune {__version__}"


def test_help_lists_every_subcommand() -> None:
    result = _run("--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_subcommand_has_help(name: str) -> None:
    result = _run(name, "--help")
    assert result.returncode == 0, result.stderr
    assert "AGENT.yaml" in result.stdout


def test_usage_error_is_one_line_exit_2() -> None:
    result = _run("search", "agent.yaml", "q", "--top-k", "five")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--top-k" in lines[0] and "Traceback" not in result.stderr


def test_out_of_range_flag_is_refused_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    from argparse import Namespace

    from workbench.commands.common import setting_from_args
    from workbench.errors import InputError

    with pytest.raises(InputError, match="--top-k") as err:
        setting_from_args(Namespace(top_k=0), None)
    assert str(err.value) == "--top-k: must be >= 1, got 0"  # the config file's wording
    with pytest.raises(InputError, match="--threshold") as err:
        setting_from_args(Namespace(threshold=1.5), None)
    assert str(err.value) == "--threshold: must be <= 1.0, got 1.5"


@pytest.mark.parametrize(
    ("word", "hint"),
    [("tool", "did you mean 'tools'?"), ("serch", "did you mean 'search'?"), ("xyz", "commands:")],
)
def test_a_mistyped_command_is_named_with_a_suggestion(word: str, hint: str) -> None:
    result = _run(word, "agent.yaml")
    assert result.returncode == 2
    line = result.stderr.strip()
    assert line.startswith(f"holo-tune: error: '{word}' is neither a command nor an agent file")
    assert hint in line and len(line.splitlines()) == 1


def test_an_agent_file_without_yaml_suffix_still_opens_as_one(tmp_path: Path) -> None:
    """A path that exists is never taken for a command (the dashboard's loader reports it)."""
    agent = tmp_path / "agent"
    agent.write_text("")
    from workbench.cli import parse_args

    assert parse_args([str(agent)]).agent == str(agent)
    with pytest.raises(SystemExit) as stop:  # a mistyped command beside a real file: the hint
        parse_args(["tool", str(agent)])
    assert stop.value.code == 2


def test_missing_agent_file_is_exit_2() -> None:
    code = main(["export", "does-not-exist.yaml"])
    assert code == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "agent.yaml", "--catalog", "c.json", "find papers"],
        ["search", "--catalog", "c.json", "agent.yaml", "find papers"],
        ["search", "agent.yaml", "find papers", "--catalog", "c.json"],
    ],
)
def test_options_may_come_before_positionals(argv: list[str]) -> None:
    from workbench.cli import parse_args

    args = parse_args(argv)
    assert (args.agent, args.query, args.catalog) == ("agent.yaml", "find papers", "c.json")


def test_search_needs_exactly_one_of_query_and_queries() -> None:
    for argv in (["search", "a.yaml"], ["search", "a.yaml", "q", "--queries", "f.txt"]):
        result = _run(*argv)
        assert result.returncode == 2
        assert "QUERY" in result.stderr and "--queries" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["", "\n\n", "# just a comment\n\n# another\n"])
def test_an_empty_agent_file_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    assert main(["export", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: the file is empty" in err and "required key is missing" not in err


def test_snapshot_refuses_a_missing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o DIR/x.json`` with no DIR: exit 2 before any server starts, and nothing created."""
    base = tmp_path
    agent = base / "agent.yaml"
    agent.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: x}\n"
    )
    out = base / "no-such-dir" / "x.json"
    assert main(["snapshot", str(agent), "-o", str(out)]) == 2
    assert f"{out.parent}: no such directory" in capsys.readouterr().err
    assert not out.parent.exists()
