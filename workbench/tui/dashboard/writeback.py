"""The write-back flow: the block shown (export), the diff and the write (the write-back dialog,
which calls the core), and the file read again afterwards so the knobs compare with what it
holds now. When the file changed on disk the dialog asks to reload it: it is read again (the
knobs keep their values) and the dialog opens anew on it."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Literal

from textual.screen import Screen

from workbench.config import load_agent
from workbench.config.writeback_render import render_block_text
from workbench.errors import InputError
from workbench.tui.dashboard.state import LabState
from workbench.tui.options import Options
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.writeback import RELOAD, WriteBackScreen


class WriteBack:
    """Writes the knobs' setting into the agent's file, from ``host``."""

    def __init__(self, host: Screen[None], state: LabState, options: Options) -> None:
        self.host = host
        self.state = state
        self.options = options

    def export(self) -> None:
        """The block the knobs hold, to read and copy."""
        self.host.app.push_screen(ExportScreen(render_block_text(self.state.setting)))

    def start(self, *, then_quit: bool = False) -> None:
        """The write-back dialog (diff first); with ``then_quit`` the app quits once written."""
        agent = self.state.agent
        screen = WriteBackScreen(
            Path(agent.path), self.state.setting, original=agent.raw, current=agent.filtering
        )
        self.host.app.push_screen(screen, partial(self._written, then_quit=then_quit))

    def _written(self, result: Path | Literal["reload"] | None, *, then_quit: bool = False) -> None:
        if result == RELOAD:  # the file changed on disk: read it again, diff again
            if self.reload():
                self.start(then_quit=then_quit)
            return
        if result is None:
            self.host.notify("Nothing written.", title="write back")
            return
        self.host.notify(f"Written. Backup: {result}", title="write back")
        self.reload()
        if then_quit:
            self.host.app.exit()

    def reload(self) -> bool:
        """Read the file again (the core's loader): after a write it holds the knobs' values, so
        they are no longer marked as changed and a second write sees the new bytes. False when
        the file no longer loads (said in a notification)."""
        try:
            agent = load_agent(
                self.state.agent.path, environ=self.options.environ, missing_env="warn"
            )
        except InputError as err:
            self.host.notify(str(err), title="reload", severity="error")
            return False
        self.state.reload(agent)
        return True
