"""Long commands: progress on a terminal only, and Ctrl-C as one line with exit code 130.

Real parts: the command run as a process, its stderr a pipe or a pseudo-terminal (``pty``); the
sample research agent and the bfcl data set (tests/data/datasets); a real stdio server that
hangs, for Ctrl-C while the servers are listed.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from workbench.progress import ProgressLine

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
SERVERS = Path(__file__).resolve().parent / "servers"
BFCL = Path(__file__).resolve().parent / "data" / "datasets" / "bfcl"
COMPARE = [
    "compare",
    str(SAMPLES / "research-agent.yaml"),
    "--catalog",
    str(SAMPLES / "research-agent.catalog.json"),
    "--embedder",
    "none",
]
TUNE = ["tune", *COMPARE[1:]]


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "BRAVE_API_KEY": "placeholder",
    }


def _piped(tmp_path: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *argv],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=300,
        check=False,
    )


def _on_a_terminal(tmp_path: Path, argv: list[str]) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (stdout a pipe): exit code, stdout, what the terminal
    showed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=_env(tmp_path),
    )
    os.close(slave)
    assert proc.stdout is not None
    out, shown = b"", b""
    streams = {master: "pty", proc.stdout.fileno(): "out"}
    deadline = time.monotonic() + 300
    while streams and time.monotonic() < deadline:
        ready, _, _ = select.select(list(streams), [], [], 1.0)
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal's other side closed
                chunk = b""
            if not chunk:
                del streams[fd]
            elif streams[fd] == "pty":
                shown += chunk
            else:
                out += chunk
    os.close(master)
    code = proc.wait(timeout=60)
    return code, out.decode(), shown.decode()


@pytest.mark.parametrize("argv", [COMPARE, TUNE], ids=["compare", "tune"])
def test_progress_stays_off_a_pipe(tmp_path: Path, argv: list[str]) -> None:
    result = _piped(tmp_path, argv)
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr and "\x1b" not in result.stderr
    assert not any(line.startswith(f"{argv[0]}: ") for line in result.stderr.splitlines())
    assert "engines" not in result.stderr and "steps" not in result.stderr


def test_compare_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    code, out, shown = _on_a_terminal(tmp_path, COMPARE)
    assert code == 0, shown
    assert "compare: holodeck 1/9 engines" in shown
    assert "compare: holo 9/9 engines · 315/315 cases" in shown  # 35 cases, 9 passes
    assert shown.endswith("\r\x1b[K")  # the line erased once done
    assert "\r" not in out and "research-agent: 35 cases" in out


def test_tune_shows_its_steps_on_a_terminal(tmp_path: Path) -> None:
    code, _, shown = _on_a_terminal(tmp_path, TUNE)
    assert code == 0, shown
    assert "tune: tuning 1/2 steps · " in shown and "tune: what-if rows 2/2 steps · " in shown


def test_json_keeps_the_terminal_quiet(tmp_path: Path) -> None:
    code, out, shown = _on_a_terminal(tmp_path, [*COMPARE, "--json"])
    assert code == 0, shown
    assert "engines" not in shown and "\x1b" not in shown
    assert json.loads(out)["cases"] == 35


def test_progress_line_draws_only_on_a_terminal(tmp_path: Path) -> None:
    with (tmp_path / "file").open("w") as stream:
        line = ProgressLine("compare", stages=["a", "b"], stream=stream)
        line.stage("a")
        line(3, 10)
        line.close()
    assert (tmp_path / "file").read_text() == ""
    assert line.text() == "compare: a 1/2 engines · 3/10 cases"


def _no_process_in(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("phase", ["listing", "comparing"])
def test_ctrl_c_is_one_line_and_exit_130(
    tmp_path: Path, tag: str, find_processes: Callable[[str], list[int]], phase: str
) -> None:
    """SIGINT while the servers are listed (a real server that hangs, with a child) or while
    every engine runs on the bfcl data set: exit 130, ``holo-tune: interrupted`` alone on
    stderr after what was said before, and no process of the command left."""
    if phase == "listing":
        agent = tmp_path / "agent.yaml"
        py = json.dumps(sys.executable)
        hang = json.dumps(str(SERVERS / "misbehaving.py"))
        agent.write_text(
            "name: stuck\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n"
            "  inline: t\ntools:\n  - name: stuck\n    type: mcp\n    description: hangs\n"
            f"    command: {py}\n    args: [{hang}, child-hang, --tag, {tag}]\n"
        )
        cases = tmp_path / "cases.yaml"
        cases.write_text("cases:\n  - {query: anything, expected: [stuck-x]}\n")
        argv = ["compare", str(agent), "--cases", str(cases)]
    else:
        argv = ["compare", str(BFCL / "agent.yaml"), "--catalog", str(BFCL / "catalog.json")]
        argv += ["--cases", str(BFCL / "cases.jsonl"), "--embedder", "none"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", *argv, "--debug"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
        start_new_session=True,
    )
    assert proc.stderr is not None
    try:
        if phase == "listing":
            deadline = time.monotonic() + 60
            while len(find_processes(tag)) < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert len(find_processes(tag)) == 2  # the server and its child are up
        else:
            before = ""
            while "holo-tune: cases:" not in before:  # the cases are read: the engines run
                line = proc.stderr.readline()
                assert line, "the command ended before running the engines"
                before += line
            time.sleep(2.0)
            assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        err = proc.stderr.read()
        assert code == 130
        assert err.endswith("holo-tune: interrupted\n")
        assert "Traceback" not in err and err.count("interrupted") == 1
        assert find_processes(tag) == []
        assert _no_process_in(proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in find_processes(tag):
            os.kill(pid, signal.SIGKILL)
