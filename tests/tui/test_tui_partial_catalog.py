"""The dashboard is usable while servers connect: the ranking lists the tools of the servers that
answered, and grows when the slow one answers (real stdio servers, the slow one held back by the
test until it has seen the fast one's tools ranked)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from tui_helpers import ENV

from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle
from workbench.tui.view import RankRow
from workbench.tui.widgets.header_bar import HeaderBar
from workbench.tui.widgets.number_knob import NumberKnob
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.servers_panel import ServersPanel

SIZE = (120, 36)
TOOLSERVER = Path(__file__).resolve().parents[1] / "servers" / "toolserver.py"
#: A generous bound for things that take well under a second (slow machines, loaded CI).
PATIENCE = 60.0


def _agent(
    folder: Path, release: Path, tag: str, *, slow_tools: int = 3, fast: bool = True
) -> Path:
    """``slow`` (``slow_tools`` tools, answers once ``release`` exists) then, with ``fast``,
    ``fast`` (2 tools)."""
    py = json.dumps(sys.executable)
    server = json.dumps(str(TOOLSERVER))
    path = folder / "agent.yaml"
    text = (
        "name: partial-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n"
        "  - name: slow\n    type: mcp\n    description: answers late\n"
        f"    command: {py}\n"
        f"    args: [{server}, '--tools', '{slow_tools}', '--wait-file',"
        f" {json.dumps(str(release))}, '--tag', '{tag}']\n"
    )
    if fast:
        text += (
            "  - name: fast\n    type: mcp\n    description: answers at once\n"
            f"    command: {py}\n"
            f"    args: [{server}, '--tools', '2', '--tag', '{tag}']\n"
        )
    path.write_text(text)
    return path


def _options(agent: Path) -> Options:
    return Options(
        agent=agent,
        embedder="none",
        query="test tool number",
        environ=ENV,
        timeout=PATIENCE,
        show_timing=False,
    )


def _ranked(app: HoloTuneApp) -> list[str]:
    rows = app.screen.query_one(RankingTable).rows_shown
    return [r.tool for r in rows if isinstance(r, RankRow)]


async def _until(pilot: Pilot[None], check: Callable[[], bool]) -> None:
    """Let the app run until ``check()`` holds (fails after a generous bound, never sooner)."""
    deadline = time.monotonic() + PATIENCE
    while not check():
        assert time.monotonic() < deadline, "the dashboard never got there"
        await pilot.pause(0.05)


async def test_the_ranking_lists_the_fast_servers_tools_while_the_slow_one_connects(
    tmp_path: Path, tag: str, find_processes: Callable[[str], list[int]]
) -> None:
    release = tmp_path / "release"
    app = HoloTuneApp(_options(_agent(tmp_path, release, tag)))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await _until(pilot, lambda: bool(_ranked(app)))
            screen = app.screen
            assert isinstance(screen, DashboardScreen)
            # The fast server's tools are ranked; the slow server is still connecting.
            assert sorted(_ranked(app)) == ["fast-tool_00", "fast-tool_01"]
            states = {s.name: s.state for s in screen.query_one(ServersPanel).statuses}
            assert states == {"slow": "connecting", "fast": "ok"}
            header = str(screen.query_one(HeaderBar).render())
            assert "1/2 servers ok" in header and "2 tools" in header
            assert screen.lab is not None
            assert screen.lab.workspace.catalog.names() == ["fast-tool_00", "fast-tool_01"]

            release.touch()  # now the slow server answers
            await settle(pilot)
            assert sorted(_ranked(app)) == [
                "fast-tool_00",
                "fast-tool_01",
                "slow-tool_00",
                "slow-tool_01",
                "slow-tool_02",
            ]
            states = {s.name: s.state for s in screen.query_one(ServersPanel).statuses}
            assert states == {"slow": "ok", "fast": "ok"}
            header = str(screen.query_one(HeaderBar).render())
            assert "2/2 servers ok" in header and "5 tools" in header
            # The runtime's order: config order of the entries, not the order they answered in.
            assert screen.lab is not None
            assert screen.lab.workspace.catalog.names() == [
                "slow-tool_00",
                "slow-tool_01",
                "slow-tool_02",
                "fast-tool_00",
                "fast-tool_01",
            ]
    finally:
        release.touch()
    assert find_processes(tag) == []


def _hanging_agent(folder: Path, tag: str) -> Path:
    """``hangs`` (never answers; its process ignores a closed stdin) then ``fast`` (2 tools)."""
    py = json.dumps(sys.executable)
    server = json.dumps(str(TOOLSERVER))
    hang = json.dumps(str(TOOLSERVER.with_name("misbehaving.py")))
    path = folder / "agent.yaml"
    path.write_text(
        "name: hanging-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n"
        "  - name: hangs\n    type: mcp\n    description: never answers\n"
        f"    command: {py}\n"
        f"    args: [{hang}, 'hang', '--tag', '{tag}']\n"
        "  - name: fast\n    type: mcp\n    description: answers at once\n"
        f"    command: {py}\n"
        f"    args: [{server}, '--tools', '2', '--tag', '{tag}']\n"
    )
    return path


@pytest.mark.parametrize("key", ["ctrl+q", "q"])
async def test_quitting_while_a_server_is_listed_leaves_no_process(
    tmp_path: Path, tag: str, find_processes: Callable[[str], list[int]], key: str
) -> None:
    app = HoloTuneApp(_options(_hanging_agent(tmp_path, tag)))
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: bool(_ranked(app)))
        states = {s.name: s.state for s in app.screen.query_one(ServersPanel).statuses}
        assert states == {"hangs": "connecting", "fast": "ok"}
        assert len(find_processes(tag)) == 1  # the hanging server, still being listed
        if key == "q":  # q quits from anywhere but the query input
            app.screen.query_one(RankingTable).focus()
        await pilot.press(key)
        await pilot.pause()
        assert not app.is_running
    # The app is gone: so is every server it started, at once (not when the event loop ends).
    assert find_processes(tag) == []


async def test_knobs_moved_before_any_server_answers_are_kept(
    tmp_path: Path, tag: str, find_processes: Callable[[str], list[int]]
) -> None:
    """The knobs work from the first frame: a top_k set while the only server is still being
    listed is the setting the ranking uses once it answers (not the file's, silently)."""
    release = tmp_path / "release"
    app = HoloTuneApp(_options(_agent(tmp_path, release, tag, slow_tools=12, fast=False)))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, DashboardScreen)
            knob = screen.query_one("#knob-top-k", NumberKnob)
            knob.slider.focus()
            await pilot.press("right", "right")
            await pilot.pause()
            assert screen.lab is None  # still listing
            assert knob.input.value == "7" and knob.has_class("-changed")

            release.touch()
            await _until(pilot, lambda: len(_ranked(app)) == 12)
            await settle(pilot)
            assert screen.lab is not None and screen.lab.setting.top_k == 7
            assert knob.input.value == "7" and knob.has_class("-changed")
            sent = [r for r in screen.query_one(RankingTable).rows_shown if isinstance(r, RankRow)]
            assert sum(1 for r in sent if r.reason is not None) == 7
    finally:
        release.touch()
    assert find_processes(tag) == []
