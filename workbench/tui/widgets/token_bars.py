"""The token bill: all tools against what the current selection sends, per server too, with the
encoding named and whether the count is exact for the model or an estimate.

The per-server rows and the ``framing`` row add up to the totals: ``framing`` is the token
table's ``overhead``, the function-calling format's fixed cost (the cookbook's ``func_end``)
that a request pays once when it carries any tool.

The panel is as tall as its lines (``height: auto``) and no line wraps: a long line is cut with
an ellipsis, so a narrow panel never pushes a server row out of view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from workbench.tui.view import ServerTokens, bar, saved

#: Servers listed one per row; the rest share a ``+N more`` row.
MAX_SERVERS = 6


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
    #: The fixed tokens of a request that carries tools (``TokenTable.overhead``), in ``all``
    #: and, when any tool is sent, in ``sent``.
    overhead: int = 0


def bill_text(bill: TokenBill, width: int, max_servers: int = MAX_SERVERS) -> Text:
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
    text.append(f"{bill.chosen}/{bill.tools} tools", style="dim")
    if bill.filtering:
        text.append_text(_saving(bill))
    else:
        text.append(" · filtering off", style="yellow")
    text.append("\n")
    text.append(bill.encoding)
    text.append(" exact" if bill.exact else " estimate", style="dim" if bill.exact else "yellow")
    name_width = max(width - 18, 6)
    shown = sorted(bill.servers, key=lambda r: (-r.sent, -r.all))
    for row in shown[:max_servers]:
        text.append("\n")
        name = row.server if len(row.server) <= name_width else row.server[: name_width - 1] + "…"
        text.append(f"{name:<{name_width}}", style="dim")
        text.append(f"{row.sent:>7,}", style="green" if row.sent else "dim")
        text.append(f"/{row.all:<7,}", style="dim")
    if len(shown) > max_servers:
        rest = shown[max_servers:]
        text.append("\n")
        label = f"+{len(rest)} more"
        text.append(f"{label:<{name_width}}", style="dim")
        text.append(f"{sum(r.sent for r in rest):>7,}", style="dim")
        text.append(f"/{sum(r.all for r in rest):<7,}", style="dim")
    if bill.overhead:
        sent_overhead = bill.overhead if bill.chosen else 0
        text.append("\n")
        text.append(f"{'framing':<{name_width}}", style="dim italic")
        text.append(f"{sent_overhead:>7,}", style="dim")
        text.append(f"/{bill.overhead:<7,}", style="dim")
    return text


def _saving(bill: TokenBill) -> Text:
    """`` · -77% tokens`` when the selection sends less than every tool, else nothing (a
    whole-percent rounding to 0 says ``<1%``)."""
    pct = saved(bill.all, bill.sent)
    if pct <= 0:
        return Text()
    label = f"-{pct:.0%}" if round(pct * 100) >= 1 else "-<1%"
    return Text.assemble((" · ", "dim"), (f"{label} tokens", "bold green"))


def line_count(bill: TokenBill | None, max_servers: int = MAX_SERVERS) -> int:
    """How many lines :func:`bill_text` draws (no line wraps), without drawing it: the bill
    changes on every keystroke. Four lines, a row per server shown, ``+N more``, ``framing``."""
    if bill is None:
        return 1
    servers = len(bill.servers)
    return 4 + min(servers, max_servers) + (servers > max_servers) + (bill.overhead > 0)


class TokenBars(Widget):
    """Draws a :class:`TokenBill`, as tall as its lines. The bill changes on every keystroke: it
    only repaints, and only a change in its line count costs a layout pass."""

    DEFAULT_CSS = """
    TokenBars { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    BORDER_TITLE = "TOKENS"
    bill: reactive[TokenBill | None] = reactive(None)

    def watch_bill(self, old: TokenBill | None, new: TokenBill | None) -> None:
        if line_count(old) != line_count(new):
            self.refresh(layout=True)

    def render(self) -> Text:
        if self.bill is None:
            return Text("counting…", style="dim")
        return bill_text(self.bill, self.content_size.width)
