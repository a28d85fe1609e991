"""An unexpected exception (a bug) in the TUI: one line and exit code 3, as at the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import EXIT_INTERNAL
from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screens.error import ErrorScreen

SAMPLE = Path(__file__).resolve().parents[2] / "sample_configs" / "research-agent.yaml"
SIZE = (120, 40)


def _boom(*_: object, **__: object) -> None:
    raise ZeroDivisionError("nobody foresaw this")


async def test_an_internal_error_at_start_shows_one_line_and_q_exits_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("workbench.tui.app.load_agent", _boom)
    app = HoloTuneApp(Options(agent=SAMPLE, environ={}))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        title = str(app.screen.query_one("#error-title").render())
        detail = str(app.screen.query_one("#error-detail").render())
        assert "internal error" in title
        assert (
            "internal error: ZeroDivisionError: nobody foresaw this; rerun with --debug for the "
            "traceback" in " ".join(detail.split())
        )
        assert "Traceback" not in detail
        await pilot.press("q")
    assert app.return_code == EXIT_INTERNAL


async def test_with_debug_the_exception_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("workbench.tui.app.load_agent", _boom)
    app = HoloTuneApp(Options(agent=SAMPLE, environ={}, debug=True))
    with pytest.raises(ZeroDivisionError):
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()


async def test_a_crash_while_running_ends_the_app_with_exit_3(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An exception in a handler ends the app; its traceback is not printed (the CLI prints one
    line for it), and the test framework still sees the exception."""
    app = HoloTuneApp(Options(agent=SAMPLE, environ={"BRAVE_API_KEY": "k"}))
    with pytest.raises(ZeroDivisionError):
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            app.call_later(_boom)
            await pilot.pause()
    assert isinstance(app.crashed, ZeroDivisionError)
    assert app.return_code == EXIT_INTERNAL
    assert not app._exit_renderables  # no traceback is printed on exit


def test_the_cli_reports_a_crash_as_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dashboard.run`` raises the app's crash again; the CLI makes it one line, exit 3."""
    from workbench import cli

    def crashed_run(self: HoloTuneApp) -> None:
        self.crashed = ZeroDivisionError("in a handler")

    monkeypatch.setattr(HoloTuneApp, "run", crashed_run)
    assert cli.main([str(SAMPLE)]) == EXIT_INTERNAL
    assert capsys.readouterr().err.splitlines() == [
        "holo-tune: internal error: ZeroDivisionError: in a handler; rerun with --debug for the "
        "traceback"
    ]
