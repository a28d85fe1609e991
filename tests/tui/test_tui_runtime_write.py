"""The dashboard's Write for every runtime that reads its own configuration file: ctrl+s plans the
file the runtime reads (the same plan ``tune --apply`` writes, for the knobs' setting), shows it
in the write-back dialog (what is proposed, the diff), writes it on ``y`` (a backup of the old
file) and leaves the agent untouched; ``esc`` writes nothing. The runtimes come from the
registry: no runtime has screen code of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.pilot import Pilot
from tui_helpers import research_app, runtime_app, shown

from workbench.runtimes.registry import all_runtimes
from workbench.tui.screens.config_write import ConfigWriteScreen
from workbench.tui.screenshots import settle

SIZE = (120, 36)
#: The runtimes whose Write writes a file of their own, as deferred runtimes (the 0.7 allowlists
#: are the refusal's alternative: tests/tui/test_tui_runtime.py).
WRITERS = [r.name for r in all_runtimes() if r.config_file is not None and r.searches]


def _agent(tmp_path: Path) -> Path:
    """The research agent with one MCP tool always included (memory's read_graph)."""
    agent = research_app(tmp_path).options.agent
    text = agent.read_text()
    agent.write_text(
        text.replace("    - search_papers\n", "    - search_papers\n    - read_graph\n")
    )
    return agent


async def _write(pilot: Pilot[Any], *before: str) -> None:
    """``before``'s keys, then ctrl+s, the plan's worker and the dialog."""
    await pilot.press(*before, "ctrl+s")
    await settle(pilot)
    await pilot.app.workers.wait_for_complete()
    await settle(pilot)


def test_every_search_tool_runtime_with_a_file_is_covered() -> None:
    assert {"claude-code", "argus", "pizzapi", "fastmcp", "serve"} <= set(WRITERS)


@pytest.mark.parametrize("name", WRITERS)
async def test_write_plans_shows_and_writes_the_runtimes_file(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIZZAPI_CONFIG", str(tmp_path / "pizzapi" / "config.json"))
    agent = _agent(tmp_path)
    before = agent.read_bytes()
    app = runtime_app(agent, runtime=name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _write(pilot, "tab")
        dialog = app.screen
        assert isinstance(dialog, ConfigWriteScreen), type(dialog)
        plan = dialog.config
        assert plan.changed and plan.diff.startswith("---")
        notes = shown(dialog.query_one("#writeback-warnings"))
        assert f"{name} reads" in notes and "memory" in notes
        assert "+" in shown(dialog.query_one("#writeback-diff"))
        assert not plan.path.exists()
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(app.screen, ConfigWriteScreen)
    written = plan.path.read_text()
    assert agent.read_bytes() == before  # the agent is not what these runtimes read
    assert "read_graph" in written or "memory" in written
    if plan.path.suffix == ".json":
        doc = json.loads(written)
        assert isinstance(doc, dict) and doc
    elif plan.path.suffix == ".yaml":
        assert "keep_tools" in yaml.safe_load(written)["optimizer"]


async def test_serves_write_is_its_settings_file_and_entry_with_a_backup(tmp_path: Path) -> None:
    """serve's Write speaks settings, as ``tune --runtime serve --apply`` writes them: the knobs'
    settings file beside the agent and the ``.mcp.json`` entry ``serve AGENT --settings FILE``
    (the other servers kept, a backup of the old file), one diff of both shown first; ``esc``
    writes nothing. The entry carries none of the old flags (``--top-k``, ``--method``)."""
    from workbench.runtimes.serve import SETTINGS_FILE
    from workbench.search.holo.settings import read_settings

    agent = _agent(tmp_path)
    mcp_json = tmp_path / ".mcp.json"
    mcp_json.write_text('{"mcpServers": {"github": {"command": "npx", "args": ["gh"]}}}\n')
    old = mcp_json.read_bytes()
    settings_file = tmp_path / SETTINGS_FILE
    app = runtime_app(agent, runtime="serve")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _write(pilot, "tab")
        assert isinstance(app.screen, ConfigWriteScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert mcp_json.read_bytes() == old and not settings_file.exists()
        await _write(pilot, "right_square_bracket")  # top_k 6
        dialog = app.screen
        assert isinstance(dialog, ConfigWriteScreen)
        diff = dialog.config.diff
        assert f"+++ {settings_file}" in diff and f"+++ {mcp_json}" in diff
        assert '"--settings"' in diff and "--top-k" not in diff
        assert "settings file" in shown(dialog.query_one("#writeback-warnings"))
        await pilot.press("y")
        await settle(pilot)
        assert not isinstance(app.screen, ConfigWriteScreen)
    doc = json.loads(mcp_json.read_text())
    assert set(doc["mcpServers"]) == {"github", "holo-tune"}
    args = doc["mcpServers"]["holo-tune"]["args"]
    assert args == ["serve", str(agent.resolve()), "--settings", str(settings_file.resolve())]
    settings = read_settings(settings_file)
    assert settings.top_k == 6  # the knobs' top_k
    assert settings.pins == ("memory-read_graph",)  # the MCP tool always_include names
    assert settings.threshold == 0.5  # the knobs' similarity_threshold
    assert settings.weights["dense"] == 0.0  # no embedder runs here: bm25
    assert (tmp_path / ".mcp.json.bak").read_bytes() == old
