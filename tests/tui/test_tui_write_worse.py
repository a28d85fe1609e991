"""The dashboard asks twice before it writes or adopts a setting measured worse (issue 29): the
rule every tuner shares (:mod:`workbench.evaluate.verdict`), on the agent's labelled cases."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tui_helpers import SAMPLES, open_and_run, research_app, shown

from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screens.writeback import WriteBackScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.row_list import RowList

SIZE = (120, 36)


def _with_cases(tmp_path: Path) -> None:
    shutil.copyfile(SAMPLES / "research-agent.cases.yaml", tmp_path / "research-agent.cases.yaml")


async def test_write_of_a_worse_block_asks_a_second_confirmation(tmp_path: Path) -> None:
    """top_k 1 against the file's 5 on the research agent's cases: the first ``y`` says it is
    measured worse and writes nothing; the second writes."""
    app = research_app(tmp_path)
    _with_cases(tmp_path)
    agent = app.options.agent
    before = agent.read_bytes()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", *["left_square_bracket"] * 4, "ctrl+s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WriteBackScreen)
        assert "measured worse than the file's setting" in shown(
            screen.query_one("#writeback-warnings")
        )
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen and agent.read_bytes() == before
        assert "y again writes it" in shown(screen.query_one("#writeback-error"))
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is not screen
    assert "top_k: 1" in agent.read_text()


async def test_a_better_block_is_written_at_once(tmp_path: Path) -> None:
    """top_k 6 (not worse on the cases): one ``y`` writes, no warning."""
    app = research_app(tmp_path)
    _with_cases(tmp_path)
    agent = app.options.agent
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "right_square_bracket", "ctrl+s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, WriteBackScreen) and screen.worse is None
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is not screen
    assert "top_k: 6" in agent.read_text()


async def test_adopting_a_worse_front_point_asks_again(tmp_path: Path) -> None:
    """Evaluate's Enter on a front point measured worse than the setting evaluated: a warning
    and the view stays; Enter again adopts it."""
    from workbench.evaluate.runs import setting_verdict

    app = research_app(tmp_path)
    _with_cases(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        outcome = screen.outcome
        assert outcome is not None and outcome.case_set is not None
        ws = screen.lab.workspace
        worse = [
            n
            for n, p in enumerate(outcome.front)
            if setting_verdict(
                ws.engine, ws.catalog, ws.tokens, outcome.case_set, p.setting, screen.setting
            ).worse
        ]
        assert worse, "the cheapest points lose recall on these cases"
        front = screen.query_one("#eval-front", RowList)
        front.focus()
        await pilot.press(*["down"] * worse[0], "enter")
        await settle(pilot)
        assert app.screen is screen  # asked again, nothing adopted
        await pilot.press("enter")
        await settle(pilot)
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen) and dashboard.lab is not None
        assert dashboard.lab.setting == outcome.front[worse[0]].setting


async def test_write_of_a_runtimes_worse_file_asks_a_second_confirmation(
    tmp_path: Path,
) -> None:
    """serve's Write of the knobs' settings with ``top_k`` 1, against what serve runs now (an
    older ``.mcp.json`` entry's flags, ``--method bm25 --top-k 5``, read as serve reads them)
    on the research agent's cases, each case measured as the tuner measures it: worse, so the
    first ``y`` says so and writes nothing; the second writes the settings file and the entry
    ``--settings`` it in place of the old flags."""
    from tui_helpers import runtime_app

    from workbench.runtimes.serve import SETTINGS_FILE
    from workbench.search.holo.settings import read_settings
    from workbench.tui.screens.config_write import ConfigWriteScreen

    agent = research_app(tmp_path).options.agent
    # nothing pinned, no threshold: top_k 1 alone (a pin would hold recall within the bar)
    text = agent.read_text().replace("  always_include:\n    - search_papers\n", "")
    agent.write_text(text.replace("similarity_threshold: 0.5", "similarity_threshold: 0.0"))
    _with_cases(tmp_path)
    mcp_json = tmp_path / ".mcp.json"
    entry = ["serve", str(agent), "--method", "bm25", "--top-k", "5", "--threshold", "0"]
    mcp_json.write_text(json.dumps({"mcpServers": {"holo-tune": {"command": "x", "args": entry}}}))
    before = mcp_json.read_bytes()
    app = runtime_app(agent, runtime="serve")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", *["left_square_bracket"] * 4, "ctrl+s")
        await settle(pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ConfigWriteScreen)
        assert "measured worse than the file's setting" in shown(
            screen.query_one("#writeback-warnings")
        )
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is screen and mcp_json.read_bytes() == before
        assert not (tmp_path / SETTINGS_FILE).exists()
        assert "y again writes it" in shown(screen.query_one("#writeback-error"))
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is not screen
    args = json.loads(mcp_json.read_text())["mcpServers"]["holo-tune"]["args"]
    assert args[2:] == ["--settings", str((tmp_path / SETTINGS_FILE).resolve())]
    assert read_settings(tmp_path / SETTINGS_FILE).top_k == 1


async def test_serves_write_of_what_serve_runs_now_is_not_worse(tmp_path: Path) -> None:
    """The knobs at what an older entry's flags run (bm25, top_k 5, no threshold, nothing
    pinned): the same settings measured, so nothing is called worse and one ``y`` writes."""
    from tui_helpers import runtime_app

    from workbench.tui.screens.config_write import ConfigWriteScreen

    agent = research_app(tmp_path).options.agent
    text = agent.read_text().replace("  always_include:\n    - search_papers\n", "")
    agent.write_text(text.replace("similarity_threshold: 0.5", "similarity_threshold: 0.0"))
    _with_cases(tmp_path)
    mcp_json = tmp_path / ".mcp.json"
    entry = ["serve", str(agent), "--method", "bm25", "--top-k", "5"]
    mcp_json.write_text(json.dumps({"mcpServers": {"holo-tune": {"command": "x", "args": entry}}}))
    app = runtime_app(agent, runtime="serve")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "ctrl+s")
        await settle(pilot)
        await app.workers.wait_for_complete()
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ConfigWriteScreen) and screen.worse is None
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is not screen
    assert "--settings" in json.loads(mcp_json.read_text())["mcpServers"]["holo-tune"]["args"]
