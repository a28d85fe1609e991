"""Widgets on their own: the slider's clamp and steps, the number knob's validation, the
header, the token bill and the score strip, driven through Pilot in a bare app."""

from __future__ import annotations

import numpy as np
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input

from workbench.catalog import ServerStatus
from workbench.errors import ConfigError
from workbench.tui.screens.error import error_text
from workbench.tui.view import ServerTokens
from workbench.tui.widgets.header_bar import HeaderInfo, header_parts
from workbench.tui.widgets.number_knob import NumberKnob
from workbench.tui.widgets.score_strip import ScoreShape, strip_text
from workbench.tui.widgets.servers_panel import server_line
from workbench.tui.widgets.slider import Slider
from workbench.tui.widgets.token_bars import TokenBill, bill_text, line_count


class _SliderApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.changes: list[float] = []

    def compose(self) -> ComposeResult:
        yield Slider(0.3, minimum=0.0, maximum=1.0, step=0.01, coarse=0.1)

    def on_slider_changed(self, event: Slider.Changed) -> None:
        self.changes.append(event.value)


async def test_slider_steps_clamps_and_posts_changes() -> None:
    app = _SliderApp()
    async with app.run_test(size=(40, 3)) as pilot:
        slider = app.query_one(Slider)
        slider.focus()
        await pilot.press("right", "right")
        assert slider.value == 0.32
        await pilot.press("shift+right")
        assert slider.value == 0.42
        await pilot.press("pagedown", "left")
        assert slider.value == 0.31
        await pilot.press("end", "right")
        assert slider.value == 1.0
        await pilot.press("home", "left")
        assert slider.value == 0.0
        await pilot.pause()
        assert app.changes == [0.31, 0.32, 0.42, 0.32, 0.31, 1.0, 0.0]


def test_slider_validate_snaps_to_the_step() -> None:
    slider = Slider(5, minimum=1, maximum=50, step=1, coarse=5)
    assert slider.validate_value(7.4) == 7
    assert slider.validate_value(99) == 50
    assert slider.validate_value(-3) == 1


class _KnobApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.values: list[float] = []

    def compose(self) -> ComposeResult:
        yield NumberKnob("top_k", 5, minimum=1, maximum=50, step=1, coarse=5, integer=True)

    def on_number_knob_changed(self, event: NumberKnob.Changed) -> None:
        self.values.append(event.value)


async def test_number_knob_keeps_slider_and_input_in_step_and_rejects_bad_input() -> None:
    app = _KnobApp()
    async with app.run_test(size=(40, 3)) as pilot:
        knob = app.query_one(NumberKnob)
        knob.slider.focus()
        await pilot.press("right")
        await pilot.pause()
        assert knob.input.value == "6"
        knob.input.focus()
        knob.input.value = ""
        await pilot.press("1", "2")
        await pilot.pause()
        assert knob.slider.value == 12
        await pilot.press("0")
        await pilot.pause()
        assert knob.slider.value == 12  # 120 is out of range: flagged, not applied
        assert knob.input.has_class("-invalid")
        await pilot.press("enter")
        await pilot.pause()
        assert knob.input.value == "12"
        assert app.values == [6, 1, 12]
        knob.show(20, changed=True)
        await pilot.pause()
        assert knob.slider.value == 20 and knob.has_class("-changed")
        assert app.values == [6, 1, 12]  # show() posts nothing
        assert isinstance(knob.input, Input)


def test_header_names_encoding_and_servers() -> None:
    left, right = header_parts(
        HeaderInfo("research-agent", "openai:gpt-4o", "o200k_base", True, 2, 3, 17, "bm25 only")
    )
    assert "research-agent" in left.plain and "o200k_base (exact)" in left.plain
    assert right.plain.strip() == "2/3 servers ok · 17 tools"
    _, waiting = header_parts(HeaderInfo("a", "m"))
    assert "0/0 servers ok · … tools" in waiting.plain


def test_server_lines() -> None:
    ok = ServerStatus("memory", "stdio", state="ok", tools=9)
    assert server_line(ok, 1234).plain == "● memory  9 · 1.2k"
    bad = ServerStatus("github", "stdio", state="error", error="command not found: nope")
    assert server_line(bad, None).plain == "✗ github  command not found: nope"
    busy = ServerStatus("brave", "stdio", state="connecting")
    assert "brave  connecting…" in server_line(busy, None).plain


def test_token_bill_shows_savings_encoding_and_servers() -> None:
    bill = TokenBill(
        all=1000,
        sent=140,
        encoding="o200k_base",
        exact=False,
        tools=10,
        chosen=2,
        servers=(ServerTokens("mem", 600, 100, 6, 1), ServerTokens("web", 400, 40, 4, 1)),
    )
    text = bill_text(bill, 34).plain
    assert "-86% tokens" in text and "2/10 tools" in text
    assert "o200k_base estimate" in text
    assert "mem" in text and "100/600" in text


def test_token_bill_framing_row_and_no_minus_zero() -> None:
    servers = (ServerTokens("mem", 600, 100, 6, 1), ServerTokens("web", 388, 28, 4, 1))
    bill = TokenBill(1000, 140, "o200k_base", True, 10, 2, servers, overhead=12)
    lines = bill_text(bill, 34).plain.splitlines()
    assert lines[-1].split() == ["framing", "12/12"]
    everything = TokenBill(1000, 1000, "o200k_base", True, 10, 10, servers, overhead=12)
    text = bill_text(everything, 34).plain
    assert "10/10 tools" in text and "%" not in text
    nothing = TokenBill(1000, 0, "o200k_base", True, 10, 0, servers, overhead=12)
    assert bill_text(nothing, 34).plain.splitlines()[-1].split() == ["framing", "0/12"]


@pytest.mark.parametrize("servers", [0, 1, 6, 7, 12])
@pytest.mark.parametrize("overhead", [0, 12])
def test_token_bill_line_count_is_what_is_drawn(servers: int, overhead: int) -> None:
    """The panel's height comes from line_count (no drawing on a keystroke): it must match."""
    rows = tuple(ServerTokens(f"s{i}", 100, 10, 2, 1) for i in range(servers))
    bill = TokenBill(
        100 * servers + overhead, 10, "o200k_base", True, 2 * servers, 1, rows, True, overhead
    )
    assert line_count(bill) == len(bill_text(bill, 34).plain.splitlines())
    assert line_count(None) == 1


def test_score_strip_marks_the_threshold() -> None:
    shape = ScoreShape(np.array([0.1, 0.2, 0.8, 0.9]), 0.5, "bm25")
    lines = strip_text(shape, 20).plain.splitlines()
    assert lines[1].index("▲0.50") == 10
    assert "2 pass" in lines[2]


def test_error_text_lists_file_line_field_and_cause() -> None:
    err = ConfigError("must be <= 50", file="agent.yaml", line=12, field="tool_filtering.top_k")
    text = error_text(err).plain
    assert "file  agent.yaml" in text and "line  12" in text
    assert "field  tool_filtering.top_k" in text and "cause  must be <= 50" in text
