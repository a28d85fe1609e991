"""Advice beyond the knobs in the dashboard: the catalog tab lists the catalog's findings (read
once per catalog, in a worker) and, with labelled cases, the tools the setting never sends; the
query lab says when the runtime cannot read the query."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import TabbedContent
from tui_helpers import ENV, research_app, shown

from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle

SIZE = (120, 36)
SAME = "Read the text of a file at a path and return its contents"
AGENT = """\
name: small
model:
  provider: openai
  name: gpt-4o
instructions:
  inline: Help.
tools:
  - name: kit
    type: mcp
    description: A kit of small tools
    command: npx
    args: ["-y", "kit-server"]
tool_filtering:
  enabled: true
  top_k: 1
  similarity_threshold: 0.0
  always_include_top_n_used: 0
  search_method: bm25
"""
CASES = """\
cases:
  - query: send an email to bob
    expected: [send_email]
  - query: read the text of that file
    expected: [read_file_content]
"""


def small_app(tmp_path: Path, *, cases: bool = True) -> HoloTuneApp:
    """A catalog made for the findings: a one-word description, two near-twin tools (the second
    never ranks first, so top_k 1 never sends it), and one plain tool."""

    def tool(name: str, description: str) -> dict[str, object]:
        schema = {"type": "object", "properties": {"path": {"type": "string"}}}
        return {"name": name, "description": description, "inputSchema": schema}

    snapshot = {
        "holo_tune_catalog": 1,
        "servers": {
            "kit": {
                "tools": [
                    tool("ping", "Ping."),
                    tool("read_file_text", SAME),
                    tool("read_file_content", SAME),
                    tool("send_email", "Send an email message to a recipient"),
                ]
            }
        },
    }
    catalog = tmp_path / "small.catalog.json"
    catalog.write_text(json.dumps(snapshot))
    agent = tmp_path / "small.yaml"
    agent.write_text(AGENT)
    if cases:
        (tmp_path / "small.cases.yaml").write_text(CASES)
    options = Options(agent=agent, catalog=catalog, environ=ENV, show_timing=False)
    return HoloTuneApp(options)


async def test_the_catalog_tab_lists_the_catalog_findings(tmp_path: Path) -> None:
    app = small_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        await pilot.press("tab", "t")
        await settle(pilot)
        assert screen.query_one(TabbedContent).active == "tab-catalog"
        text = shown(screen.query_one("#catalog-findings"))
        assert "one-word-description" in text and "kit-ping" in text
        assert "confusable-tools" in text and "kit-read_file_content" in text
        assert "unreachable-tools" in text
        assert "catalog (" in str(screen.query_one(TabbedContent).get_tab("tab-catalog").label)
        # A wider top_k reaches the twin: the unreachable finding goes, the others stay.
        await pilot.press("right_square_bracket")
        await settle(pilot)
        text = shown(screen.query_one("#catalog-findings"))
        assert "unreachable-tools" not in text
        assert "confusable-tools" in text


async def test_without_cases_the_tab_says_why_no_tool_is_called_unreachable(
    tmp_path: Path,
) -> None:
    app = small_app(tmp_path, cases=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "t")
        await settle(pilot)
        text = shown(app.screen.query_one("#catalog-findings"))
        assert "confusable-tools" in text
        assert "unreachable-tools" not in text
        assert "unreachable tools: no labelled cases" in text


async def test_the_catalog_is_read_once_not_per_keystroke(tmp_path: Path) -> None:
    app = small_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        advice = screen.state.advice
        assert advice is not None
        await pilot.press(*"send mail")
        await settle(pilot)
        assert screen.state.advice is not None
        assert screen.state.advice.reader is advice.reader  # the same reader, not rebuilt


async def test_an_unreadable_query_says_so_and_a_readable_one_does_not(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        findings = app.screen.query_one("#query-findings")
        assert not findings.display
        await pilot.press(*"天気はどう")
        await settle(pilot)
        assert findings.display
        text = shown(findings)
        assert "query-unreadable" in text and "CJK" in text
        for _ in range(5):
            await pilot.press("backspace")
        await pilot.press(*"weather in paris")
        await settle(pilot)
        assert not findings.display
