"""The write-back flow: the block shown (export), the diff and the write (the write-back dialog,
which calls the core), and the file read again afterwards so the knobs compare with what it
holds now. When the file changed on disk the dialog asks to reload it: it is read again (the
knobs keep their values) and the dialog opens anew on it.

By runtime (``state.runtime``): HoloDeck 0.6 writes the block. HoloDeck 0.7 refuses it (the
core's :func:`~workbench.runtimes.detect.check_writable` line, Write disabled, the file untouched)
and offers what the runtime writes instead (its ``write_offer``: the allowlists). A deferred-loading
runtime reads no agent.yaml: export shows its configuration, as ``holo-tune export --runtime R``
prints it (the tools the knobs' always_include names stay loaded), and write writes it where the
runtime has a configuration file (``config_file``), diff first
(:mod:`~workbench.tui.dashboard.runtime_write`); else write shows the export."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.screen import Screen

from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.servers import as_fronted
from workbench.config.writeback.render import render_block_text
from workbench.errors import HoloTuneError, InputError
from workbench.evaluate.runs import setting_verdict
from workbench.runtimes.detect import check_writable
from workbench.search.selection import always_included
from workbench.tui.dashboard.runtime import instead
from workbench.tui.dashboard.runtime_write import RuntimeWrite
from workbench.tui.dashboard.state import LabState
from workbench.tui.options import Options
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.writeback import ALTERNATIVE, RELOAD, Refusal, Result, WriteBackScreen


class WriteBack:
    """Writes the knobs' setting into the agent's file, from ``host``."""

    def __init__(self, host: Screen[None], state: LabState, options: Options) -> None:
        self.host = host
        self.state = state
        self.options = options
        self.runtime_write = RuntimeWrite(host, state, options, self.reload, self.export_deferred)

    def export(self) -> None:
        """The block the knobs hold, to read and copy (a deferred runtime's configuration)."""
        if self.state.runtime.deferred:
            self.export_deferred()
            return
        self.host.app.push_screen(ExportScreen(render_block_text(self.state.setting)))

    def export_deferred(self, refusal: str | None = None) -> None:
        """The deferred runtime's configuration for the catalog, ``refusal`` said above it."""
        runtime, lab = self.state.runtime, self.state.lab
        if lab is None:
            self.host.notify("The catalog is still loading.", title=f"export {runtime.name}")
            return
        ws = lab.workspace
        found = always_included(ws.catalog, self.state.setting.always_include)
        kept = {ws.catalog.tools[i].full_name for i in found}
        try:
            config = runtime.plugin.tool_config(ws.agent, ws.catalog, kept)
        except HoloTuneError as err:
            self.host.notify(str(err), title=f"export {runtime.name}", severity="error")
            return
        if config is None:
            return
        notes = [*([refusal] if refusal else []), *config.warnings, *config.advice]
        title = f"{runtime.name} configuration (copied to the clipboard)"
        self.host.app.push_screen(ExportScreen(config.text, title=title, notes=notes))

    def start(self, *, then_quit: bool = False) -> None:
        """The write-back dialog (diff first); with ``then_quit`` the app quits once written.
        A runtime that does not read the block gets its refusal instead."""
        agent, runtime = self.state.agent, self.state.runtime
        why = check_writable(runtime, "tool_filtering")
        if why is not None and runtime.deferred:
            if runtime.plugin.config_file is not None:
                self.runtime_write.start(refusal=why)
            else:
                self.export_deferred(refusal=why)
            return
        refusal = None
        if why is not None:
            offer = runtime.plugin.write_offer
            refusal = Refusal(why, instead(runtime, Path(agent.path).name), offer)
        screen = WriteBackScreen(
            Path(agent.path),
            self.state.setting,
            original=agent.raw,
            current=agent.filtering,
            refusal=refusal,
            worse=None if refusal is not None else self.worse(),
        )
        self.host.app.push_screen(screen, partial(self._written, then_quit=then_quit))

    def worse(self) -> str | None:
        """Why the knobs' setting is measured worse than the file's on the labelled cases (the
        core's :func:`~workbench.evaluate.runs.setting_verdict`, as ``apply --cases`` reads it),
        or None: not worse, or no cases read yet."""
        advice, lab = self.state.advice, self.state.lab
        cases = None if advice is None else advice.cases
        if lab is None or cases is None or not len(cases):
            return None
        ws = lab.workspace
        current = self.state.agent.filtering or ToolFiltering()
        verdict = setting_verdict(
            ws.engine, ws.catalog, ws.tokens, cases, self.state.setting, current
        )
        return verdict.worse_text() if verdict.worse else None

    def _written(self, result: Result, *, then_quit: bool = False) -> None:
        if result == RELOAD:  # the file changed on disk: read it again, diff again
            if self.reload():
                self.start(then_quit=then_quit)
            return
        if result == ALTERNATIVE:
            self.runtime_write.start()
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
            agent, _ = as_fronted(agent)
        except InputError as err:
            self.host.notify(str(err), title="reload", severity="error")
            return False
        self.state.reload(agent)
        return True
