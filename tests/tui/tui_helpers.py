"""Helpers of the dashboard tests: the real app on snapshot catalogs (no network, no model).

The stackone data set (270 tools, bm25) lives in tests/data/datasets; the research agent and the
broken-server agent are the repository's sample configs. Environments are explicit so nothing
on the machine (an OPENAI_API_KEY, say) changes what the screen shows.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button

from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screenshots import settle

REPO = Path(__file__).resolve().parents[2]
DATASETS = REPO / "tests" / "data" / "datasets"
SAMPLES = REPO / "sample_configs"
#: What the sample agents need to load; no embedding key, so semantic is BM25 (deterministic).
ENV = {"BRAVE_API_KEY": "placeholder", "HOME": "/nonexistent-holo-tune-home"}

ViewT = TypeVar("ViewT", bound=Screen[Any])


@pytest.fixture
def stackone() -> Path:
    return DATASETS / "stackone"


@pytest.fixture
def stackone_app(stackone: Path, tmp_path: Path) -> HoloTuneApp:
    """The stackone agent (a copy, so write-back tests can write) on its snapshot."""
    return _stackone_copy(stackone, tmp_path)


@pytest.fixture
def stackone_here(stackone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HoloTuneApp:
    """:func:`stackone_app` run in its folder, the agent named ``agent.yaml``: a test whose
    screen shows the agent's path draws the same lines whatever the length of the test's
    folder (pytest-xdist's workers add to it)."""
    monkeypatch.chdir(tmp_path)
    return _stackone_copy(stackone, tmp_path, relative=True)


def stackone_with_cases(stackone: Path, tmp_path: Path, every: int = 1) -> HoloTuneApp:
    """The stackone agent (a copy) with its ``cases.jsonl`` beside it (it has no test_cases of
    its own): every case, or every ``every``-th one for a smaller set."""
    lines = (stackone / "cases.jsonl").read_text().splitlines()[::every]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return _stackone_copy(stackone, tmp_path)


def _stackone_copy(stackone: Path, tmp_path: Path, *, relative: bool = False) -> HoloTuneApp:
    """With ``relative`` the agent is named relative to ``tmp_path`` (the caller chdirs there):
    what the screen shows of its path is as long whatever the length of ``tmp_path``."""
    agent = tmp_path / "agent.yaml"
    shutil.copyfile(stackone / "agent.yaml", agent)
    return HoloTuneApp(
        Options(
            agent=Path(agent.name) if relative else agent,
            catalog=stackone / "catalog.json",
            environ=ENV,
        )
    )


def research_app(tmp_path: Path, query: str = "", *, relative: bool = False) -> HoloTuneApp:
    """The research sample agent (a copy) on its snapshot catalog, embedder none. With
    ``relative`` the agent is named relative to ``tmp_path`` (the caller chdirs there), so no
    machine path reaches the screen."""
    agent = tmp_path / "research-agent.yaml"
    shutil.copyfile(SAMPLES / "research-agent.yaml", agent)
    shutil.copytree(SAMPLES / "data", tmp_path / "data")  # the vectorstore's source
    return HoloTuneApp(
        Options(
            agent=Path(agent.name) if relative else agent,
            catalog=SAMPLES / "research-agent.catalog.json",
            embedder="none",
            query=query,
            environ=ENV,
            show_timing=False,
        )
    )


def seven_agent(tmp_path: Path) -> Path:
    """The research agent as HoloDeck 0.7 reads it: an ``openai:`` block, no tool_filtering;
    its labelled cases beside it."""
    text = (SAMPLES / "research-agent.yaml").read_text()
    agent = tmp_path / "research-agent.yaml"
    agent.write_text(text[: text.index("tool_filtering:")] + "openai:\n  max_turns: 10\n")
    shutil.copytree(SAMPLES / "data", tmp_path / "data")
    shutil.copyfile(SAMPLES / "research-agent.cases.yaml", tmp_path / "research-agent.cases.yaml")
    return agent


def runtime_app(agent: Path, runtime: str | None = None) -> HoloTuneApp:
    """``agent`` on the research agent's catalog snapshot, embedder none, run by ``runtime``
    (None: as detected)."""
    options = Options(
        agent=agent,
        catalog=SAMPLES / "research-agent.catalog.json",
        embedder="none",
        environ=ENV,
        show_timing=False,
        runtime=runtime,
    )
    return HoloTuneApp(options)


SERVERS = REPO / "tests" / "servers"


def _broken_agent(tmp_path: Path, missing: str) -> Path:
    """broken-server.yaml's layout: ``memory`` (9 tools) and ``filesystem`` (1 tool), real test
    servers over stdio, around ``missing`` (an MCP entry whose ``command:`` line is given)."""
    server = json.dumps(str(SERVERS / "toolserver.py"))

    def entry(name: str, tools: int) -> str:
        return (
            f"  - name: {name}\n    type: mcp\n    description: test server {name}\n"
            f"    command: {json.dumps(sys.executable)}\n"
            f"    args: [{server}, '--tools', '{tools}']\n"
        )

    agent = tmp_path / "broken-server.yaml"
    agent.write_text(
        "name: broken-server\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: You remember things and read files.\ntools:\n"
        + entry("memory", 9)
        + f"  - name: missing\n    type: mcp\n    description: not installed\n{missing}"
        + entry("filesystem", 1)
    )
    return agent


def broken_server_app(tmp_path: Path) -> HoloTuneApp:
    """memory and filesystem answer, `missing` is really started and fails (its command does not
    exist)."""
    agent = _broken_agent(tmp_path, "    command: holo-tune-no-such-server\n")
    return HoloTuneApp(Options(agent=agent, timeout=20, environ=ENV))


def snapshot_app(tmp_path: Path, tag: str) -> HoloTuneApp:
    """The broken-server layout on a snapshot of memory and filesystem: `missing` (a server that
    would hang, tagged with ``tag``) is not in it, so it is left out and never started."""
    hang = json.dumps([str(SERVERS / "misbehaving.py"), "hang", "--tag", tag])
    agent = _broken_agent(
        tmp_path, f"    command: {json.dumps(sys.executable)}\n    args: {hang}\n"
    )
    research = json.loads((SAMPLES / "research-agent.catalog.json").read_text())
    snapshot = {
        "holo_tune_catalog": 1,
        "servers": {
            "memory": research["servers"]["memory"],
            "filesystem": {
                "tools": [
                    {
                        "name": "read_text_file",
                        "description": "Read a text file under the allowed directories",
                        "inputSchema": {
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                        },
                    }
                ]
            },
        },
    }
    catalog = tmp_path / "broken.catalog.json"
    catalog.write_text(json.dumps(snapshot))
    return HoloTuneApp(Options(agent=agent, catalog=catalog, timeout=20, environ=ENV))


async def cli_json(command: str, agent: Path, *args: str) -> Any:
    """``holo-tune COMMAND AGENT --catalog <its sample snapshot> ARGS --json`` in a child process
    (the CLI runs its own event loop, and the app under test holds stdout), as JSON."""
    catalog = SAMPLES / "research-agent.catalog.json" if agent.name.startswith("research") else None
    argv = [sys.executable, "-m", "workbench", command, str(agent), *args, "--json"]
    if catalog is not None and "--catalog" not in args:
        argv[5:5] = ["--catalog", str(catalog)]
    env = {"PATH": os.environ.get("PATH", ""), **ENV}
    done = await asyncio.to_thread(subprocess.run, argv, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def shown(widget: Widget) -> str:
    """The text a widget draws on screen, line by line (what the user reads)."""
    size = widget.outer_size
    strips = widget.render_lines(Region(0, 0, size.width, size.height))
    return "\n".join(strip.text for strip in strips)


def buttons_shown(screen: Screen[Any]) -> list[str]:
    """The labels of the buttons drawn on ``screen`` (a hidden one takes no room)."""
    return [str(b.label) for b in screen.query(Button) if b.region.area > 0]


async def open_view(pilot: Pilot[None], view: type[ViewT], *keys: str) -> ViewT:
    """Once the app has loaded, ``tab`` to the dashboard's lists and press ``keys``: the view
    they open, checked to be a ``view``, with its own workers done."""
    await settle(pilot)
    await pilot.press("tab", *keys)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, view)
    return screen


async def run_view(pilot: Pilot[None], screen: ViewT) -> ViewT:
    """``enter`` on an open view (run it on its cases) and wait for the run's worker: the view,
    checked to be still on screen."""
    await pilot.press("enter")
    await settle(pilot)
    assert pilot.app.screen is screen
    return screen


async def open_and_run(pilot: Pilot[None], view: type[ViewT], *keys: str) -> ViewT:
    """:func:`open_view`, then :func:`run_view` as it opened."""
    return await run_view(pilot, await open_view(pilot, view, *keys))
