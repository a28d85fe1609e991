"""The query lab under the serve runtime ranks with serve's own engine (HoloEngine) under the knobs
and shows each tool's score split by signal: a column per weighted signal, the highlighted tool's
raw values and shares under the table, and a query serve would refuse shown as such. Checked
against the engine itself, built here apart from the dashboard from the agent's block as written
(top_k 5, threshold 0.5, search_papers pinned). HoloDeck's runtimes keep HoloDeck's ranking."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.pilot import Pilot
from tui_helpers import ENV, SAMPLES, research_app, shown

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.settings import DEFAULT_WEIGHTS, HoloSettings
from workbench.tui.app import HoloTuneApp
from workbench.tui.lab import HOLO, HoloView
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screenshots import settle
from workbench.tui.view import CutRow, RankRow, holo_rows, split_text
from workbench.tui.widgets.ranking_table import SIGNAL_WIDTH, RankingTable, share_cell, widths_for

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


async def test_a_runtime_that_becomes_serve_ranks_with_serves_engine(tmp_path: Path) -> None:
    """The file read again names another runtime (here through the flag the detection gives
    way to): serve's engine is built in a worker and the query is ranked again with it; back
    to HoloDeck's runtime, HoloDeck's ranking again."""
    app = research_app(tmp_path, query=QUERY)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        state = _screen(app).state
        assert state.shown is not None and state.shown.split is None
        state.runtime_flag = "serve"
        state.reload(state.agent)
        await settle(pilot)
        assert state.lab is not None and state.lab.holo is not None
        assert state.shown is not None and state.shown.split is not None
        assert state.shown.ranking is not None and state.shown.ranking.method == HOLO
        state.runtime_flag = None
        state.reload(state.agent)
        await settle(pilot)
        assert state.shown.split is None and state.shown.ranking.method != HOLO


def test_serve_lab_160x48(
    snap_compare: Callable[..., bool], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query lab under serve at 160x48, the threshold lowered to 0.30 so serve answers:
    the signal columns, the cut lines, the highlighted tool's split under the table; the agent
    named relative so no machine path is drawn."""
    monkeypatch.chdir(tmp_path)
    options = replace(research_app(tmp_path, query=QUERY, relative=True).options, runtime="serve")

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("tab", "underscore", "underscore", "down")
        await settle(pilot)

    assert snap_compare(HoloTuneApp(options), terminal_size=SIZE, run_before=run_before)


# -- the rows and widths, without a terminal -------------------------------------------------------


def _tool(server: str, name: str, description: str) -> Tool:
    definition = {"name": name, "description": description, "inputSchema": {"type": "object"}}
    return Tool(
        full_name=f"{server}-{name}",
        plugin=server,
        name=name,
        description=description,
        parameters=(),
        kind="mcp",
        definition=definition,
    )


FILES = Catalog(
    tools=[
        _tool("files", "read_file", "Read the contents of a file"),
        _tool("files", "write_file", "Write text to a file"),
        _tool("files", "list_directory", "List the entries of a folder"),
        _tool("web", "fetch", "Fetch a URL and return its contents as markdown"),
        _tool("web", "search", "Search the web"),
    ],
    servers=[ServerStatus(s, "snapshot", "snapshot") for s in ("files", "web")],
)


def _view(query: str, settings: HoloSettings, pins: tuple[int, ...] = ()) -> HoloView:
    engine = HoloEngine(FILES, np.array([50.0, 60.0, 40.0, 300.0, 80.0]))
    signals = engine.signals(query)
    return HoloView(
        engine.search(query, settings), settings, pins, dict(signals.raw), signals.confidence_of
    )


