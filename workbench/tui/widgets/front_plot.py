"""The recall-versus-tokens front as a character plot, the current setting marked.

:func:`scatter_text` draws any number of series on that plane (the Compare-engines view's plot
of every engine uses it too).

x: mean tokens sent per query (0 at the left), y: recall (1.0 at the top). Front points are
``•``, the current setting ``◆``; a point under the cursor of the front list is ``●``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


@dataclass(frozen=True)
class PlotData:
    """Front points ``(tokens, recall)``, the current setting's point, and a highlighted one."""

    points: tuple[tuple[float, float], ...]
    current: tuple[float, float] | None
    highlighted: int | None = None


@dataclass(frozen=True)
class Series:
    """Points ``(tokens, recall)`` drawn with one marker and style, named in a legend."""

    label: str
    marker: str
    style: str
    points: tuple[tuple[float, float], ...]


def _cell(
    tokens: float, recall: float, top: float, low: float, width: int, height: int
) -> tuple[int, int]:
    x = 0 if top <= 0 else round(tokens / top * (width - 1))
    y = round((1.0 - recall) / max(1.0 - low, 1e-9) * (height - 1))
    return min(max(x, 0), width - 1), min(max(y, 0), height - 1)


def recall_floor(recalls: Sequence[float]) -> float:
    """The bottom of the y axis: the lowest recall rounded down to a tenth (zoom on the front)."""
    return math.floor(min(recalls, default=0.0) * 10) / 10


def scatter_text(series: Sequence[Series], width: int, height: int) -> Text:
    """Every series on one recall-versus-tokens plane, as ``height`` lines of ``width`` cells,
    axis labels included (pure). Later series draw over earlier ones where they share a cell.

    x: 0 to the most tokens of any point; y: 1.0 at the top, down to the lowest recall's tenth
    (at most 0.9, so a plot of good points still shows a scale).
    """
    label = 6  # "1.00 │" on the y axis
    inner_w, inner_h = max(width - label, 8), max(height - 1, 3)
    every = [point for s in series for point in s.points]
    top = max((t for t, _ in every), default=1.0) or 1.0
    low = min(recall_floor([r for _, r in every]), 0.9)
    grid = [[" "] * inner_w for _ in range(inner_h)]
    styles: dict[tuple[int, int], str] = {}
    for s in series:
        for tokens, recall in s.points:
            x, y = _cell(tokens, recall, top, low, inner_w, inner_h)
            grid[y][x] = s.marker
            styles[(x, y)] = s.style
    text = Text()
    for y, row in enumerate(grid):
        axis = "1.00 " if y == 0 else f"{low:.2f} " if y == inner_h - 1 else "     "
        text.append(axis + "│" if y else axis + "┤", style="dim")
        for x, char in enumerate(row):
            text.append(char, style=styles.get((x, y), ""))
        text.append("\n")
    scale = f"0 … {top:,.0f} tokens sent (mean)"
    text.append(" " * (label - 1) + "└" + scale.rjust(inner_w, "─"), style="dim")
    return text


def plot_text(data: PlotData, width: int, height: int) -> Text:
    """The front (``•``), its highlighted point (``●``) and the current setting (``◆``)."""
    series = [Series("front", "•", "cyan", data.points)]
    if data.highlighted is not None and 0 <= data.highlighted < len(data.points):
        series.append(Series("highlighted", "●", "bold yellow", (data.points[data.highlighted],)))
    if data.current is not None:
        series.append(Series("current", "◆", "bold magenta", (data.current,)))
    return scatter_text(series, width, height)


class FrontPlot(Widget):
    """Draws a :class:`PlotData`."""

    BORDER_TITLE = "recall vs tokens  • front  ◆ current"
    data: reactive[PlotData | None] = reactive(None)

    def render(self) -> Text:
        if self.data is None:
            return Text("run the cases to see the front", style="dim")
        return plot_text(self.data, self.content_size.width, self.content_size.height)
