"""The clean error screen for a config that does not load: file, line, field and cause, no
traceback. ``q`` quits with exit code 2 (bad input), like the CLI. An unexpected exception (a bug)
shows as the CLI shows it, one ``internal error`` line, and ``q`` quits with exit code 3."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from workbench.errors import EXIT_INTERNAL, InputError, internal_error_line

EXIT_BAD_INPUT = 2


def error_text(err: Exception) -> Text:
    """The error as labelled lines (pure: unit-tested)."""
    text = Text()
    if not isinstance(err, InputError):
        text.append(f"{'cause':>6}  ", style="bold")
        text.append(f"{internal_error_line(err)}\n", style="red")
        return text
    rows = [
        ("file", err.file),
        ("line", None if err.line is None else str(err.line)),
        ("field", err.field),
        ("cause", err.message),
    ]
    for label, value in rows:
        if value is None:
            continue
        text.append(f"{label:>6}  ", style="bold")
        text.append(f"{value}\n", style="red" if label == "cause" else "")
    return text


class ErrorScreen(Screen[None]):
    """Shows why the agent could not be opened."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape", "quit_bad_input", "quit", tooltip="Quit (exit code 2)", id="quit"),
    ]

    def __init__(self, err: Exception, agent: Path | None = None) -> None:
        super().__init__(id="error-screen")
        self.err = err
        self.internal = not isinstance(err, InputError)
        #: The agent file: an error elsewhere (a catalog, a flag) is said as such.
        self.agent = agent

    def _what(self) -> tuple[str, str]:
        """The title and the hint: the agent's config, another file, or an option."""
        file = getattr(self.err, "file", None)
        if file is None and self.agent is not None:
            return "An option does not work", "Fix the option and run holo-tune again. q quits."
        if file is not None and self.agent is not None and Path(file) != Path(self.agent):
            return f"{Path(file).name} does not load", "Fix it and run holo-tune again. q quits."
        return "The agent config does not load", "Fix the file and run holo-tune again. q quits."

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            if self.internal:
                yield Static("holo-tune hit an internal error", id="error-title")
                yield Static(error_text(self.err), id="error-detail")
                yield Static(
                    "This is a bug in holo-tune, not in your file. q quits.", id="error-hint"
                )
            else:
                title, hint = self._what()
                yield Static(title, id="error-title")
                yield Static(error_text(self.err), id="error-detail")
                yield Static(Text(str(self.err), style="dim"), id="error-line")
                yield Static(hint, id="error-hint")
        yield Footer()

    def action_quit_bad_input(self) -> None:
        self.app.exit(return_code=EXIT_INTERNAL if self.internal else EXIT_BAD_INPUT)
