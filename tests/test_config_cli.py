"""A broken config through the command line: exit 2, one line on stderr, no traceback.

Through the commands that load the agent (``tools``, ``export``, ``snapshot``); a command that
is gone fails here (argparse's "invalid choice" is not the one line asked for).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_run import run_cli

CONFIGS = Path(__file__).parent / "configs"
ROOT = Path(__file__).resolve().parents[1]

BROKEN = {
    "bad_yaml.yaml": ":8: invalid YAML: ",
    "bad_top_k.yaml": ":9: tool_filtering.top_k: must be <= 50, got 99",
    "unknown_filtering_key.yaml": ":9: tool_filtering.topk: unknown key",
    "unknown_tool_key.yaml": ":13: tools[0].timeout_seconds: unknown key",
    "wrong_type.yaml": ":12: tools[0].request_timeout: expected an integer, got 'soon'",
}
# (A missing variable is not in the list: commands that only read the file may choose
# ``missing_env="warn"``; the loader's own tests cover that error.)

COMMANDS = {
    "tools": ["tools"],
    "export": ["export"],
    "snapshot": ["snapshot", "-o", os.devnull],
}


# Each fixture through one command (in turn), and one fixture through every command.
CASES = sorted(
    {(f, sorted(COMMANDS)[i % len(COMMANDS)]) for i, f in enumerate(sorted(BROKEN))}
    | {("bad_top_k.yaml", c) for c in COMMANDS}
)


@pytest.mark.parametrize(("fixture", "command"), CASES)
def test_broken_config_exits_2_with_one_line(command: str, fixture: str) -> None:
    argv = COMMANDS[command]
    path = Path("tests") / "configs" / fixture
    result = run_cli(argv[0], str(path), *argv[1:], cwd=ROOT, timeout=60)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith(f"holo-tune: error: {path}{BROKEN[fixture]}")
    assert result.stdout == ""
