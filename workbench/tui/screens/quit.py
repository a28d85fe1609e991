"""Quitting with knobs changed against the file: write them back first, discard them, or stay.

Keyboard-driven: ``w`` writes back (the write-back dialog, diff first; the app quits once it is
written), ``d`` discards the changes and quits, ``esc`` (or ``c``) stays. Tab and Enter work on
the buttons too.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

#: What the user chose (``None``: stay).
QuitChoice = Literal["write", "discard"]


class QuitScreen(ModalScreen[QuitChoice | None]):
    """Asks before the knobs' changes are lost."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w,ctrl+s", "choose('write')", "write back", id="quit-write"),
        Binding("d", "choose('discard')", "discard and quit", id="quit-discard"),
        Binding("escape,c", "choose('')", "cancel", id="quit-cancel"),
    ]

    def __init__(self, file: str, changed: list[str]) -> None:
        super().__init__()
        self.file = file
        self.changed = changed

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box"):
            yield Static("Quit with unsaved knobs?", id="quit-title")
            yield Static(
                f"Changed against {self.file}: {', '.join(self.changed)}", id="quit-changed"
            )
            with Horizontal(id="quit-buttons"):
                yield Button("Write back (w)", variant="primary", id="quit-write-button")
                yield Button("Discard and quit (d)", variant="error", id="quit-discard-button")
                yield Button("Cancel (esc)", id="quit-cancel-button")

    def on_mount(self) -> None:
        self.query_one("#quit-write-button", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        choice = {"quit-write-button": "write", "quit-discard-button": "discard"}
        self.action_choose(choice.get(event.button.id or "", ""))

    def action_choose(self, choice: str) -> None:
        if choice == "write":
            self.dismiss("write")
        elif choice == "discard":
            self.dismiss("discard")
        else:
            self.dismiss(None)
