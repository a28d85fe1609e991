"""Write a runtime's own configuration: the write-back dialog (what is proposed, warnings, the
diff, an atomic write with a backup) on the core's plan
(:class:`~workbench.runtimes.base.ConfigWrite`) instead of the ``tool_filtering`` block:
HoloDeck 0.7's allowlists, Claude Code's ``.mcp.json``, Argus's ``config.yaml``, PizzaPi's
``config.json``, the FastMCP proxy, serve's entry. The runtime says what it writes; nothing here
knows which runtime it is."""

from __future__ import annotations

from pathlib import Path

from workbench.config.filtering import ToolFiltering
from workbench.runtimes.base import ConfigWrite
from workbench.tui.screens.writeback import WriteBackScreen


class ConfigWriteScreen(WriteBackScreen):
    """The write-back dialog for ``plan``. ``original``: the file as the app read it, when the
    plan writes the agent file (a changed file then offers Reload). A plan measured worse than
    what the runtime runs now (:attr:`ConfigWrite.worse`) is written on a second ``y`` only."""

    TITLE = "Write {what} to {name}?"

    def __init__(self, plan: ConfigWrite, *, original: bytes | None = None) -> None:
        super().__init__(plan.path, ToolFiltering(), original=original, worse=plan.worse)
        self.config = plan
        self.WHAT = plan.what

    def make_plan(self) -> ConfigWrite:
        return self.config

    def notes(self) -> list[str]:
        return list(self.config.summary)

    def write(self, plan: ConfigWrite) -> Path | None:
        return plan.write()
