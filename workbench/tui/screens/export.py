"""Export: the tool_filtering block as YAML text (rendered by the core), shown and copied to
the clipboard."""

from __future__ import annotations

from typing import ClassVar

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ExportScreen(ModalScreen[None]):
    """The block, already on the clipboard when this opens."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "dismiss", "close", id="close-export")
    ]

    def __init__(self, block: str) -> None:
        super().__init__()
        self.block = block

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static("tool_filtering (copied to the clipboard)", id="export-title")
            yield Static(Syntax(self.block, "yaml", theme="ansi_dark"), id="export-block")
            yield Static("esc closes", id="export-hint")

    def on_mount(self) -> None:
        self.app.copy_to_clipboard(self.block)
