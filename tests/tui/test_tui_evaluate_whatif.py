"""The Evaluate view's what-if rows, driven through Pilot, against ``tune --json``'s ``what_if``.

A small world made for it: a kit server whose ``zeta`` most cases need and no query finds by its
words (the always-include what-if gains outside the error bars), on an MCP-only agent with no
embedder (the embedding what-if cannot be measured, and the view says so). Forty tools no query
names come before ``zeta``, so search reaches it only with every tool; and cases whose tool ranks
second give the front a bend well short of that, where the default budget's knee stops.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.worker import WorkerState
from tui_helpers import ENV, cli_json, open_and_run, research_app, shown

from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screens.evaluate_whatif import WORKER
from workbench.tui.screenshots import settle

SIZE = (120, 36)
AGENT = (
    "name: whatif\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
    "tool_filtering:\n  enabled: true\n  top_k: 3\n  similarity_threshold: 0.3\n"
    "  always_include: []\n  always_include_top_n_used: 0\n  search_method: bm25\n"
)
KIT = [
    ("alpha", "Read a file from the local disk"),
    ("beta", "Write text into a file on the local disk"),
    ("gamma", "Send an email message to a person"),
    ("delta", "Search the web for pages about a topic"),
    ("epsilon", "Translate text from one language into another"),
    ("eta", "Get the weather forecast for a city"),
    ("theta", "Convert an amount between currencies"),
    ("iota", "Create an event in the calendar"),
    ("zeta", "Keeps compliance ledgers of every action"),
]
NOUNS = (
    "apples bolts cables drills engines fabric gears hinges inks jars kettles lamps magnets nails "
    "oars pipes quilts rivets saws tiles urns valves wires yarn zippers anchors brushes chains "
    "dials easels funnels gloves hoses irons jugs knobs ladders mops nets ovens"
)
STOCK = [
    (f"stock{n:02d}", f"Tracks stock levels of {noun}") for n, noun in enumerate(NOUNS.split())
]


def _kit_app(tmp_path: Path) -> HoloTuneApp:
    tools = [
        {"name": n, "description": d, "inputSchema": {"type": "object", "properties": {}}}
        for n, d in [*KIT[:-1], *STOCK, KIT[-1]]
    ]
    (tmp_path / "agent.yaml").write_text(AGENT)
    catalog = {"holo_tune_catalog": 1, "servers": {"kit": {"tools": tools}}}
    (tmp_path / "catalog.json").write_text(json.dumps(catalog))
    lines = []
    for n in range(12):
        lines.append({"query": f"read the file notes{n}.txt", "expected": ["alpha", "zeta"]})
        lines.append({"query": f"send an email to person {n}", "expected": ["gamma", "zeta"]})
    for n in range(8):  # alpha ranks first, beta second
        lines.append(
            {"query": f"read a file from the local disk then write it {n}", "expected": ["beta"]}
        )
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    options = Options(
        agent=tmp_path / "agent.yaml",
        catalog=tmp_path / "catalog.json",
        embedder="none",
        environ=ENV,
        show_timing=False,
    )
    return HoloTuneApp(options)


async def test_evaluate_lists_the_what_if_rows_tune_lists(tmp_path: Path) -> None:
    app = _kit_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        assert screen.outcome is not None
        report = screen.whatifs.report
        assert report is not None
        cli = await cli_json(
            "tune",
            tmp_path / "agent.yaml",
            "--catalog",
            str(tmp_path / "catalog.json"),
            "--cases",
            str(tmp_path / "cases.jsonl"),
            "--embedder",
            "none",
        )
        assert report.to_json() == cli["what_if"]
        assert [r["kind"] for r in cli["what_if"]] == ["always-include"]
        text = str(screen.query_one("#eval-whatif").render())
        row = cli["what_if"][0]
        low, high = row["gain"]["ci95"]
        assert (
            f"{row['change']}: recall {report.baseline.heldout.recall:.3f} → "
            f"{row['heldout']['recall']:.3f} ({row['gain']['recall']:+.3f}, 95% CI "
            f"{low:+.3f}..{high:+.3f})"
        ) in text
        assert f"how {row['how']}" in text and "kit-zeta" in text
        assert "(not measured) with an embedding service: pass --embedder" in text
        # On screen, in the lists column.
        assert "always_include 1 tool(s)" in shown(screen.query_one("#eval-whatif"))


async def test_a_new_evaluation_measures_again_and_leaving_cancels(tmp_path: Path) -> None:
    app = _kit_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        first = screen.whatifs.report
        assert first is not None
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert screen.whatifs.report is not None and screen.whatifs.report is not first
        assert screen.whatifs.report.to_json() == first.to_json()
        await pilot.press("ctrl+g")
        await pilot.pause()
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, EvaluateScreen)
        assert not [w for w in app.workers if w.name == WORKER and w.state == WorkerState.RUNNING]


async def test_too_few_cases_say_why_no_what_if_is_measured(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    (tmp_path / "research-agent.cases.yaml").write_text(
        "cases:\n  - query: find recent papers on transformers\n    expected: [search_papers]\n"
    )
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        assert screen.outcome is not None
        text = str(screen.query_one("#eval-whatif").render())
        assert "needs at least 5 cases" in text and "these are 1" in text
        assert screen.whatifs.report is None
