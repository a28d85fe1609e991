"""The holo-tune dashboard app: opens the agent, then shows the dashboard or the error screen."""

from __future__ import annotations

from textual.app import App
from textual.screen import Screen

from workbench.config import load_agent
from workbench.errors import InputError
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.error import ErrorScreen


class HoloTuneApp(App[None]):
    """``holo-tune AGENT.yaml``. ``return_code`` is 2 when the config did not load."""

    CSS_PATH = "app.tcss"
    TITLE = "holo-tune"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, options: Options) -> None:
        super().__init__()
        self.options = options
        self.load_error: InputError | None = None

    def get_default_screen(self) -> Screen[None]:
        """The config is read here (small, local): the first frame is the dashboard or the
        error, never a blank screen."""
        try:
            agent = load_agent(self.options.agent, environ=self.options.environ, missing_env="warn")
        except InputError as err:
            self.load_error = err
            return ErrorScreen(err)
        return DashboardScreen(agent, self.options)
