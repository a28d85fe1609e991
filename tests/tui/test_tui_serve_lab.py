"""The query lab under the serve runtime ranks with serve's own engine (HoloEngine) under the knobs
and shows each tool's score split by signal: a column per weighted signal, the highlighted tool's
raw values and shares under the table, and a query serve would refuse shown as such. Checked
against the engine itself, built here apart from the dashboard from the agent's block as written
(top_k 5, threshold 0.5, search_papers pinned). HoloDeck's runtimes keep HoloDeck's ranking."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from tui_helpers import ENV, SAMPLES, research_app, shown

from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.settings import DEFAULT_WEIGHTS, HoloSettings
from workbench.tui.app import HoloTuneApp
from workbench.tui.lab import HOLO
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle
from workbench.tui.view import CutRow, RankRow, split_text
from workbench.tui.widgets.ranking_table import RankingTable

SIZE = (160, 48)
QUERY = "find papers on transformers"
AGENT = SAMPLES / "research-agent.yaml"


def serve_app(**options: Any) -> HoloTuneApp:
    """The research agent on its catalog snapshot under ``--runtime serve``, the query typed,
    embedder none unless ``options`` say."""
    given: dict[str, Any] = {
        "agent": AGENT,
        "catalog": SAMPLES / "research-agent.catalog.json",
        "embedder": "none",
        "query": QUERY,
        "environ": ENV,
        "show_timing": False,
        "runtime": "serve",
        **options,
    }
    return HoloTuneApp(Options(**given))


def _screen(app: HoloTuneApp) -> DashboardScreen:
    screen = app.screen
    assert isinstance(screen, DashboardScreen)
    return screen


def _engine(screen: DashboardScreen, embedder: object = None) -> HoloEngine:
    """serve's engine on the dashboard's catalog and token counts, built apart from it."""
    lab = screen.lab
    assert lab is not None
    ws = lab.workspace
    tokens = np.asarray(ws.tokens.per_tool, dtype=np.float64)
    return HoloEngine(ws.catalog, tokens, embedder)  # type: ignore[arg-type]


async def _until(pilot: Pilot[None], done: Callable[[], bool], patience: float = 60.0) -> None:
    """Pause until ``done()`` (a worker's result arrived), failing after ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while not done():
        assert time.monotonic() < deadline, "the dashboard never got there"
        await pilot.pause(0.05)


def _ranked(table: RankingTable) -> list[RankRow]:
    return [row for row in table.rows_shown if isinstance(row, RankRow)]


def _assert_split_matches(rows: list[RankRow], engine: HoloEngine, settings: HoloSettings) -> None:
    ranked = engine.rank(QUERY, settings)
    assert [row.index for row in rows] == [int(i) for i in ranked.order]
    for row in rows:
        assert [part.name for part in row.split] == list(ranked.shares)
        for part in row.split:
            assert part.share == pytest.approx(float(ranked.shares[part.name][row.index]))
        assert row.score == pytest.approx(float(ranked.scores[row.index]))
        assert sum(part.share for part in row.split) == pytest.approx(row.score)


async def test_the_serve_lab_splits_each_score_by_signal_and_shows_a_refusal() -> None:
    app = serve_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _screen(app)
        table = screen.query_one(RankingTable)
        engine = _engine(screen)
        # The agent's block: top_k 5, threshold 0.5, always_include [search_papers], semantic
        # (no embedder here: the dense signal has its weight and no scores).
        settings = HoloSettings(top_k=5, threshold=0.5, pins=("search_papers",))
        refused = engine.search(QUERY, settings)
        assert refused.refused  # a third of the query's words in the best tool: under 0.5

        rows = _ranked(table)
        _assert_split_matches(rows, engine, settings)
        first = table.rows_shown[0]
        assert isinstance(first, CutRow) and first.label.startswith("no tool fits · confidence")
        status = shown(screen.query_one("#lab-status")).strip()
        assert status.startswith("no tool fits: confidence 0.33 < threshold 0.50")
        sent = {row.tool: row.reason for row in rows if row.reason}
        assert sent == {"vectorstore-search_papers": "always_include"}  # the pin alone

        drawn = shown(table)
        header = drawn.splitlines()[0]
        assert header.split()[-5:] == ["score", "lex", "name", "tok", "why"]
        top = rows[0]
        cells = [f"{part.share:+.1f}" for part in top.split]
        assert cells == drawn.splitlines()[2].split()[5:7]
        split = screen.query_one("#ranking-split")
        assert split.display and shown(split).strip() == split_text(top)
        assert "lexical" in split_text(top) and f"{top.split[0].share:+.3f}" in split_text(top)

        # The threshold down to 0.3: serve answers, the returned tools are the engine's.
        await pilot.press("tab", "underscore", "underscore", "down")
        await settle(pilot)
        lowered = HoloSettings(top_k=5, threshold=0.3, pins=("search_papers",))
        found = engine.search(QUERY, lowered)
        assert not found.refused
        rows = _ranked(table)
        _assert_split_matches(rows, engine, lowered)
        searched = [row.index for row in rows if row.reason == "search"]
        pinned = {row.index for row in rows if row.reason == "always_include"}
        assert searched == [i for i in found.indices if i not in pinned]
        cuts = [r.label for r in table.rows_shown if isinstance(r, CutRow)]
        assert not any("no tool fits" in label for label in cuts)
        assert shown(split).strip() == split_text(rows[1])  # the highlighted tool's


@pytest.mark.slow  # the real MiniLM loads: about 10 s of CPU
async def test_bm25_leaves_the_dense_signal_out_of_the_split() -> None:
    """With MiniLM (built in the worker, the tools embedded through the cache) the split has a
    dense column; the method knob on bm25 takes it out (the same engine, the dense weight 0),
    and the shares are the engine's either way."""
    app = serve_app(embedder="local:all-MiniLM-L6-v2", query="")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _screen(app)
        await _until(pilot, lambda: screen.lab is not None and screen.lab.holo is not None)
        await pilot.press(*QUERY)
        await _until(pilot, lambda: screen.state.shown_query == QUERY)
        await settle(pilot)
        table = screen.query_one(RankingTable)
        lab = screen.lab
        assert lab is not None and lab.workspace.embedder.model_id is not None
        engine = _engine(screen, lab.workspace.embedder.embedder)  # the model, loaded once
        settings = HoloSettings(top_k=5, threshold=0.5, pins=("search_papers",))
        rows = _ranked(table)
        assert [part.name for part in rows[0].split] == ["dense", "lexical", "name"]
        _assert_split_matches(rows, engine, settings)
        assert shown(table).splitlines()[0].split()[-6:-2] == ["score", "dense", "lex", "name"]

        screen.state.edit("search_method", "bm25")
        await settle(pilot)
        rows = _ranked(table)
        weights = {**DEFAULT_WEIGHTS, "dense": 0.0}
        bm25 = HoloSettings(weights=weights, top_k=5, threshold=0.5, pins=("search_papers",))
        assert [part.name for part in rows[0].split] == ["lexical", "name"]
        _assert_split_matches(rows, engine, bm25)


async def test_holodecks_runtime_keeps_holodecks_ranking(tmp_path: Path) -> None:
    """The research agent as detected (HoloDeck 0.6): no split, no signal columns, the
    ranking HoloDeck's method."""
    app = research_app(tmp_path, query=QUERY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _screen(app)
        shown_now = screen.state.shown
        assert shown_now is not None and shown_now.ranking is not None
        assert shown_now.ranking.method != HOLO and shown_now.split is None
        assert not screen.query_one("#ranking-split").display
        table = screen.query_one(RankingTable)
        assert all(not row.split for row in _ranked(table))
        assert shown(table).splitlines()[0].split()[-3:] == ["score", "tok", "why"]
