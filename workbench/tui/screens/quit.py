"""Quitting with knobs changed against the file: write them back first, discard them, or stay.

Keyboard-driven: ``w`` writes back (the write-back dialog, diff first; the app quits once it is
written), ``d`` discards the changes and quits, ``esc`` (or ``c``) stays. Tab and Enter work on
the buttons too. A runtime that does not read the block gets no write-back: one line says why
and what instead, and ``w`` does nothing.
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

    def __init__(self, file: str, changed: list[str], *, write_off: str | None = None) -> None:
        """``write_off``: why nothing can be written back (None: the write-back is offered)."""
        super().__init__()
        self.file = file
        self.changed = changed
        self.write_off = write_off

    def compose(self) -> ComposeResult:
        with Vertical(id="quit-box"):
            yield Static("Quit with unsaved knobs?", id="quit-title")
            yield Static(
                f"Changed against {self.file}: {', '.join(self.changed)}", id="quit-changed"
            )
            if self.write_off is not None:
                yield Static(self.write_off, id="quit-note")
            with Horizontal(id="quit-buttons"):
                if self.write_off is None:
                    yield Button("Write back (w)", variant="primary", id="quit-write-button")
                yield Button("Discard and quit (d)", variant="error", id="quit-discard-button")
                yield Button("Cancel (esc)", id="quit-cancel-button")

    def on_mount(self) -> None:
        first = "#quit-write-button" if self.write_off is None else "#quit-cancel-button"
        self.query_one(first, Button).focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "choose" and parameters == ("write",) and self.write_off)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        choice = {"quit-write-button": "write", "quit-discard-button": "discard"}
        self.action_choose(choice.get(event.button.id or "", ""))

    def action_choose(self, choice: str) -> None:
        if choice == "write":
            if self.write_off is None:
                self.dismiss("write")
        elif choice == "discard":
            self.dismiss("discard")
        else:
            self.dismiss(None)
