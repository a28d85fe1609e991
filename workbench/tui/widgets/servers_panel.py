"""Every tool source and how its listing went: a spinner while connecting, the tool count and
tokens when ok, the error when it failed, "not in the snapshot" for an entry ``--catalog`` lacks.
``l`` opens the server's log, ``r`` reconnects it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.timer import Timer
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from workbench.catalog import ServerStatus
from workbench.tui.view import compact

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def server_line(status: ServerStatus, tokens: int | None, frame: int = 0) -> Text:
    """One server as a line of the panel (pure: unit-tested)."""
    text = Text()
    if status.state in ("pending", "connecting"):
        text.append(SPINNER[frame % len(SPINNER)] + " ", style="yellow")
        text.append(status.name)
        text.append(f"  {status.state}…", style="dim")
        return text
    if status.state == "error":
        text.append("✗ ", style="bold red")
        text.append(status.name, style="red")
        text.append(f"  {status.error or 'failed'}", style="dim red")
        return text
    if status.state == "absent":
        text.append("○ ", style="dim")
        text.append(status.name, style="dim")
        text.append(f"  {status.error}", style="dim")
        return text
    mark = {"ok": "●", "snapshot": "◆", "local": "■"}.get(status.state, "●")
    text.append(f"{mark} ", style="green")
    text.append(status.name)
    text.append(f"  {status.tools}", style="bold")
    if tokens is not None:
        text.append(f" · {compact(tokens)}", style="dim")
    return text


class ServersPanel(OptionList):
    """The servers as a list; the highlighted one is the target of ``l`` and ``r``."""

    BORDER_TITLE = "SERVERS"
    BORDER_SUBTITLE = "● live ◆ snapshot"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "log", "log", tooltip="Show the highlighted server's log", id="server-log"),
        Binding(
            "r",
            "reconnect",
            "reconnect",
            tooltip="List the server's tools again",
            id="server-reconnect",
        ),
    ]

    @dataclass
    class ShowLog(Message):
        status: ServerStatus

    @dataclass
    class Reconnect(Message):
        status: ServerStatus

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._statuses: dict[str, ServerStatus] = {}
        self._tokens: Mapping[str, int] = {}
        self._frame = 0
        self._timer: Timer | None = None

    @property
    def statuses(self) -> list[ServerStatus]:
        return list(self._statuses.values())

    def on_mount(self) -> None:
        self._timer = self.set_interval(0.1, self._spin, pause=True)

    def set_servers(self, statuses: list[ServerStatus], tokens: Mapping[str, int]) -> None:
        """Replace every line (the catalog arrived)."""
        self._statuses = {s.name: s for s in statuses}
        self._tokens = tokens
        self._redraw()

    def _busy(self) -> bool:
        return any(s.state in ("pending", "connecting") for s in self._statuses.values())

    def _redraw(self) -> None:
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(
            Option(server_line(s, self._tokens.get(s.name), self._frame), id=s.name)
            for s in self._statuses.values()
        )
        if self.option_count:
            self.highlighted = min(highlighted or 0, self.option_count - 1)
        if self._timer is not None:
            if self._busy():
                self._timer.resume()
            else:
                self._timer.pause()

    def _spin(self) -> None:
        self._frame += 1
        for i, s in enumerate(self._statuses.values()):
            if s.state in ("pending", "connecting"):
                self.replace_option_prompt_at_index(i, server_line(s, None, self._frame))

    def current(self) -> ServerStatus | None:
        """The highlighted server (the target of ``l`` and ``r``)."""
        if self.highlighted is None:
            return None
        option = self.get_option_at_index(self.highlighted)
        return self._statuses.get(option.id or "")

    def action_log(self) -> None:
        status = self.current()
        if status is None:
            self.notify("No server is listed yet.", title="server log")
        else:
            self.post_message(self.ShowLog(status))

    def action_reconnect(self) -> None:
        status = self.current()
        if status is None:
            self.notify("No server is listed yet.", title="reconnect")
        else:
            self.post_message(self.Reconnect(status))
