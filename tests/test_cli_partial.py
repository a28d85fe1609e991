"""Servers that fail: every command that ranks or measures says which ones and why on stderr, one
line each, and stops (exit 2) unless ``--allow-partial``; none answering is an error whatever the
flag. A real stdio server that works stands next to one whose command does not exist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_run import run_cli

REPO = Path(__file__).resolve().parents[1]
TOOLSERVER = Path(__file__).resolve().parent / "servers" / "toolserver.py"
MISSING = "holo-tune-no-such-server"
FAILED_LINE = (
    f"holo-tune: warning: server ghost failed (command not found: {MISSING}); "
    "its tools are left out"
)
REFUSED = "--allow-partial ranks the others"

GOOD = (
    "  - name: notes\n    type: mcp\n    description: notes server\n"
    f"    command: {json.dumps(sys.executable)}\n"
    f"    args: [{json.dumps(str(TOOLSERVER))}, '--tools', '3']\n"
)
GHOST = f"  - name: ghost\n    type: mcp\n    description: not installed\n    command: {MISSING}\n"
CASES = (
    "cases:\n"
    + "".join(
        f"  - query: test tool number {i} please\n    expected: [notes-tool_0{i}]\n"
        for i in range(3)
    )
    * 2
)


def _agent(folder: Path, *entries: str) -> Path:
    path = folder / "agent.yaml"
    path.write_text(
        "name: partial\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\ntools:\n" + "".join(entries)
    )
    (folder / "agent.cases.yaml").write_text(CASES)
    return path


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "XDG_CACHE_HOME": str(cwd / "cache"),
        "HOLO_TUNE_EMBEDDER": "none",
    }
    return run_cli(*args, timeout=180, env=env, cwd=cwd)


#: Every command that ranks or measures, with what it needs besides the agent.
COMMANDS = {
    "search": ["search", "{agent}", "read test tool 1"],
    "eval": ["eval", "{agent}"],
    "tune": ["tune", "{agent}", "--folds", "2", "--no-what-if"],
    "compare": ["compare", "{agent}"],
    "compare --runtimes": ["compare", "{agent}", "--runtimes"],
    "check": ["check", "{agent}", "--no-what-if"],
    "export --runtime anthropic": ["export", "{agent}", "--runtime", "anthropic"],
}


def _argv(name: str, agent: Path) -> list[str]:
    return [arg.format(agent=agent) for arg in COMMANDS[name]]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_failed_server_stops_every_command_that_ranks(tmp_path: Path, name: str) -> None:
    agent = _agent(tmp_path, GOOD, GHOST)
    result = _run(*_argv(name, agent), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert FAILED_LINE in lines
    assert lines[-1] == (
        "holo-tune: error: 1 of 2 servers failed (ghost): their tools would be missing from "
        f"every figure; {REFUSED}"
    )


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_server_answering_is_an_error_even_with_allow_partial(tmp_path: Path, name: str) -> None:
    agent = _agent(tmp_path, GHOST)
    result = _run(*_argv(name, agent), "--allow-partial", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert FAILED_LINE in lines
    assert lines[-1] == "holo-tune: error: no server answered: there are no tools to rank"


def test_search_with_allow_partial_ranks_the_servers_that_answered(tmp_path: Path) -> None:
    agent = _agent(tmp_path, GOOD, GHOST)
    result = _run("search", str(agent), "test tool number 1", "--allow-partial", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines().count(FAILED_LINE) == 1
    assert "notes-tool_01" in result.stdout and "ghost" not in result.stdout
    result = _run("search", str(agent), "test tool 1", "--allow-partial", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # stdout holds only the JSON, of the same shape
    assert {row["tool"].split("-")[0] for row in data["ranking"]} == {"notes"}
    assert FAILED_LINE in result.stderr.splitlines()


def test_eval_with_allow_partial_measures_the_others_and_says_the_failure_once(
    tmp_path: Path,
) -> None:
    agent = _agent(tmp_path, GOOD, GHOST)
    result = _run("eval", str(agent), "--allow-partial", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines().count(FAILED_LINE) == 1
    assert json.loads(result.stdout)["cases"] == 6


def test_every_server_answering_needs_no_flag(tmp_path: Path) -> None:
    agent = _agent(tmp_path, GOOD)
    result = _run("search", str(agent), "test tool number 1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "failed" not in result.stderr


def test_tools_lists_every_server_and_says_the_failure_on_stderr(tmp_path: Path) -> None:
    agent = _agent(tmp_path, GOOD, GHOST)
    result = _run("tools", str(agent), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    servers = {s["name"]: s["status"] for s in json.loads(result.stdout)["servers"]}
    assert servers == {"notes": "ok", "ghost": "error"}
    assert result.stderr.splitlines().count(FAILED_LINE) == 1
