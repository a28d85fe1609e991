"""The clean error screen for a config that does not load: file, line, field and cause, no
traceback. ``q`` quits with exit code 2 (bad input), like the CLI."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from workbench.errors import InputError

EXIT_BAD_INPUT = 2


def error_text(err: InputError) -> Text:
    """The error as labelled lines (pure: unit-tested)."""
    text = Text()
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

    def __init__(self, err: InputError) -> None:
        super().__init__(id="error-screen")
        self.err = err

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            yield Static("The agent config does not load", id="error-title")
            yield Static(error_text(self.err), id="error-detail")
            yield Static(Text(str(self.err), style="dim"), id="error-line")
            yield Static("Fix the file and run holo-tune again. q quits.", id="error-hint")
        yield Footer()

    def action_quit_bad_input(self) -> None:
        self.app.exit(return_code=EXIT_BAD_INPUT)
