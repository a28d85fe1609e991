"""Write HoloDeck 0.7's allowlists: the write-back dialog (diff, warnings, atomic write with a
backup) on the core's allowlist plan (``workbench.config.writeback.allowlist``) instead of the
``tool_filtering`` block. What is proposed, measured held-out, and the runtime's traps are shown
above the diff."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.allowlist import AllowlistPlan, Backend, plan_allowlists
from workbench.tui.screens.writeback import WriteBackScreen


class AllowlistWriteScreen(WriteBackScreen):
    """The write-back dialog for ``lists`` (server -> tools exposed) on ``backend``."""

    WHAT = "the allowlists"

    def __init__(
        self,
        path: Path,
        backend: Backend,
        lists: Mapping[str, Sequence[str]],
        *,
        every: Mapping[str, Sequence[str]],
        summary: Sequence[str] = (),
        original: bytes | None = None,
    ) -> None:
        super().__init__(path, ToolFiltering(), original=original)
        self.backend = backend
        self.lists = lists
        self.every = every
        self.summary = list(summary)

    def make_plan(self) -> AllowlistPlan:
        return plan_allowlists(
            self.path, self.backend, self.lists, every=self.every, original=self.original
        )

    def notes(self) -> list[str]:
        return self.summary
