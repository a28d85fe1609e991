"""One numeric knob: its name, a :class:`Slider` and a validated number input, kept in step.

The input accepts only numbers in range (Textual's ``Number`` validator); an invalid entry is
flagged in place and never reaches the setting. Posts :class:`NumberKnob.Changed` once per new
value, whichever of the two moved it. ``-changed`` marks a value that differs from the file.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.validation import Number
from textual.widgets import Input, Label

from workbench.tui.widgets.slider import Slider
from workbench.tui.widgets.text_box import TextBox


class KnobInput(TextBox):
    """The number next to a slider: typed keys stay in it (``?`` opens the help)."""


class NumberKnob(Horizontal):
    """``label  ◀━━●──▶ [0.30]`` for an int or float field of the setting."""

    DEFAULT_CSS = """
    NumberKnob { height: 1; }
    NumberKnob > Label { width: 8; }
    NumberKnob > Slider { width: 1fr; }
    NumberKnob > KnobInput { width: 7; height: 1; border: none; padding: 0 1; }
    NumberKnob > KnobInput.-invalid { background: $error 40%; }
    NumberKnob.-changed > Label { color: $warning; text-style: bold; }
    """

    @dataclass
    class Changed(Message):
        knob: NumberKnob
        value: float

        @property
        def control(self) -> NumberKnob:
            return self.knob

    def __init__(
        self,
        label: str,
        value: float,
        *,
        minimum: float,
        maximum: float,
        step: float,
        coarse: float,
        integer: bool,
        id: str | None = None,
        tooltip: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.label = label
        self.integer = integer
        self._slider = Slider(value, minimum=minimum, maximum=maximum, step=step, coarse=coarse)
        self._input = KnobInput(
            self._format(value),
            type="integer" if integer else "number",
            validators=[Number(minimum=minimum, maximum=maximum)],
            validate_on=["changed", "submitted"],
            compact=True,
        )
        self._label = Label(label)
        self._value = self._slider.value
        if tooltip:
            self.tooltip = tooltip

    def compose(self) -> ComposeResult:
        yield self._label
        yield self._slider
        yield self._input

    def _format(self, value: float) -> str:
        return str(int(value)) if self.integer else f"{value:.2f}"

    @property
    def value(self) -> float:
        return self._value

    @property
    def slider(self) -> Slider:
        return self._slider

    @property
    def input(self) -> Input:
        return self._input

    def show(self, value: float, *, changed: bool) -> None:
        """Display ``value`` (from the setting) without posting a change."""
        self.set_class(changed, "-changed")
        self._label.update(f"{self.label}*" if changed else self.label)
        if value == self._value:
            return
        self._value = value
        with self._slider.prevent(Slider.Changed):
            self._slider.value = value
        if not self._input.has_focus:
            with self._input.prevent(Input.Changed):
                self._input.value = self._format(value)

    @on(Slider.Changed)
    def _slid(self, event: Slider.Changed) -> None:
        event.stop()
        if not self._input.has_focus:
            with self._input.prevent(Input.Changed):
                self._input.value = self._format(event.value)
        self._emit(event.value)

    @on(Input.Changed)
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if event.validation_result is not None and not event.validation_result.is_valid:
            return
        try:
            value = float(event.value)
        except ValueError:
            return
        with self._slider.prevent(Slider.Changed):
            self._slider.value = value
        self._emit(self._slider.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._input.value = self._format(self._value)
        self._slider.focus()

    def _emit(self, value: float) -> None:
        if value != self._value:
            self._value = value
            self.post_message(self.Changed(self, value))
