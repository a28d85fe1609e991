"""The top line: agent · model · runtime (why) · encoding (exact|estimate) · embedder ·
N/M servers ok · T tools."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class HeaderInfo:
    agent: str
    model: str
    encoding: str | None = None
    exact: bool = True
    servers_ok: int = 0
    servers: int = 0
    tools: int | None = None
    embedder: str | None = None
    #: What runs the agent and why, short (``NAME (why)``).
    runtime: str | None = None
    #: The runtime does not read the tool_filtering block (drawn as a warning).
    runtime_elsewhere: bool = False


def header_parts(info: HeaderInfo) -> tuple[Text, Text]:
    """The left and right halves of the header (a pure function, unit-tested)."""
    left = Text()
    left.append(" holo-tune ", style="bold reverse")
    left.append(f" {info.agent}", style="bold")
    left.append(f" · {info.model}")
    if info.runtime:
        left.append(" · ")
        left.append(info.runtime, style="bold yellow" if info.runtime_elsewhere else "")
    if info.encoding:
        left.append(f" · {info.encoding} ")
        left.append("(exact)" if info.exact else "(estimate)", style="" if info.exact else "yellow")
    if info.embedder:
        left.append(f" · scores: {info.embedder}", style="dim")
    right = Text()
    style = "green" if info.servers_ok == info.servers else "yellow"
    if not info.servers:
        style = "dim"
    right.append(f"{info.servers_ok}/{info.servers} servers ok", style=style)
    tools = "…" if info.tools is None else f"{info.tools:,}"
    right.append(f" · {tools} tools ")
    return left, right


class HeaderBar(Widget):
    """One line describing the opened agent; the server count sits at the right edge."""

    DEFAULT_CSS = "HeaderBar { height: 1; }"

    info: reactive[HeaderInfo | None] = reactive(None)

    def show(self, info: HeaderInfo) -> None:
        self.info = info

    def render(self) -> Text:
        if self.info is None:
            return Text(" holo-tune", style="bold")
        left, right = header_parts(self.info)
        gap = self.size.width - left.cell_len - right.cell_len
        if gap < 1:
            left.truncate(max(self.size.width - right.cell_len - 1, 0), overflow="ellipsis")
            gap = 1
        return Text.assemble(left, " " * gap, right)
