"""The holo-tune dashboard app: opens the agent, then shows the dashboard or the error screen.

Quitting (``ctrl+q``, or ``q`` outside the query) is immediate unless knobs differ from the file
(they are marked ``*``): then a small dialog asks first (write back, discard and quit, cancel).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from textual.app import App
from textual.screen import Screen

from workbench.config import load_agent
from workbench.config.servers import as_fronted
from workbench.errors import EXIT_INTERNAL, InputError
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.error import ErrorScreen
from workbench.tui.screens.quit import QuitChoice, QuitScreen
from workbench.workspace import preflight


class HoloTuneApp(App[None]):
    """``holo-tune AGENT.yaml``. ``return_code`` is 2 when the config did not load."""

    CSS_PATH = "app.tcss"
    TITLE = "holo-tune"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, options: Options) -> None:
        super().__init__()
        self.options = options
        self.load_error: InputError | None = None
        #: An unexpected exception (a bug) that stopped the app while it ran; the CLI reports it
        #: as one line, exit code 3.
        self.crashed: Exception | None = None

    def get_default_screen(self) -> Screen[None]:
        """The config is read here (small, local), and the files and flags the workspace will
        need are checked (``preflight``): the first frame is the dashboard or the error, never
        a blank screen nor a dashboard that cannot open. An unexpected exception shows as an
        internal error (one line, ``q`` exits 3) unless ``--debug`` asks for the traceback."""
        options = self.options
        try:
            agent = load_agent(options.agent, environ=options.environ, missing_env="warn")
            agent, _ = as_fronted(agent)  # an agent that runs serve: the servers it fronts
            preflight(
                agent,
                catalog_file=options.catalog,
                usage_file=options.usage,
                embedder_spec=options.embedder,
                environ=options.environ,
            )
        except InputError as err:
            self.load_error = err
            return ErrorScreen(err, agent=options.agent)
        except Exception as err:
            if self.options.debug:
                raise
            return ErrorScreen(err)
        return DashboardScreen(agent, self.options)

    def _handle_exception(self, error: Exception) -> None:
        """Textual's hook for an unhandled exception (the app ends). Without ``--debug`` its
        traceback is not printed: the CLI prints one line instead and exits 3."""
        self.crashed = error
        super()._handle_exception(error)
        if not self.options.debug:
            self._exit_renderables.clear()
            self._return_code = EXIT_INTERNAL

    def _dashboard(self) -> DashboardScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, DashboardScreen)), None)

    async def action_quit(self) -> None:
        """Quit, asking first when the knobs hold changes the file does not have."""
        dashboard = self._dashboard()
        changed = dashboard.changed_knobs() if dashboard is not None else []
        if dashboard is None or not changed:
            self.exit()
            return
        if isinstance(self.screen, QuitScreen):  # already asking
            return
        file = Path(dashboard.agent.path).name
        dialog = QuitScreen(file, changed, write_off=dashboard.write_off())
        self.push_screen(dialog, partial(self._quit_chosen, dashboard))

    def _quit_chosen(self, dashboard: DashboardScreen, choice: QuitChoice | None) -> None:
        if choice == "discard":
            self.exit()
        elif choice == "write":
            dashboard.write_back(then_quit=True)
