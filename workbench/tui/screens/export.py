"""Export: the tool_filtering block as YAML text (rendered by the core), or a deferred-loading
runtime's configuration (JSON, with what to know beside it), shown and copied to the
clipboard."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class ExportScreen(ModalScreen[None]):
    """The block, already on the clipboard when this opens."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,enter", "dismiss", "close", id="close-export")
    ]

    def __init__(
        self,
        block: str,
        *,
        title: str = "tool_filtering (copied to the clipboard)",
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.block = block
        self.title_text = title
        self.notes = list(notes)

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Static(self.title_text, id="export-title")
            if self.notes:
                yield Static(Text("\n".join(self.notes), style="yellow"), id="export-notes")
            lexer = "json" if self.block.lstrip().startswith(("{", "[")) else "yaml"
            with VerticalScroll(id="export-scroll"):
                yield Static(Syntax(self.block, lexer, theme="ansi_dark"), id="export-block")
            yield Static("esc closes", id="export-hint")

    def on_mount(self) -> None:
        self.app.copy_to_clipboard(self.block)
