"""The token bill: all tools against what the current selection sends, per server too, with the
encoding named and whether the count is exact for the model or an estimate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from workbench.tui.view import ServerTokens, bar, saved


@dataclass(frozen=True)
class TokenBill:
    all: int
    sent: int
    encoding: str
    exact: bool
    tools: int
    chosen: int
    servers: Sequence[ServerTokens] = field(default_factory=tuple)
    filtering: bool = True


def bill_text(bill: TokenBill, width: int, max_servers: int = 6) -> Text:
    """The bars as text for a panel ``width`` cells wide, the servers sending most first (pure:
    unit-tested)."""
    bar_width = max(width - 15, 4)
    text = Text()
    text.append("all  ", style="bold")
    text.append(bar(1.0, bar_width), style="red")
    text.append(f" {bill.all:>7,}\n")
    text.append("sent ", style="bold")
    fraction = bill.sent / bill.all if bill.all else 0.0
    text.append(bar(fraction, bar_width), style="green")
    text.append(f" {bill.sent:>7,}\n")
    pct = saved(bill.all, bill.sent)
    text.append(f"{bill.chosen}/{bill.tools} tools · ", style="dim")
    text.append(f"-{pct:.0%} tokens", style="bold green" if pct > 0 else "bold")
    text.append("\n")
    text.append(bill.encoding)
    text.append(" exact" if bill.exact else " estimate", style="dim" if bill.exact else "yellow")
    if not bill.filtering:
        text.append(" · filtering off", style="yellow")
    name_width = max(width - 18, 6)
    shown = sorted(bill.servers, key=lambda r: (-r.sent, -r.all))
    for row in shown[:max_servers]:
        text.append("\n")
        name = row.server if len(row.server) <= name_width else row.server[: name_width - 1] + "…"
        text.append(f"{name:<{name_width}}", style="dim")
        text.append(f"{row.sent:>7,}", style="green" if row.sent else "dim")
        text.append(f"/{row.all:<7,}", style="dim")
    if len(shown) > max_servers:
        text.append(f"\n+{len(shown) - max_servers} more servers", style="dim")
    return text


class TokenBars(Widget):
    """Draws a :class:`TokenBill`. Only a change in its line count costs a layout pass."""

    BORDER_TITLE = "TOKENS"
    bill: reactive[TokenBill | None] = reactive(None)

    def watch_bill(self, bill: TokenBill | None) -> None:
        lines = 1 if bill is None else 4 + min(len(bill.servers), 6) + (len(bill.servers) > 6)
        height = lines + 2  # the border
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height

    def render(self) -> Text:
        if self.bill is None:
            return Text("counting…", style="dim")
        text = bill_text(self.bill, self.content_size.width)
        text.no_wrap, text.overflow = True, "ellipsis"
        return text
