"""Cases learned from serve's usage log (``holo-tune cases from-log``), written to the agent's
cases file beside it, are the dashboard's labels when it opens, and Evaluate runs on them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from textual.widgets import Static
from tui_helpers import SAMPLES, open_and_run, research_app

from workbench.cli import main
from workbench.evaluate.casestore import query_key
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screenshots import settle

SIZE = (120, 36)
#: A served session: each query searched, then its tools called (one query twice).
SESSION = [
    ("latest news about the ESA launch", ["brave_search-brave_news_search"]),
    ("remember that Ada likes tea", ["memory-create_entities", "memory-add_observations"]),
    ("find papers on transformers", ["vectorstore-search_papers"]),
    ("videos of the eclipse", ["brave_search-brave_video_search"]),
    ("what do you know about Ada", ["memory-open_nodes"]),
    ("latest  news about the ESA launch", ["brave_search-brave_news_search"]),
]


def _log(path: Path) -> None:
    lines = []
    for n, (query, called) in enumerate(SESSION):
        at = f"2026-07-28T09:{n:02d}:00.000Z"
        tools = [{"name": name, "score": 1.0} for name in called]
        search = {"event": "search", "time": at, "session": "s1", "query": query}
        lines.append({**search, "tools": tools, "refused": False, "ms": 3.0})
        for name in called:
            call = {"event": "call", "time": f"2026-07-28T09:{n:02d}:05.000Z", "session": "s1"}
            lines.append({**call, "tool": name, "upstream": "x", "outcome": "ok", "ms": 9.0})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


async def test_cases_from_a_log_are_the_labels_and_evaluate_runs_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = research_app(tmp_path)
    log = tmp_path / "usage.jsonl"
    _log(log)
    agent = tmp_path / "research-agent.yaml"
    catalog = SAMPLES / "research-agent.catalog.json"
    argv = ["cases", "from-log", str(agent), str(log), "--catalog", str(catalog)]
    assert await asyncio.to_thread(main, argv) == 0  # (the command runs an event loop of its own)
    assert "research-agent.cases.yaml: 5 cases from the log" in capsys.readouterr().out
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        assert screen.state.labels == {
            query_key(query): tuple(called) for query, called in SESSION[:5]
        }
        evaluate = await open_and_run(pilot, EvaluateScreen, "v")
        assert evaluate.outcome is not None
        assert "5 cases" in str(evaluate.query_one("#eval-status", Static).render())
