"""The start's collector (workbench.startup): off from the process's entry until the command's
start is over, then on with the start's objects frozen; ``cli.main`` in this process leaves the
collector as it was."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import startup
from workbench.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_configs" / "research-agent.yaml"
SNAPSHOT = REPO / "sample_configs" / "research-agent.catalog.json"


def test_loaded_undoes_loading_only() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        startup.loading()
        assert not gc.isenabled()
        startup.loaded()
        assert gc.isenabled() and gc.get_freeze_count() >= frozen
        gc.disable()  # a caller's own choice: loaded() without loading() keeps it
        startup.loaded()
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


def test_main_in_this_process_leaves_the_collector_on(capsys: pytest.CaptureFixture[str]) -> None:
    frozen = gc.get_freeze_count()
    assert main(["tools", str(SAMPLE), "--catalog", str(SNAPSHOT)]) == 0
    assert "search_papers" in capsys.readouterr().out
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_command_runs_with_the_collector_back_on() -> None:
    """``python -m workbench``: off while it loads, on (and the start frozen) when the command
    runs."""
    probe = (
        "import gc, sys\n"
        "import workbench.commands.tools as v\n"
        "def run(args):\n"
        "    print(gc.isenabled(), gc.get_freeze_count() > 0)\n"
        "    return 0\n"
        "v.run = run\n"
        f"sys.argv = ['holo-tune', 'tools', {str(SAMPLE)!r}]\n"
        "from workbench.__main__ import run as entry\n"
        "entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "True True", done.stderr
