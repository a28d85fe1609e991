"""Shared test setup: the npm servers on PATH, and finding processes a test started.

``make servers`` installs the npm MCP servers (and an offline ``npx``) into .cache/npm-servers;
their ``node_modules/.bin`` goes first on PATH here as in the Makefile, so ``npx -y <pkg>`` in a
config starts the installed server with no registry fetch. A test marked ``npm`` fails, saying to
run make test, when they are not installed (as does one marked ``provided``: see provided.py).
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings
from provided import check_marks, require

# Property tests draw the same examples on every run of `make test` (a gate must not turn red on
# a draw), with no example database written into the checkout. HOLO_TUNE_HYPOTHESIS=explore
# draws new examples each run (with a database) to hunt for bugs; pin what it finds as a test.
settings.register_profile("gate", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HOLO_TUNE_HYPOTHESIS", "gate"))

REPO = Path(__file__).resolve().parents[1]
NPM_BIN = REPO / ".cache" / "npm-servers" / "node_modules" / ".bin"
TEST_SERVERS = Path(__file__).resolve().parent / "servers"

if NPM_BIN.is_dir() and str(NPM_BIN) not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist's workers start with SIGINT ignored, and a child process inherits that: the
    Ctrl-C tests' holo-tune would never see the signal. A worker gets Python's default back."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Server logs and tool embeddings go to a cache of the test session, never the user's."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    # A runtime whose configuration lives in the home directory writes a test session's copy.
    os.environ["PIZZAPI_CONFIG"] = str(tmp_path_factory.mktemp("pizzapi") / "config.json")


@pytest.fixture(autouse=True)
def _provided(request: pytest.FixtureRequest) -> None:
    """A test marked ``npm`` or ``provided`` fails when make test's part it needs is missing."""
    if request.node.get_closest_marker("npm") is not None:
        require("the npm MCP servers (make servers)", files=[NPM_BIN / "npx"])
    check_marks(request.node)


ProcessFinder = Callable[[str], list[int]]


def processes_with(tag: str) -> list[int]:
    """PIDs of live processes whose command line contains ``tag`` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if tag.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.fixture
def tag() -> str:
    """A unique word to put on a test server's command line, to find its processes later."""
    return f"holo-tune-test-{uuid.uuid4().hex}"


@pytest.fixture
def find_processes() -> ProcessFinder:
    """``find_processes(tag)``: PIDs of live processes whose command line holds ``tag``."""
    return processes_with
