"""A strip of the score distribution of the current ranking, with the threshold marked: how
many tools a threshold move would let in or cut at a glance."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from workbench.search.types import FloatArray
from workbench.tui.view import histogram, sparkline


@dataclass(frozen=True, eq=False)
class ScoreShape:
    """What the strip draws (compared by identity: it holds an array)."""

    scores: FloatArray
    threshold: float
    method: str


def strip_text(shape: ScoreShape, width: int) -> Text:
    """Histogram over 0..1 (left = 0) with the part at or above the threshold in colour and a
    caret under the threshold (pure: unit-tested)."""
    bins = max(width, 4)
    counts = histogram(shape.scores, bins)
    cut = min(int(shape.threshold * bins), bins - 1)
    line = sparkline(counts)
    text = Text()
    text.append(line[:cut], style="grey50")
    text.append(line[cut:], style="green")
    text.append("\n")
    caret = f"▲{shape.threshold:.2f}"
    start = min(cut, max(bins - len(caret), 0))
    text.append(" " * start + caret, style="yellow")
    text.append("\n")
    passing = int((shape.scores >= shape.threshold).sum())
    text.append(f"0 ← {shape.method} score → 1 · {passing:,} pass", style="dim")
    return text


class ScoreStrip(Widget):
    """Draws a :class:`ScoreShape`."""

    BORDER_TITLE = "SCORES"
    shape: reactive[ScoreShape | None] = reactive(None)

    def render(self) -> Text:
        if self.shape is None:
            return Text("type a query", style="dim")
        return strip_text(self.shape, self.content_size.width)
