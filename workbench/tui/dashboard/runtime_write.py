"""The dashboard's Write for a runtime that reads its own configuration instead of the
``tool_filtering`` block: the runtime plans it
(:meth:`~workbench.runtimes.base.Runtime.dashboard_write`, the same plan ``tune --apply``
writes) in a worker, since a plan may run the labelled cases
(HoloDeck 0.7's allowlists), and the write-back dialog shows it (what is proposed, warnings, the
diff) and writes it (atomic, a backup). Nothing here knows which runtime it is."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from textual.screen import Screen

from workbench.errors import HoloTuneError
from workbench.runtimes.base import ConfigWrite, WriteRequest
from workbench.tui.dashboard.runtime import tune_command
from workbench.tui.dashboard.state import LabState
from workbench.tui.options import Options
from workbench.tui.screens.config_write import ConfigWriteScreen
from workbench.tui.screens.writeback import ALTERNATIVE, RELOAD, Result


class RuntimeWrite:
    """Plans the runtime's configuration from ``host`` and opens the dialog that writes it;
    ``export`` shows the configuration instead when the runtime has nothing to write."""

    def __init__(
        self,
        host: Screen[None],
        state: LabState,
        options: Options,
        reload: Callable[[], bool],
        export: Callable[[str | None], None],
    ) -> None:
        self.host = host
        self.state = state
        self.options = options
        #: Reads the file again (the write-back's), True when it still loads.
        self.reload = reload
        #: Shows the runtime's configuration, a refusal said above it.
        self.export = export

    @property
    def title(self) -> str:
        return f"write {self.state.runtime.name}"

    def start(self, refusal: str | None = None) -> None:
        lab = self.state.lab
        if lab is None:
            self.host.notify("The catalog is still loading.", title=self.title)
            return
        self.host.notify("Planning the write…", title=self.title, timeout=3)
        request = WriteRequest(lab.workspace, self.state.setting, self.options.cases, lab.usage)
        self.host.run_worker(
            self._plan(request, refusal),
            name="runtime-write",
            group="runtime-write",
            exclusive=True,
            exit_on_error=False,
        )

    async def _plan(self, request: WriteRequest, refusal: str | None) -> None:
        plugin = self.state.runtime.plugin
        plan: ConfigWrite | str | None
        try:
            plan = await asyncio.to_thread(plugin.dashboard_write, request)
        except HoloTuneError as err:
            plan = str(err)
        agent = self.state.agent
        if plan is None:
            self.export(refusal)
            return
        if isinstance(plan, str):
            command = tune_command(self.state.runtime, Path(agent.path).name)
            self.host.notify(
                f"{plan}: label queries, or run `{command}`", title=self.title, timeout=10
            )
            return
        same = Path(plan.path).resolve() == Path(agent.path).resolve()
        screen = ConfigWriteScreen(plan, original=agent.raw if same else None)
        self.host.app.push_screen(screen, self._written)

    def _written(self, result: Result) -> None:
        if result == RELOAD:  # the file changed on disk: read it again, plan again
            if self.reload():
                self.start()
            return
        if result is None or result == ALTERNATIVE:
            self.host.notify("Nothing written.", title=self.title)
            return
        self.host.notify(f"Written. Backup: {result}", title=self.title)
        self.reload()
