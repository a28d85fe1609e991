"""Every runtime's recall against its tokens per task, with both 95 % error bars.

One mark per runtime (the letters of ``compare --runtimes``' text plot) at its held-out figures,
a ``│`` bar over its recall interval and a ``─`` bar over its tokens interval; the runtime that
runs the agent is drawn bold on a background and marked ``▶`` in the legend. Both axes zoom on
the bars (tokens from the lowest bar's start to the highest's end, recall between the tenths
around the bars), so runtimes a few hundred
tokens apart do not fall into one column. With no budget the plot draws each runtime's front
instead (the cells of :func:`~workbench.evaluate.front_grid.front_grid`, as the CLI's text plot,
in the runtime's colour). Drawing is pure (:func:`runtimes_plot_text`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from workbench.evaluate.front_grid import DOT, FrontLine, free_column, front_grid
from workbench.evaluate.intervals import Interval
from workbench.evaluate.runtimes import RuntimeRow
from workbench.runtimes import all_runtimes
from workbench.tui.widgets.engines_plot import legend_lines
from workbench.tui.widgets.front_plot import Series


def runtime_mark(runtime: str) -> tuple[str, str]:
    """Marker and colour of a runtime (its own; the CLI plot's letters), :data:`UNKNOWN` else."""
    for known in all_runtimes():
        if known.name == runtime:
            return known.marker
    return UNKNOWN


#: The plot's title when it draws the fronts.
FRONTS_TITLE = "held-out recall vs tokens per task (log) · each runtime tuned within each budget"
#: How the runtime that runs the agent stands out.
DETECTED = "bold reverse"
UNKNOWN = ("?", "white")


@dataclass(frozen=True)
class RuntimePoint:
    """One runtime's held-out figures and their 95 % intervals."""

    runtime: str
    tokens: float
    recall: float
    tokens_ci: Interval
    recall_ci: Interval


@dataclass(frozen=True)
class RuntimesPlotData:
    points: tuple[RuntimePoint, ...]
    #: The runtime that runs the agent (drawn apart), if it is among the points.
    detected: str | None = None
    #: Each runtime's front (no budget given): drawn instead of the points.
    fronts: tuple[FrontLine, ...] = ()

    def legend(self) -> list[Series]:
        out = []
        for name in [p.runtime for p in self.points] or [f.runtime for f in self.fronts]:
            marker, style = runtime_mark(name)
            label = f"{name} ▶" if name == self.detected else name
            out.append(Series(label, marker, style, ()))
        return out


def runtime_points(rows: Sequence[RuntimeRow]) -> tuple[RuntimePoint, ...]:
    """The plot's points: each row's held-out figures and intervals."""
    out = []
    for r in rows:
        ci = r.ci()
        out.append(RuntimePoint(r.runtime, r.tokens, r.recall, ci["tokens"], ci["recall"]))
    return tuple(out)


def runtimes_plot_text(data: RuntimesPlotData, width: int, height: int) -> Text:
    """The legend on top, then the plot, in ``height`` lines of ``width`` cells (pure): the
    fronts when there are, else each runtime's point with both error bars."""
    legend = legend_lines(data.legend(), width)
    text = Text("\n").join(legend)
    text.append("\n")
    label = 6  # "1.00 │"
    inner_w, inner_h = max(width - label, 8), max(height - len(legend) - 1, 3)
    if data.fronts:
        return _fronts_text(text, data, inner_w, inner_h, label)
    points = data.points
    x0 = min((p.tokens_ci[0] for p in points), default=0.0)
    x1 = max((p.tokens_ci[1] for p in points), default=1.0)
    if x1 <= x0:
        x1 = x0 + 1.0
    y0 = min(math.floor(min((p.recall_ci[0] for p in points), default=0.0) * 10) / 10, 0.9)
    y1 = max(math.ceil(max((p.recall_ci[1] for p in points), default=1.0) * 10) / 10, y0 + 0.1)

    def col(tokens: float) -> int:
        return min(max(round((tokens - x0) / (x1 - x0) * (inner_w - 1)), 0), inner_w - 1)

    def row(recall: float) -> int:
        y = round((y1 - recall) / (y1 - y0) * (inner_h - 1))
        return min(max(y, 0), inner_h - 1)

    grid = [[" "] * inner_w for _ in range(inner_h)]
    styles: dict[tuple[int, int], str] = {}
    for p in points:  # the bars first, every mark over them
        style = f"dim {runtime_mark(p.runtime)[1]}"
        x, y = col(p.tokens), row(p.recall)
        for yy in range(row(p.recall_ci[1]), row(p.recall_ci[0]) + 1):
            grid[yy][x] = "┼" if grid[yy][x] == "─" else "│"
            styles[(x, yy)] = style
        for xx in range(col(p.tokens_ci[0]), col(p.tokens_ci[1]) + 1):
            grid[y][xx] = "┼" if grid[y][xx] == "│" else "─"
            styles[(xx, y)] = style
    taken: set[tuple[int, int]] = set()
    for p in points:
        marker, style = runtime_mark(p.runtime)
        y = row(p.recall)
        x = free_column(taken, col(p.tokens), y, inner_w)  # two in one cell: side by side
        taken.add((x, y))
        grid[y][x] = marker
        styles[(x, y)] = f"{DETECTED} {style}" if p.runtime == data.detected else f"bold {style}"
    for y, cells in enumerate(grid):
        axis = f"{y1:.2f} " if y == 0 else f"{y0:.2f} " if y == inner_h - 1 else "     "
        text.append(axis + ("┤" if y == 0 else "│"), style="dim")
        for x, char in enumerate(cells):
            text.append(char, style=styles.get((x, y), ""))
        text.append("\n")
    scale = f"{x0:,.0f} … {x1:,.0f} tokens per task (mean, 95% bars)"
    text.append(" " * (label - 1) + "└" + scale.rjust(inner_w, "─"), style="dim")
    return text


def _fronts_text(text: Text, data: RuntimesPlotData, width: int, height: int, label: int) -> Text:
    """The fronts (:func:`~workbench.evaluate.front_grid.front_grid`, the CLI's cells) in each
    runtime's colour, its markers bold (the agent's runtime on a background)."""
    grid = front_grid(data.fronts, width, height)
    (x0, x1), (y0, y1) = grid.tokens, grid.recall
    for y, cells in enumerate(grid.cells):
        axis = f"{y1:.2f} " if y == 0 else f"{y0:.2f} " if y == height - 1 else "     "
        text.append(axis + ("┤" if y == 0 else "│"), style="dim")
        for char, runtime in cells:
            if runtime is None:
                text.append(char)
                continue
            colour = runtime_mark(runtime)[1]
            if char == DOT:
                text.append(char, style=f"dim {colour}")
            else:
                here = DETECTED if runtime == data.detected else "bold"
                text.append(char, style=f"{here} {colour}")
        text.append("\n")
    scale = f"{x0:,.0f} … {x1:,.0f} tokens per task (log scale)"
    text.append(" " * (label - 1) + "└" + scale.rjust(width, "─"), style="dim")
    return text


class RuntimesPlot(Widget):
    """Draws a :class:`RuntimesPlotData`."""

    BORDER_TITLE = "recall vs tokens per task · every runtime, 95% error bars"
    data: reactive[RuntimesPlotData | None] = reactive(None)

    def watch_data(self, data: RuntimesPlotData | None) -> None:
        self.border_title = FRONTS_TITLE if data is not None and data.fronts else self.BORDER_TITLE

    def render(self) -> Text:
        if self.data is None:
            return Text("run the cases to see every runtime's figures", style="dim")
        return runtimes_plot_text(self.data, self.content_size.width, self.content_size.height)

    def labels(self) -> list[str]:
        """The runtimes drawn (and named in the legend)."""
        return [] if self.data is None else [p.runtime for p in self.data.points]

    def front_labels(self) -> list[str]:
        """The runtimes whose front is drawn."""
        return [] if self.data is None else [f.runtime for f in self.data.fronts]
