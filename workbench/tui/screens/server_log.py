"""A server's log (its stderr as the core captured it), shown on demand; long lines wrap."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import RichLog, Static

from workbench.catalog import ServerStatus

#: Only the end of a long log is shown.
TAIL_BYTES = 64_000


def log_tail(path: Path | None) -> str:
    """The last :data:`TAIL_BYTES` of the log, or a line saying why there is none."""
    if path is None:
        return "(no log: this source is not a process)"
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except OSError as err:
        return f"(cannot read {path}: {err.strerror})"
    return data.decode("utf-8", errors="replace") or "(the log is empty)"


class ServerLogScreen(ModalScreen[None]):
    """The server's status line and the tail of its log."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,l", "dismiss", "close", id="close-log")
    ]

    def __init__(self, status: ServerStatus) -> None:
        super().__init__()
        self.status = status

    def compose(self) -> ComposeResult:
        s = self.status
        with Vertical(id="log-box"):
            head = f"{s.name} · {s.transport} · {s.state}"
            if s.seconds is not None:
                head += f" · {s.seconds:.2f}s"
            yield Static(head, id="log-title")
            if s.error:
                yield Static(s.error, id="log-error")
            # Long lines wrap (a stack trace's paths, a JSON error): nothing is cut at the edge.
            yield RichLog(id="log-body", wrap=True, highlight=True, markup=False)

    def on_mount(self) -> None:
        self.query_one(RichLog).write(log_tail(self.status.log_path))