def test_holo_rows_cut_at_top_k_and_where_the_evidence_ends() -> None:
    view = _view("read or write a file", HoloSettings(top_k=1), pins=(4,))
    rows = holo_rows(view, FILES, [50, 60, 40, 300, 80])
    labels = [(i, r.label) for i, r in enumerate(rows) if isinstance(r, CutRow)]
    ranked = [r for r in rows if isinstance(r, RankRow)]
    assert [r.tool for r in ranked[:2]] == ["files-read_file", "files-write_file"]
    found = int(view.result.ranking.found.size)
    assert labels[0] == (1, "top_k 1")
    assert labels[-1] == (found + 1, "no evidence below (no word in common)")
    assert ranked[0].reason == "search" and ranked[1].reason is None
    assert next(r for r in ranked if r.index == 4).reason == "always_include"  # the pin
    assert ranked[0].fill == 1.0 and min(r.fill or 0.0 for r in ranked) == 0.0
    assert split_text(ranked[0]).startswith(f"read_file {ranked[0].score:.3f} = lexical ")


def test_holo_rows_say_when_no_tool_fits() -> None:
    refused = _view("read a poem", HoloSettings(threshold=0.9))  # half the words: under 0.9
    assert refused.refused
    first = holo_rows(refused, FILES, [1] * 5)[0]
    assert isinstance(first, CutRow)
    assert first.label == "no tool fits · confidence 0.50 < threshold 0.90"
    nothing = _view("quantum chromodynamics", HoloSettings())
    label = holo_rows(nothing, FILES, [1] * 5)[0]
    assert isinstance(label, CutRow) and label.label.endswith(
        "no tool shares a word with the query"
    )


def test_signal_columns_fit_the_table_and_drop_the_server_when_tight() -> None:
    signals = ("dense", "lexical", "name")
    for total in (60, 80, 100, 160):
        w = widths_for(total, 2, 12, signals, 6)
        used = w.rank + w.mark + w.tool + w.server + w.score + w.tokens + w.why
        assert used + SIGNAL_WIDTH * len(signals) == total - 1 or w.tool == 12
    wide, middle, narrow = (widths_for(t, 2, 12, signals, 6) for t in (100, 80, 70))
    assert (wide.server, wide.bar) == (12, 5)
    assert (middle.server, middle.bar) == (10, 0)  # the bar steps aside first
    assert (narrow.server, narrow.bar) == (0, 0)  # then the server: the name keeps its room
    assert min(middle.tool, narrow.tool) >= 20
    assert widths_for(70).server == 10  # without signals: as before
    assert [share_cell(s) for s in (1.234, -0.04, 123.4, None)] == [
        " +1.2 ",
        " -0.0 ",
        " +123 ",
        "      ",
    ]


async def test_the_serve_lab_ranks_under_the_settings_serve_runs(tmp_path: Path) -> None:
    """The client's entry starts serve with a settings file (the weights of a fit: names only,
    lexical off): the lab ranks under those weights with the knobs over them, as the Write and
    ``export`` build on them, not under the engine's defaults (it did before)."""
    import json

    from workbench.runtimes.serve import SETTINGS_FILE
    from workbench.search.holo.knobs import knob_settings

    agent = research_app(tmp_path).options.agent
    fitted = HoloSettings(weights={**DEFAULT_WEIGHTS, "lexical": 0.0, "name": 1.0, "server": 1.0})
    settings_file = tmp_path / SETTINGS_FILE
    settings_file.write_text(json.dumps(fitted.to_json()))
    entry = ["serve", str(agent), "--settings", str(settings_file)]
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"holo-tune": {"command": "holo-tune", "args": entry}}})
    )
    app = serve_app(agent=agent)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _screen(app)
        lab = screen.lab
        assert lab is not None and lab.holo is not None
        engine = _engine(screen)
        knobs = knob_settings(lab.setting, fitted)
        assert lab.holo_settings() == knobs
        rows = _ranked(screen.query_one(RankingTable))
        _assert_split_matches(rows, engine, knobs)
        defaults = engine.rank(QUERY, knob_settings(lab.setting))
        assert [row.index for row in rows] != [int(i) for i in defaults.order]
