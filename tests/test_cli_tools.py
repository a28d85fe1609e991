"""``holo-tune tools`` and ``holo-tune snapshot`` as a user runs them: real servers and tokens."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_run import cli_argv, run_cli

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
SERVERS = Path(__file__).resolve().parent / "servers"
#: The commands' per-run server logs go here, not into the user's cache.
CACHE = Path(tempfile.mkdtemp(prefix="holo-tune-test-cache-"))


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "NO_COLOR": "1", "XDG_CACHE_HOME": str(CACHE), **(env or {})}
    return run_cli(*args, timeout=180, env=full_env, cwd=REPO)


def _agent(tmp_path: Path) -> Path:
    """A vectorstore tool, a paginating odd-named server and a server whose command is missing."""
    py = json.dumps(sys.executable)
    toolserver = json.dumps(str(SERVERS / "toolserver.py"))
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: cli-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n"
        "  - name: notes\n    type: mcp\n    description: notes server\n"
        f"    command: {py}\n"
        f"    args: [{toolserver}, '--tools', '3', '--page-size', '2', '--odd']\n"
        "  - name: ghost\n    type: mcp\n    description: not installed\n"
        "    command: holo-tune-missing-server\n"
        "  - name: search_docs\n    type: vectorstore\n    description: Search the docs\n"
        "    source: docs.md\n"
    )
    return path


@pytest.fixture(scope="module")
def tools_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result = _run("tools", str(_agent(tmp_path_factory.mktemp("cli"))), "--json")
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_tools_json_has_exactly_the_designed_shape(tools_json: dict[str, Any]) -> None:
    assert set(tools_json) == {"runtime", "servers", "tools", "tokens"}
    assert tools_json["runtime"]["name"] == "holodeck-0.6"
    assert set(tools_json["runtime"]) == {"name", "reason", "source"}
    for server in tools_json["servers"]:
        assert set(server) == {"name", "status", "error", "tools"}
        assert server["status"] in ("ok", "error")
    for tool in tools_json["tools"]:
        assert set(tool) == {"name", "server", "tokens"}
        assert isinstance(tool["tokens"], int) and tool["tokens"] > 0
    assert set(tools_json["tokens"]) == {"all", "encoding", "exact"}
    assert tools_json["tokens"] == {
        "all": tools_json["tokens"]["all"],
        "encoding": "o200k_base",
        "exact": True,
    }
    assert tools_json["tokens"]["all"] >= sum(t["tokens"] for t in tools_json["tools"])


def test_tools_json_lists_in_runtime_order_with_failed_server(tools_json: dict[str, Any]) -> None:
    servers = {s["name"]: s for s in tools_json["servers"]}
    assert [s["name"] for s in tools_json["servers"]] == ["vectorstore", "notes", "ghost"]
    assert servers["notes"] == {"name": "notes", "status": "ok", "error": None, "tools": 6}
    assert servers["ghost"]["status"] == "error"
    assert servers["ghost"]["error"] == "command not found: holo-tune-missing-server"
    assert [t["name"] for t in tools_json["tools"]] == [
        "vectorstore-search_docs",
        "notes-Zeta.v2",
        "notes-alpha-tool",
        "notes-read-file",
        "notes-tool_00",
        "notes-tool_01",
        "notes-tool_02",
    ]
    assert {t["server"] for t in tools_json["tools"][1:]} == {"notes"}


def test_tools_table_shows_errors_totals_and_notes(tmp_path: Path) -> None:
    result = _run("tools", str(_agent(tmp_path)))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "cli-agent · openai gpt-4o · o200k_base (exact)" in out
    assert "error: command not found: holo-tune-missing-server" in out
    assert "notes-read-file" in out and "7 tools:" in out
    assert "note: notes: tool 'read?file' is skipped" in out
    assert "\x1b[" not in out
    log = Path(next(ln for ln in out.splitlines() if "log: " in ln).split("log: ", 1)[1])
    assert log.parent.parent == CACHE / "holo-tune" / "logs" and log.name == "ghost.log"
    assert "command not found: holo-tune-missing-server" in log.read_text()


def test_snapshot_command_writes_a_replayable_file_and_flags_failures(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    out = tmp_path / "snap.json"
    result = _run("snapshot", str(agent), "-o", str(out))
    assert result.returncode == 1
    assert (
        "holo-tune: warning: server ghost failed (command not found: holo-tune-missing-server); "
        "its tools are left out"
    ) in result.stderr.splitlines()
    saved = json.loads(out.read_text())
    assert list(saved["servers"]) == ["notes"] and saved["holo_tune_catalog"] == 1
    replay = _run("tools", str(agent), "--catalog", str(out), "--json")
    assert replay.returncode == 0, replay.stderr
    names = [t["name"] for t in json.loads(replay.stdout)["tools"]]
    assert names[1:] == [f"notes-{n}" for n in ("Zeta.v2", "alpha-tool", "read-file")] + [
        f"notes-tool_0{i}" for i in range(3)
    ]


def test_bad_snapshot_is_exit_2_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "holo_tune_catalog": 1,\n  "servers": {\n}')
    result = _run("tools", str(_agent(tmp_path)), "--catalog", str(bad))
    assert result.returncode == 2
    error = result.stderr.splitlines()[-1]
    assert error.startswith("holo-tune: error: ") and f"{bad}:4: not JSON" in error
    assert "Traceback" not in result.stderr


def test_bad_agent_file_is_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "agent.yaml"
    bad.write_text("name: x\nmodel: [unclosed\n")
    result = _run("tools", str(bad), "--json")
    assert result.returncode == 2 and result.stdout == ""
    assert str(bad) in result.stderr and "Traceback" not in result.stderr


def test_python_servers_sample_opens_offline_from_its_snapshot() -> None:
    result = _run(
        "tools",
        str(SAMPLES / "python-servers.yaml"),
        "--catalog",
        str(SAMPLES / "python-servers.catalog.json"),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [s["name"] for s in data["servers"]] == ["time", "git", "fetch", "filesystem"]
    assert all(s["status"] == "ok" for s in data["servers"])
    assert data["tools"][0]["name"] == "time-convert_time"
    assert "fetch-fetch" in {t["name"] for t in data["tools"]}


@pytest.mark.npm
def test_research_agent_lists_real_servers_in_runtime_order(tmp_path: Path) -> None:
    """The design's acceptance check: the real Brave and memory servers, with no API key set."""
    env = {k: v for k, v in os.environ.items() if k != "BRAVE_API_KEY"}
    env.update(NO_COLOR="1", XDG_CACHE_HOME=str(CACHE))
    agent = str(SAMPLES / "research-agent.yaml")
    result = run_cli("tools", agent, "--json", timeout=180, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "'BRAVE_API_KEY' is not set" in result.stderr
    data = json.loads(result.stdout)
    assert [(s["name"], s["status"]) for s in data["servers"]] == [
        ("vectorstore", "ok"),
        ("brave_search", "ok"),
        ("memory", "ok"),
    ]
    names = [t["name"] for t in data["tools"]]
    brave = [n for n in names if n.startswith("brave_search-")]
    memory = [n for n in names if n.startswith("memory-")]
    assert names == ["vectorstore-search_papers", *sorted(brave), *sorted(memory)]
    assert "brave_search-brave_web_search" in brave and len(memory) == 9
    assert data["tokens"]["encoding"] == "o200k_base" and data["tokens"]["exact"] is True
    snapshot = json.loads((SAMPLES / "research-agent.catalog.json").read_text())
    assert {t["name"] for t in snapshot["servers"]["memory"]["tools"]} == {n[7:] for n in memory}


@pytest.mark.npm
def test_broken_server_sample_shows_the_failure_and_the_rest() -> None:
    result = _run("tools", str(SAMPLES / "broken-server.yaml"), "--json")
    assert result.returncode == 0, result.stderr
    servers = {s["name"]: s for s in json.loads(result.stdout)["servers"]}
    assert servers["memory"]["status"] == "ok" and servers["filesystem"]["status"] == "ok"
    assert servers["missing"]["error"] == "command not found: holo-tune-no-such-server"


def test_timeout_flag_bounds_a_hanging_server(tmp_path: Path) -> None:
    py = json.dumps(sys.executable)
    hang = json.dumps(str(SERVERS / "misbehaving.py"))
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: slow\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: t\n"
        "tools:\n  - name: stuck\n    type: mcp\n    description: hangs\n"
        f"    command: {py}\n    args: [{hang}, hang]\n    request_timeout: 600\n"
    )
    result = _run("tools", str(agent), "--timeout", "1", "--json")
    assert result.returncode == 0, result.stderr
    (server,) = json.loads(result.stdout)["servers"]
    assert server == {
        "name": "stuck",
        "status": "error",
        "error": "no answer within 1 s",
        "tools": 0,
    }


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_listing_leaves_no_server_behind(
    tmp_path: Path, tag: str, find_processes: Callable[[str], list[int]], signum: int
) -> None:
    py = json.dumps(sys.executable)
    hang = json.dumps(str(SERVERS / "misbehaving.py"))
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: stuck\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: t\n"
        "tools:\n  - name: stuck\n    type: mcp\n    description: hangs with a child\n"
        f"    command: {py}\n    args: [{hang}, child-hang, --tag, {tag}]\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(CACHE)}
    proc = subprocess.Popen(
        cli_argv(["tools", str(agent)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(find_processes(tag)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(find_processes(tag)) == 2  # the server and its child are up
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == 130
        assert find_processes(tag) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in find_processes(tag):
            os.kill(pid, signal.SIGKILL)
