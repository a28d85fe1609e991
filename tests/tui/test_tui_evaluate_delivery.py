"""The Evaluate view offers for adoption only what the runtime runs (search/delivery.py).

An MCP-only agent (the livemcpbench slice) with an embedder given anyway, as ``--embedder``
would: HoloDeck has no embedding service there, so its semantic and hybrid are BM25. The
embedder is an oracle stand-in (each case's query embeds next to its expected tools), so its
semantic points would beat BM25's everywhere: none may reach the front, and the metric cards
are BM25's. The real model is exercised by tests/test_delivery.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tui_helpers import ENV, open_and_run, shown

import workbench.tui.dashboard.session as session_module
from workbench.evaluate import evaluate, load_cases, resolve_cases
from workbench.search.embedders import EmbedderChoice
from workbench.search.types import FloatArray
from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.evaluate import EvaluateScreen
from workbench.tui.screenshots import settle
from workbench.tui.widgets.row_list import RowList
from workbench.workspace import build_workspace

SLICE = Path(__file__).resolve().parents[1] / "data" / "livemcpbench_slice"
SIZE = (120, 36)
MODEL = "local:oracle"


class Oracle:
    """Tools embed as one-hot vectors; a labelled query as the sum of its expected tools'."""

    spec = MODEL
    model_id = MODEL

    def __init__(self, tools: Sequence[str], expected: dict[str, list[int]]) -> None:
        self.index = {text: n for n, text in enumerate(tools)}
        self.expected = expected
        self.size = len(tools)

    def embed(self, texts: Sequence[str]) -> FloatArray:
        out = np.full((len(texts), self.size), 1e-3)
        for row, text in enumerate(texts):
            if text in self.index:
                out[row, self.index[text]] = 1.0
            for tool in self.expected.get(text, []):
                out[row, tool] = 1.0
        return out


def _with_oracle(cases: Path) -> Callable[..., Any]:
    """build_workspace with the oracle as an embedder the user chose on an agent whose runtime
    has none (``runtime`` "none", explicit), as ``--embedder`` gives it."""

    def build(agent: Any, catalog: Any, **kw: Any) -> Any:
        resolved = resolve_cases(load_cases(cases), catalog)
        expected = {c.query: [t for g in c.groups for t in g] for c in resolved.cases}
        oracle = Oracle([t.search_text for t in catalog.tools], expected)
        choice = EmbedderChoice(oracle, MODEL, MODEL, "none", explicit=True)
        return build_workspace(agent, catalog, embedder=choice)

    return build


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HoloTuneApp:
    """The slice's agent (its block set to semantic) with its cases beside it."""
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        (SLICE / "agent.yaml").read_text().replace("search_method: bm25", "search_method: semantic")
    )
    shutil.copyfile(SLICE / "cases.jsonl", tmp_path / "cases.jsonl")
    monkeypatch.setattr(session_module, "build_workspace", _with_oracle(tmp_path / "cases.jsonl"))
    options = Options(agent=agent, catalog=SLICE / "catalog.json", environ=ENV, show_timing=False)
    return HoloTuneApp(options)


async def test_no_undeliverable_point_is_offered_for_adoption(
    app: HoloTuneApp, tmp_path: Path
) -> None:
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_and_run(pilot, EvaluateScreen, "v")
        ws = screen.lab.workspace
        assert ws.engine.embedder is not None  # the oracle scores semantic in the query lab
        outcome = screen.outcome
        assert outcome is not None and outcome.front
        assert {p.setting.search_method for p in outcome.front} == {"bm25"}
        # the cards are what runs: the block's semantic as HoloDeck ranks it (BM25)
        cases = resolve_cases(load_cases(tmp_path / "cases.jsonl"), ws.catalog)
        oracle = evaluate(ws.engine, ws.catalog, ws.tokens, cases, screen.setting).metrics
        assert outcome.report.metrics.recall < oracle.recall
        assert f"{outcome.report.metrics.recall:.3f}" in shown(screen.query(".eval-card").first())
        assert outcome.note is not None
        assert outcome.note.startswith("semantic measured as bm25, as the runtime runs it:")
        title = shown(screen.query_one("#eval-front-title"))
        assert "front (Enter adopts): bm25 only, no embedding service" in title
        front = screen.query_one("#eval-front", RowList)
        assert front.row_count == len(outcome.front)
        front.focus()
        await pilot.press("down", "enter")
        await settle(pilot)
        if app.screen is screen:  # measured worse than the setting evaluated: asked again
            assert screen._worse(outcome, 1) is not None
            await pilot.press("enter")
            await settle(pilot)
        dashboard = app.screen
        assert isinstance(dashboard, DashboardScreen) and dashboard.lab is not None
        assert dashboard.lab.setting.search_method == "bm25"
        assert dashboard.lab.setting == outcome.front[1].setting
