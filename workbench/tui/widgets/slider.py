"""A small keyboard-first slider (Textual 8 ships none).

``value`` is a reactive clamped to ``[minimum, maximum]`` and snapped to ``step`` in
``validate_value``; left/right move one fine step, shift+arrows and page up/down a coarse step,
home/end jump to the ends, and a click sets the value where it lands. Every change posts
:class:`Slider.Changed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget


class Slider(Widget, can_focus=True):
    """A horizontal slider over a numeric range."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "less", show=False),
        Binding("right", "step(1)", "more", show=False),
        Binding("shift+left,pagedown", "coarse(-1)", "much less", show=False),
        Binding("shift+right,pageup", "coarse(1)", "much more", show=False),
        Binding("home", "jump(0)", "minimum", show=False),
        Binding("end", "jump(1)", "maximum", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {"slider--filled", "slider--knob", "slider--rest"}
    DEFAULT_CSS = """
    Slider { height: 1; min-width: 7; }
    Slider > .slider--filled { color: $accent; text-style: bold; }
    Slider > .slider--knob { color: $text; text-style: bold; }
    Slider:focus > .slider--knob { color: $accent; text-style: bold reverse; }
    Slider > .slider--rest { color: $text-muted; }
    """

    value: reactive[float] = reactive(0.0, init=False)

    @dataclass
    class Changed(Message):
        slider: Slider
        value: float

        @property
        def control(self) -> Slider:
            return self.slider

    def __init__(
        self,
        value: float,
        *,
        minimum: float,
        maximum: float,
        step: float,
        coarse: float,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.minimum = minimum
        self.maximum = maximum
        self.step = step
        self.coarse = coarse
        self.set_reactive(Slider.value, self.validate_value(value))

    def validate_value(self, value: float) -> float:
        """Clamp to the range and snap to the fine step (rounded to kill float drift)."""
        value = min(max(value, self.minimum), self.maximum)
        steps = round((value - self.minimum) / self.step)
        digits = max(0, len(f"{self.step:g}".partition(".")[2]))
        return round(self.minimum + steps * self.step, digits)

    def watch_value(self, value: float) -> None:
        self.post_message(self.Changed(self, value))

    def action_step(self, direction: int) -> None:
        self.value = self.value + direction * self.step

    def action_coarse(self, direction: int) -> None:
        self.value = self.value + direction * self.coarse

    def action_jump(self, end: int) -> None:
        self.value = self.maximum if end else self.minimum

    @property
    def fraction(self) -> float:
        span = self.maximum - self.minimum
        return 0.0 if span <= 0 else (self.value - self.minimum) / span

    def render(self) -> Text:
        width = max(self.size.width - 2, 3)
        knob = round(self.fraction * (width - 1))
        rest = self.get_component_rich_style("slider--rest")
        text = Text("◀", style=rest)
        text.append("━" * knob, style=self.get_component_rich_style("slider--filled"))
        text.append("●", style=self.get_component_rich_style("slider--knob"))
        text.append("─" * (width - 1 - knob), style=rest)
        text.append("▶", style=rest)
        return text

    def on_click(self, event: events.Click) -> None:
        width = max(self.size.width - 2, 3)
        cell = min(max(event.x - 1, 0), width - 1)
        self.value = self.minimum + cell / (width - 1) * (self.maximum - self.minimum)
        self.focus()
