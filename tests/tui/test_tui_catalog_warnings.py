"""The dashboard under ``--catalog`` starts no server: it says nothing of a key only the servers
read (the sample agent's BRAVE_API_KEY), as the commands do."""

from __future__ import annotations

import shutil
from pathlib import Path

from tui_helpers import SAMPLES

from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screenshots import settle


async def test_no_warning_of_a_servers_key_when_no_server_starts(tmp_path: Path) -> None:
    agent = tmp_path / "research-agent.yaml"
    shutil.copyfile(SAMPLES / "research-agent.yaml", agent)
    shutil.copytree(SAMPLES / "data", tmp_path / "data")
    options = Options(
        agent=agent,
        catalog=SAMPLES / "research-agent.catalog.json",
        embedder="none",
        environ={"HOME": "/nonexistent-holo-tune-home"},  # no BRAVE_API_KEY
        show_timing=False,
    )
    app = HoloTuneApp(options)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert "holo-tune-unset-BRAVE_API_KEY" in str(app.screen.state.agent.data)  # type: ignore[attr-defined]
        messages = [n.message for n in app._notifications]
        assert not [m for m in messages if "BRAVE_API_KEY" in m], messages
