"""``holo-tune ARGS`` as a test runs it: in this process by default, in a child process when the
process itself is under test.

In-process, :func:`run_cli` calls :func:`workbench.cli.main` with ``ARGS``, standard output and
error captured (streams that are no terminal, as a pipe is), the environment ``env`` (the whole
of it, as ``subprocess.run(env=...)`` takes it) and the working directory ``cwd``, both put back
afterwards; argparse's exit is the exit code. It answers a ``subprocess.CompletedProcess`` as the
child process does, so a test reads ``returncode``, ``stdout`` and ``stderr`` alike either way.
It spares each run the interpreter's start and the imports (``mcp`` alone takes over a second).

``process=True`` runs ``python -m workbench ARGS`` for real: for what only a process shows (its
exit on a signal, a terminal's progress line, the servers it leaves behind, the import of the
entry point itself).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import traceback
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from workbench.cli import main

__all__ = ["cli_argv", "run_cli"]


def cli_argv(args: Sequence[str]) -> list[str]:
    """The command line of a child ``holo-tune ARGS``."""
    return [sys.executable, "-m", "workbench", *args]


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 300,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``holo-tune ARGS`` with ``env`` (default: this one) in ``cwd`` (default: this one), its
    output as text. ``timeout`` bounds a child process only (pytest's timeout bounds the rest)."""
    if process:
        return subprocess.run(
            cli_argv(args),
            capture_output=True,
            text=True,
            timeout=timeout,
            env=None if env is None else dict(env),
            cwd=cwd,
        )
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = _pipe(), _pipe()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            code = _main(list(args), err)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(cli_argv(args), code, _text(out), _text(err))


def _main(argv: list[str], err: io.TextIOWrapper) -> int:
    """``main(argv)`` as the entry point ends it: argparse's exit is its code, an exception
    that escapes is Python's traceback and exit 1."""
    try:
        return main(argv)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            return stop.code or 0
        print(stop.code, file=err)
        return 1
    except Exception:  # what main lets through: the child would print it and exit 1
        traceback.print_exc(file=err)
        return 1


def _pipe() -> io.TextIOWrapper:
    """A text stream that is no terminal, with a byte buffer under it, as a pipe is."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")


def _text(stream: io.TextIOWrapper) -> str:
    """What was written, read as ``subprocess.run(text=True)`` reads it (universal newlines)."""
    stream.flush()
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
