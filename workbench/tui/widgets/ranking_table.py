"""The ranking of one query: rank, label mark, tool, server, score with an inline bar, tokens and
why the tool is sent; separator rows mark where top_k and the threshold cut. ``a`` toggles the
highlighted tool in always_include; ``space`` labels it as expected for the query (✓ an expected
tool that is sent, ✗ in red one that is missed, "missed" in its why column).

Under serve's engine each row also splits its fused score by signal: one column per signal with a
weight (its share, weight × z-score, one decimal; the shares sum to the score), and the score's
bar is drawn against the rows shown (a fused score is not a 0-1 similarity).

Column widths follow the widget's width (the tool name takes what is left), so the table fits
without horizontal scrolling from 80 columns up; below 58 cells the server column goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from workbench.tui.messages import ToggleAlways, ToggleLabel
from workbench.tui.view import REASON_LABEL, SIGNAL_LABEL, CutRow, RankRow, bar
from workbench.tui.widgets.row_list import Line, RowList

BAR_WIDTH = 5
#: The cells of one signal's share column (``+12.3`` and a space).
SIGNAL_WIDTH = 6
#: Under this many cells for the tool's name, a table with signal columns drops the score's bar
#: (the split shows what the score is made of), then the server's column.
SPLIT_TOOL_MIN = 20
#: The label mark of an expected tool that is sent, and of one that is missed.
SENT_MARK, MISSED_MARK = "✓", "✗"


@dataclass(frozen=True)
class Widths:
    rank: int
    tool: int
    server: int
    score: int = BAR_WIDTH + 7
    tokens: int = 7
    why: int = 7
    #: The label mark and a space.
    mark: int = 2
    #: serve's engine: the signals whose share has a column, in order.
    signals: tuple[str, ...] = ()
    #: The score's bar (0: none, in a narrow table with signal columns).
    bar: int = BAR_WIDTH


def widths_for(
    total: int,
    digits: int = 3,
    server_names: int = 10,
    signals: tuple[str, ...] = (),
    score_chars: int | None = None,
) -> Widths:
    """Column widths for a table ``total`` cells wide whose scores have ``digits`` decimals and
    whose longest server name takes ``server_names`` cells with its gap (pure: unit-tested). A
    wide table gives the server column up to :data:`SERVER_MAX` cells for whole names while the
    tool column keeps :data:`TOOL_ROOM`. ``signals`` (serve's engine) each take a column of
    :data:`SIGNAL_WIDTH`; ``score_chars``: the widest score drawn (default: ``-0.`` and the
    decimals)."""
    avail = max(total - 1, 40)
    server = 10 if avail >= 66 else 8 if avail >= 56 else 0
    bar_width = BAR_WIDTH
    number = max(score_chars or 0, digits + 3) + 1
    split = SIGNAL_WIDTH * len(signals)
    if signals and avail - (4 + 2 + server + bar_width + number + split + 7 + 7) < SPLIT_TOOL_MIN:
        bar_width = 0
        if avail - (4 + 2 + server + number + split + 7 + 7) < SPLIT_TOOL_MIN:
            server = 0
    score = bar_width + number
    fixed = 4 + 2 + server + score + split + 7 + 7
    if server == 10 and server_names > 10:
        wider = min(server_names, SERVER_MAX)
        if avail - (fixed - server + wider) >= TOOL_ROOM:
            fixed, server = fixed - server + wider, wider
    return Widths(
        rank=4,
        tool=max(avail - fixed, 12),
        server=server,
        score=score,
        signals=signals,
        bar=bar_width,
    )


#: The widest the server column gets, and what the tool column keeps when it does.
SERVER_MAX, TOOL_ROOM = 20, 32


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells with an ellipsis, padded to ``width``."""
    if len(text) > width:
        text = text[: max(width - 1, 1)] + "…"
    return text.ljust(width)


def clip_middle(text: str, width: int, head: int | None = None) -> str:
    """``text`` cut to ``width`` cells by an ellipsis in the middle, padded to ``width``.

    The end stays (``head`` cells of the start, by default two fifths of what fits): sibling
    tools share a prefix and differ at the end (``hris_get_employees…`` ×2 becomes
    ``hris_g…off_request`` and ``hris_g…eligibility``).
    """
    if len(text) <= width:
        return text.ljust(width)
    if width <= 1:
        return "…"[:width]
    keep = width - 1
    head = keep * 2 // 5 if head is None else min(max(head, 0), keep)
    tail = keep - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def clip_names(names: Sequence[str], width: int) -> list[str]:
    """``names`` cut in the middle to ``width`` cells (:func:`clip_middle`), distinct wherever
    the names are: names that would look the same move their cut until they differ."""
    unique = list(dict.fromkeys(names))
    shown = {name: clip_middle(name, width) for name in unique}
    groups: dict[str, list[str]] = {}
    for name in unique:
        groups.setdefault(shown[name], []).append(name)
    keep = width - 1
    default = keep * 2 // 5
    heads = sorted(range(keep + 1), key=lambda h: (abs(h - default), h))
    for text, group in groups.items():
        if len(group) < 2:
            continue
        taken = set(shown.values()) - {text}
        for head in heads:
            trial = [clip_middle(name, width, head) for name in group]
            if len(set(trial)) == len(group) and not taken.intersection(trial):
                shown.update(zip(group, trial, strict=True))
                break
    return [shown[name] for name in names]


def local_name(row: RankRow) -> str:
    """The tool's name without its server's prefix (the server has its own column)."""
    prefix = f"{row.server}-"
    return row.tool[len(prefix) :] if row.tool.startswith(prefix) else row.tool


def header_text(w: Widths) -> Text:
    text = Text(f"{'#':>{w.rank - 1}} {'':<{w.mark}}{clip('tool', w.tool)}")
    if w.server:
        text.append(clip("server", w.server))
    text.append(clip("score", w.score))
    for name in w.signals:
        text.append(f"{SIGNAL_LABEL.get(name, name)[: SIGNAL_WIDTH - 1]:>{SIGNAL_WIDTH - 1}} ")
    text.append(f"{'tok':>{w.tokens - 1}} ")
    text.append("why")
    return text


def row_text(row: RankRow, w: Widths, name: str | None = None) -> Text:
    """One ranked tool as a line (pure: unit-tested); ``name`` is the tool's name as the table
    clips it (:func:`clip_names`), by default :func:`clip_middle` of its local name."""
    sent = row.reason is not None
    missed = row.expected and not sent
    style = "bold" if sent else "bold red" if missed else "dim"
    if name is None:
        name = clip_middle(local_name(row), w.tool - 1)
    text = Text()
    text.append(f"{row.rank:>{w.rank - 1}} ", style="dim")
    if row.expected:
        mark, colour = (MISSED_MARK, "bold red") if missed else (SENT_MARK, "bold green")
        text.append(mark + " " * (w.mark - 1), style=colour)
    else:
        text.append(" " * w.mark)
    text.append(name.ljust(w.tool - 1) + " ", style=style)
    if w.server:
        text.append(clip(row.server, w.server - 1) + " ", style="dim")
    fill = row.score if row.fill is None else row.fill
    text.append(bar(fill, w.bar), style="green" if sent else "grey50")
    # A minus sign takes the space after the bar: the column keeps its width.
    text.append(f"{row.score:>{w.score - w.bar - 1}.{row.digits}f} ", style=style)
    if w.signals:
        shares = {part.name: part.share for part in row.split}
        for name in w.signals:
            share = shares.get(name)
            text.append(share_cell(share), style=share_style(share))
    text.append(f"{row.tokens:>{w.tokens - 1},} ", style=style)
    if missed:
        text.append("missed", style="bold red")
        return text
    why = REASON_LABEL[row.reason] if row.reason else ""
    text.append(why, style="cyan" if why == "search" else "magenta")
    return text


def share_cell(share: float | None) -> str:
    """One signal's share in its column (blank: the tool has none)."""
    if share is None:
        return " " * SIGNAL_WIDTH
    text = f"{share:+.1f}"
    if len(text) > SIGNAL_WIDTH - 1:
        text = f"{share:+.0f}"
    return f"{text:>{SIGNAL_WIDTH - 1}} "


def share_style(share: float | None) -> str:
    """Green where a signal lifts the tool, red where it pulls it down, dim near nothing."""
    if share is None or abs(share) < 0.05:
        return "dim"
    return "green" if share > 0 else "red"


def cut_text(row: CutRow, w: Widths) -> Text:
    label = f"{'':>{w.rank}}─ ─ {row.label} "
    total = w.rank + w.mark + w.tool + w.server + w.score + SIGNAL_WIDTH * len(w.signals)
    return Text(label + "─ " * max((total - len(label)) // 2, 0), style="yellow")


class RankingTable(RowList):
    """A ranking with its cut lines; the selected tools stand out."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "toggle_always",
            "always",
            tooltip="Toggle always_include for this tool",
            id="ranking-always",
        ),
        Binding(
            "space",
            "label",
            "label",
            tooltip="Mark this tool as expected for the query (again: unmark); saved at once",
            id="ranking-label",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rows: list[RankRow | CutRow] = []

    @property
    def rows_shown(self) -> list[RankRow | CutRow]:
        return list(self._rows)

    def on_resize(self) -> None:
        super().on_resize()
        if self._rows:
            self.show(self._rows)

    def show(self, rows: Sequence[RankRow | CutRow], *, follow: bool = True) -> None:
        """Replace the rows; with ``follow`` the cursor stays on the same tool where it can
        (a knob moved), else it goes to the top (a new query)."""
        current = self.highlighted_tool() if follow else None
        self._rows = list(rows)
        ranked = [row for row in rows if isinstance(row, RankRow)]
        signals = tuple(dict.fromkeys(part.name for row in ranked for part in row.split))
        w = widths_for(
            self.size.width or 60,
            max((row.digits for row in ranked), default=3),
            max((len(row.server) + 1 for row in ranked), default=10),  # a space after it
            signals,
            max((len(f"{row.score:.{row.digits}f}") for row in ranked), default=None),
        )
        names = iter(clip_names([local_name(row) for row in ranked], w.tool - 1))
        lines = [
            Line(None, cut_text(row, w))
            if isinstance(row, CutRow)
            else Line(row.tool, row_text(row, w, next(names)))
            for row in rows
        ]
        self.set_lines(header_text(w), lines, cursor_key=current)

    def highlighted_tool(self) -> str | None:
        return self.highlighted_key()

    def action_toggle_always(self) -> None:
        tool = self.highlighted_tool()
        if tool is not None:
            self.post_message(ToggleAlways(tool))

    def action_label(self) -> None:
        tool = self.highlighted_tool()
        if tool is not None:
            self.post_message(ToggleLabel(tool))
