"""Every runtime's front laid out on a character grid (pure): ``compare --runtimes``' text plot
and the dashboard's ``w`` plot draw the same cells, the one as text, the other with colours.

Recall (y, between the tenths around the points) against tool tokens per task (x, log scale:
the fronts' budgets grow geometrically). Each runtime's points carry its marker, joined by ``·``
in budget order; two markers in one cell go side by side
(:func:`free_column`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

#: What joins two points of a front.
DOT = "·"


def free_column(taken: set[tuple[int, int]], x: int, y: int, width: int) -> int:
    """Where a plot marker at ``(x, y)`` goes so it hides no other marker (``taken``): ``x``, else
    the nearest free column on its row (right first), within ``width``. Every runtime plot (the
    text ones and the dashboard's) places its markers with it."""
    for step in range(width):
        for candidate in (x + step, x - step):
            if 0 <= candidate < width and (candidate, y) not in taken:
                return candidate
    return x


@dataclass(frozen=True)
class FrontLine:
    """One runtime's front: ``(tokens, recall)`` per budget, cheapest budget first."""

    runtime: str
    marker: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class FrontGrid:
    """``cells[y][x]``: the character and the runtime it belongs to (None: empty)."""

    cells: list[list[tuple[str, str | None]]]
    tokens: tuple[float, float]
    recall: tuple[float, float]


def front_grid(lines: Sequence[FrontLine], width: int, height: int) -> FrontGrid:
    """The fronts on a ``width`` x ``height`` grid (module doc)."""
    points = [p for line in lines for p in line.points]
    x0 = max(min((t for t, _ in points), default=1.0), 1.0)
    x1 = max(max((t for t, _ in points), default=10.0), x0 * 1.01)
    y0 = min(math.floor(min((r for _, r in points), default=0.0) * 10) / 10, 0.9)
    y1 = max(math.ceil(max((r for _, r in points), default=1.0) * 10) / 10, y0 + 0.1)
    span = math.log(x1) - math.log(x0)

    def col(tokens: float) -> int:
        x = (math.log(max(tokens, x0)) - math.log(x0)) / span * (width - 1)
        return min(max(round(x), 0), width - 1)

    def row(recall: float) -> int:
        return min(max(round((y1 - recall) / (y1 - y0) * (height - 1)), 0), height - 1)

    cells: list[list[tuple[str, str | None]]] = [[(" ", None)] * width for _ in range(height)]
    for line in lines:  # the joins first, every marker over them
        at = [(col(t), row(r)) for t, r in line.points]
        for (xa, ya), (xb, yb) in pairwise(at):
            steps = max(abs(xb - xa), abs(yb - ya))
            for s in range(1, steps):
                x, y = round(xa + (xb - xa) * s / steps), round(ya + (yb - ya) * s / steps)
                if cells[y][x][0] == " ":
                    cells[y][x] = (DOT, line.runtime)
    taken: set[tuple[int, int]] = set()
    for line in lines:
        for x, y in dict.fromkeys((col(t), row(r)) for t, r in line.points):  # one per cell
            x = free_column(taken, x, y, width)
            taken.add((x, y))
            cells[y][x] = (line.marker, line.runtime)
    return FrontGrid(cells, (x0, x1), (y0, y1))
