"""The dashboard by runtime: the header names it and why; the knobs say when the runtime does not
read them; Write refuses a tool_filtering block on HoloDeck 0.7 (the file stays byte-identical)
and offers the 0.7 allowlists; a deferred runtime shows its configuration instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import yaml
from textual.widgets import Button
from tui_helpers import (
    ENV,
    SAMPLES,
    buttons_shown,
    research_app,
    runtime_app,
    seven_agent,
    shown,
)

from workbench.catalog.enumerate import load_catalog
from workbench.config import load_agent
from workbench.evaluate.allowlist import current_exposed, surface
from workbench.tui.screens.config_write import ConfigWriteScreen
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.writeback import WriteBackScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.header_bar import HeaderBar

SIZE = (120, 36)
CATALOG = SAMPLES / "research-agent.catalog.json"


async def test_a_07_agent_names_its_runtime_and_refuses_the_block(tmp_path: Path) -> None:
    agent = seven_agent(tmp_path)
    before = agent.read_bytes()
    app = runtime_app(agent)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        header = shown(app.screen.query_one(HeaderBar))
        assert "holodeck-0.7 (openai: block in the YAML)" in header
        knobs = shown(app.screen.query_one("#knob-note"))
        assert "holodeck-0.7 does not read" in knobs
        await pilot.press("right_square_bracket", "ctrl+s")  # a knob moved, then Write
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, WriteBackScreen)
        error = shown(dialog.query_one("#writeback-error"))
        assert "refused: the runtime is holodeck-0.7" in error
        assert "tune --runtime holodeck-0.7 --apply" in error.replace("\n", " ")
        # Before: a disabled "Write (y)" button beside the refusal (it wrote nothing).
        buttons = buttons_shown(dialog)
        assert "Write (y)" not in buttons and "Write 0.7 allowlists (a)" in buttons
        assert not dialog.check_action("confirm", ())
        await pilot.press("y")  # nothing happens: nothing can be written
        await settle(pilot)
        assert app.screen is dialog
        await pilot.press("escape")
        await settle(pilot)
    assert agent.read_bytes() == before


async def test_the_07_dialog_writes_allowlists_that_hold_the_knobs_budget(tmp_path: Path) -> None:
    agent = seven_agent(tmp_path)
    app = runtime_app(agent)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "e", "ctrl+s")  # filtering on: top_k 5 per request
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfigWriteScreen)
        notes = shown(dialog.query_one("#writeback-warnings"))
        assert "chosen by the allowlist tuner on" in notes
        assert "allowed_tools" in shown(dialog.query_one("#writeback-diff"))
        # within top_k 5's tokens the allowlists lose recall against every tool exposed now
        # (the verdict, on the labelled cases): the first y asks again, the second writes
        assert dialog.config.worse is not None
        assert "measured worse than the file's setting" in notes
        await pilot.press("y")
        await settle(pilot)
        assert app.screen is dialog
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(app.screen, WriteBackScreen)
    data = yaml.safe_load(agent.read_text())
    assert "tool_filtering" not in data  # still a file HoloDeck 0.7 loads
    lists = {t["name"]: t.get("config", {}).get("allowed_tools") for t in data["tools"]}
    assert lists["brave_search"] or lists["memory"]
    # What the file now exposes, read as HoloDeck 0.7 reads it, is fewer tools than before.
    loaded = load_agent(agent, environ=ENV, missing_env="warn")
    catalog = await asyncio.to_thread(load_catalog, loaded, catalog_file=CATALOG)
    exposed = current_exposed(loaded, catalog, surface(loaded, catalog))
    assert 0 < exposed.sum() < len(catalog)


async def test_a_deferred_runtime_shows_its_configuration_instead(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    agent = app.options.agent
    before = agent.read_bytes()
    app = runtime_app(agent, runtime="anthropic")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "anthropic (--runtime)" in shown(app.screen.query_one(HeaderBar))
        assert "anthropic does not read" in shown(app.screen.query_one("#knob-note"))
        await pilot.press("tab", "right_square_bracket", "ctrl+s")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        assert "refused: the runtime is anthropic" in shown(screen.query_one("#export-notes"))
        tools = json.loads(screen.block)
        assert tools[0]["type"].startswith("tool_search_tool")
        assert sum(1 for t in tools if t.get("defer_loading")) >= 1
    assert agent.read_bytes() == before


async def test_a_06_agent_writes_the_block_as_before(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "holodeck-0.6 (tool_filtering block in the YAML)" in shown(
            app.screen.query_one(HeaderBar)
        )
        assert not app.screen.query_one("#knob-note").display
        await pilot.press("tab", "right_square_bracket", "ctrl+s")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, WriteBackScreen)
        assert not dialog.query_one("#writeback-write", Button).disabled
        assert "top_k: 6" in shown(dialog.query_one("#writeback-diff"))
