"""The knobs of the ``tool_filtering`` block: enabled, search_method, top_k, threshold,
always_include and always_include_top_n_used.

The panel shows a setting (:meth:`KnobsPanel.show`) and posts :class:`SettingEdited` when the
user moves a knob; it never applies the change itself. Values that differ from the file are
marked with ``*`` and the ``-changed`` class. When the runtime does not read the block, a note
says so above the knobs (:meth:`KnobsPanel.note`).
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Select, Static, Switch

from workbench.config.filtering import (
    SEARCH_METHODS,
    THRESHOLD_MAX,
    THRESHOLD_MIN,
    TOP_K_MAX,
    TOP_K_MIN,
    TOP_N_USED_MAX,
    TOP_N_USED_MIN,
    ToolFiltering,
)
from workbench.tui.messages import SettingEdited
from workbench.tui.widgets.number_knob import NumberKnob

_FIELD_OF_KNOB = {
    "knob-top-k": "top_k",
    "knob-threshold": "similarity_threshold",
    "knob-top-n": "always_include_top_n_used",
}


class KnobsPanel(Vertical):
    """The tool_filtering block as controls."""

    BORDER_TITLE = "KNOBS"

    def __init__(self, setting: ToolFiltering, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._setting = setting
        self._file = setting
        self._note: str | None = None

    def compose(self) -> ComposeResult:
        s = self._setting
        note = Static(self._note or "", id="knob-note")
        note.display = self._note is not None
        yield note
        with Horizontal(classes="knob-row", id="row-enabled"):
            yield Label("enabled", classes="knob-label")
            yield Switch(s.enabled, id="knob-enabled", tooltip="Filter tools per request")
            yield Label(_on_off(s.enabled), id="enabled-state")
        with Horizontal(classes="knob-row", id="row-method"):
            yield Label("method", classes="knob-label")
            yield Select(
                [(m, m) for m in SEARCH_METHODS],
                value=s.search_method,
                allow_blank=False,
                compact=True,
                id="knob-method",
                tooltip="semantic (embeddings), bm25 (keywords) or hybrid (RRF); m cycles",
            )
        yield NumberKnob(
            "top_k",
            s.top_k,
            minimum=TOP_K_MIN,
            maximum=TOP_K_MAX,
            step=1,
            coarse=5,
            integer=True,
            id="knob-top-k",
            tooltip="Most tools sent per request, always-included counted ([ and ] step)",
        )
        yield NumberKnob(
            "thresh",
            s.similarity_threshold,
            minimum=THRESHOLD_MIN,
            maximum=THRESHOLD_MAX,
            step=0.01,
            coarse=0.1,
            integer=False,
            id="knob-threshold",
            tooltip="Least score a searched tool needs (- and + step)",
        )
        yield NumberKnob(
            "top_n",
            s.always_include_top_n_used,
            minimum=TOP_N_USED_MIN,
            maximum=TOP_N_USED_MAX,
            step=1,
            coarse=5,
            integer=True,
            id="knob-top-n",
            tooltip="The N most used tools always ride along (the first N at a cold start)",
        )
        yield Static(id="knob-always", classes="knob-always")

    def on_mount(self) -> None:
        self.show(self._setting, self._file)

    def show(self, setting: ToolFiltering, file_setting: ToolFiltering) -> None:
        """Display ``setting`` and mark what differs from ``file_setting`` (posts nothing)."""
        self._setting, self._file = setting, file_setting
        if not self.is_mounted:
            return
        switch = self.query_one("#knob-enabled", Switch)
        if switch.value != setting.enabled:
            with switch.prevent(Switch.Changed):
                switch.value = setting.enabled
        self.query_one("#enabled-state", Label).update(_on_off(setting.enabled))
        self._mark("#row-enabled", "enabled", setting.enabled != file_setting.enabled)
        select: Select[str] = self.query_one("#knob-method", Select)
        if select.value != setting.search_method:
            with select.prevent(Select.Changed):
                select.value = setting.search_method
        changed = setting.search_method != file_setting.search_method
        self._mark("#row-method", "method", changed)
        for knob_id, key in _FIELD_OF_KNOB.items():
            value = getattr(setting, key)
            self.query_one(f"#{knob_id}", NumberKnob).show(
                value, changed=value != getattr(file_setting, key)
            )
        self._show_always(setting, file_setting)

    def note(self, text: str | None) -> None:
        """Say above the knobs that the runtime does not read them (None: it does)."""
        self._note = text
        if self.is_mounted:
            note = self.query_one("#knob-note", Static)
            note.update(text or "")
            note.display = text is not None

    def _mark(self, row: str, label: str, changed: bool) -> None:
        widget = self.query_one(row, Horizontal)
        widget.set_class(changed, "-changed")
        widget.query_one(Label).update(f"{label}*" if changed else label)

    def _show_always(self, setting: ToolFiltering, file_setting: ToolFiltering) -> None:
        entries = setting.always_include
        changed = entries != file_setting.always_include
        static = self.query_one("#knob-always", Static)
        static.set_class(changed, "-changed")
        text = Text("always* " if changed else "always  ")
        if not entries:
            text.append("none (a toggles)", style="dim")
        else:
            text.append(f"{len(entries)}: ")
            text.append(", ".join(entries), style="dim")
        static.update(text)

    @on(Switch.Changed, "#knob-enabled")
    def _enabled(self, event: Switch.Changed) -> None:
        event.stop()
        self.query_one("#enabled-state", Label).update(_on_off(event.value))
        self.post_message(SettingEdited("enabled", event.value))

    @on(Select.Changed, "#knob-method")
    def _method(self, event: Select.Changed) -> None:
        event.stop()
        if isinstance(event.value, str):
            self.post_message(SettingEdited("search_method", event.value))

    @on(NumberKnob.Changed)
    def _number(self, event: NumberKnob.Changed) -> None:
        event.stop()
        key = _FIELD_OF_KNOB[event.knob.id or ""]
        value: float | int = int(event.value) if event.knob.integer else event.value
        self.post_message(SettingEdited(key, value))


def _on_off(enabled: bool) -> str:
    """What the switch means in words: off sends every tool."""
    return "on" if enabled else "off: sends all"
