"""Every engine's recall-versus-tokens points on one plot, with a legend.

One series per engine (the Anthropic regex variant is its own), each with its marker and colour;
HoloDeck's current setting is ``◆``. The points are :class:`~workbench.evaluate.compare.CurvePoint`
(every grid point of a strategy engine, HoloDeck's front) and HoloDeck's rows measured on every
case; drawing is :func:`~workbench.tui.widgets.front_plot.scatter_text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from workbench.evaluate.compare import CompareReport, CurvePoint
from workbench.search.strategies.registry import Mark, engines, find_engine
from workbench.tui.widgets.front_plot import Series, scatter_text

#: HoloDeck's filter's marker and style (the engines' are their registry entries').
HOLODECK_MARK: Mark = ("•", "cyan")
#: Markers for series no entry marks, in turn.
SPARE_MARKS: tuple[Mark, ...] = (("▼", "bright_green"), ("◇", "bright_red"))
CURRENT = Series("holodeck current", "◆", "bold magenta", ())


def engine_marks() -> dict[str, Mark]:
    """Marker and style of each series, in legend order: HoloDeck, then each registered engine
    followed by its variants (``"anthropic regex"``)."""
    marks = {"holodeck": HOLODECK_MARK}
    for engine in engines():
        marks[engine.name] = engine.mark
        for variant in engine.variants:
            marks[f"{engine.name} {variant.label}"] = variant.mark
    return marks


def series_name(point: CurvePoint) -> str:
    """The series a point belongs to: its engine, or the engine's variant its parameters are
    (the Anthropic regex tool)."""
    engine = find_engine(point.engine)
    for variant in engine.variants if engine is not None else ():
        if variant.holds(point.params):
            return f"{point.engine} {variant.label}"
    return point.engine


def engine_series(report: CompareReport) -> list[Series]:
    """One series per engine of the report, in :func:`engine_marks` order: its curve points,
    and for HoloDeck also its rows measured on every case (defaults, the agent's block)."""
    points: dict[str, list[tuple[float, float]]] = {}
    for row in report.rows:
        points.setdefault(row.engine, [])
        if row.engine == "holodeck" and not row.heldout:
            points["holodeck"].append((row.metrics.tokens_selected_mean, row.metrics.recall))
    for point in report.points:
        points.setdefault(series_name(point), []).append((point.tokens, point.recall))
    marks = engine_marks()
    order = [name for name in marks if name in points]
    order += [name for name in points if name not in marks]
    spare = iter(SPARE_MARKS * (len(order) // len(SPARE_MARKS) + 1))
    out = []
    for name in order:
        marker, style = marks.get(name) or next(spare)
        out.append(Series(name, marker, style, tuple(points[name])))
    return out


@dataclass(frozen=True)
class EnginesPlotData:
    """The engines' series and HoloDeck's current setting ``(tokens, recall)``."""

    series: tuple[Series, ...]
    current: tuple[float, float] | None = None

    def marks(self) -> list[Series]:
        """The series and then the current setting's mark: the legend's order."""
        if self.current is None:
            return list(self.series)
        return [*self.series, Series(CURRENT.label, CURRENT.marker, CURRENT.style, (self.current,))]

    def drawn(self) -> list[Series]:
        """The marks in drawing order: HoloDeck and then the current setting last, on top."""
        last = {"holodeck": 1, CURRENT.label: 2}
        return sorted(self.marks(), key=lambda s: last.get(s.label, 0))


def legend_lines(series: Sequence[Series], width: int) -> list[Text]:
    """``marker name`` for each series, wrapped to ``width`` cells (pure)."""
    lines: list[Text] = [Text()]
    for s in series:
        item = Text.assemble((s.marker, s.style), " ", (s.label, s.style))
        if lines[-1].cell_len and lines[-1].cell_len + 2 + item.cell_len > width:
            lines.append(Text())
        if lines[-1].cell_len:
            lines[-1].append("  ")
        lines[-1].append_text(item)
    return lines


def engines_plot_text(data: EnginesPlotData, width: int, height: int) -> Text:
    """The legend on top, the plot under it, in ``height`` lines of ``width`` cells (pure)."""
    legend = legend_lines(data.marks(), width)
    text = Text("\n").join(legend)
    text.append("\n")
    text.append_text(scatter_text(data.drawn(), width, max(height - len(legend), 4)))
    return text


class EnginesPlot(Widget):
    """Draws an :class:`EnginesPlotData`."""

    BORDER_TITLE = "recall vs tokens · every engine"
    data: reactive[EnginesPlotData | None] = reactive(None)

    def render(self) -> Text:
        if self.data is None:
            return Text("run the cases to see every engine's points", style="dim")
        return engines_plot_text(self.data, self.content_size.width, self.content_size.height)

    def labels(self) -> list[str]:
        """The series drawn (and named in the legend)."""
        return [] if self.data is None else [s.label for s in self.data.drawn()]
