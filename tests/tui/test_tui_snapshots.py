"""The main views pinned as SVG snapshots (pytest-textual-snapshot) at fixed sizes.

The research sample agent on its catalog snapshot with the embedder off: BM25 scores, no
network, no model, no timings on screen, so every run draws the same frame. Update with
``pytest tests/tui/test_tui_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_helpers import ENV, REPO, research_app, runtime_app, seven_agent

from workbench.tui.app import HoloTuneApp
from workbench.tui.dashboard.panels import CATALOG_MARKS_LAG
from workbench.tui.options import Options
from workbench.tui.screenshots import settle

QUERY = "find papers on transformers"
CASES = "research-agent.cases.yaml"
SnapCompare = Callable[..., bool]


def _after(*keys: str) -> Callable[[Pilot[Any]], Any]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        if keys:
            await pilot.press(*keys)
            await settle(pilot)

    return run_before


@pytest.mark.parametrize(
    ("view", "keys"),
    [
        ("query_lab", ("tab",)),
        ("compare", ("tab", "c")),
        ("write_back", ("tab", "right_square_bracket", "minus", "ctrl+s")),
        ("catalog", ("tab", "t")),
        ("help", ("tab", "question_mark")),
    ],
)
def test_view_120x36(
    snap_compare: SnapCompare,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    view: str,
    keys: tuple[str, ...],
) -> None:
    monkeypatch.chdir(tmp_path)
    app = research_app(tmp_path, query=QUERY, relative=True)
    assert snap_compare(app, terminal_size=(120, 36), run_before=_after(*keys))


def test_query_lab_80x24(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = research_app(tmp_path, query=QUERY)
    assert snap_compare(app, terminal_size=(80, 24), run_before=_after("tab"))


def test_error_screen(snap_compare: SnapCompare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the screen names the file as given: keep it relative
    app = HoloTuneApp(Options(agent=Path("tests/configs/bad_top_k.yaml"), environ={}))
    assert snap_compare(app, terminal_size=(120, 36), run_before=_after())


def test_compare_engines_120x36(
    snap_compare: SnapCompare, stackone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Compare-engines view after a run on every tenth stackone case (26: quick, and
    enough for five folds), the agent named relative so no machine path is drawn."""
    monkeypatch.chdir(tmp_path)
    shutil.copyfile(stackone / "agent.yaml", tmp_path / "agent.yaml")
    lines = (stackone / "cases.jsonl").read_text().splitlines()[::10]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    options = Options(
        agent=Path("agent.yaml"),
        catalog=stackone / "catalog.json",
        environ=ENV,
        show_timing=False,
    )

    async def run_before(pilot: Pilot[Any]) -> None:
        await _after("tab", "x")(pilot)
        await _after("enter")(pilot)

    assert snap_compare(HoloTuneApp(options), terminal_size=(120, 36), run_before=run_before)


def test_which_runtime_120x36(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "Which runtime?" view after a run on the research agent's 35 labelled cases (the
    file beside the agent), named relative so no machine path is drawn."""
    monkeypatch.chdir(tmp_path)
    app = research_app(tmp_path, query=QUERY, relative=True)
    shutil.copyfile(REPO / "sample_configs" / "research-agent.cases.yaml", tmp_path / CASES)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _after("tab", "w")(pilot)
        await _after("enter")(pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_ranking_with_labels_120x36(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query lab with the query labelled in the agent's cases file: ✓ on an expected tool
    the setting sends, ✗ and "missed" in red on one it does not, the summary on the status
    line, the marks in the catalog."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "research-agent.cases.yaml").write_text(
        "cases:\n"
        f"  - query: {QUERY}\n"
        "    expected: [search_papers, brave_web_search]\n"
        "    source: labelled\n"
    )
    app = research_app(tmp_path, query=QUERY, relative=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await _after("tab")(pilot)
        await pilot.pause(CATALOG_MARKS_LAG * 3)  # the catalog's marks follow the ranking's

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)


def test_write_refused_on_holodeck_07_120x36(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctrl+s on a HoloDeck 0.7 agent: the refusal, what to do instead and the allowlists'
    button, no Write button; the agent named relative so no machine path is drawn."""
    monkeypatch.chdir(tmp_path)
    agent = seven_agent(tmp_path)
    app = runtime_app(Path(agent.name))
    assert snap_compare(app, terminal_size=(120, 36), run_before=_after("tab", "ctrl+s"))


def test_write_a_runtimes_own_file_120x36(
    snap_compare: SnapCompare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ctrl+s under Claude Code: the runtime's own file planned for the knobs' setting (what is
    kept loaded, the diff of a new .mcp.json), the same dialog every runtime's Write opens; the
    agent named relative so no machine path is drawn."""
    monkeypatch.chdir(tmp_path)
    agent = research_app(tmp_path).options.agent
    text = agent.read_text().replace(
        "    - search_papers\n", "    - search_papers\n    - read_graph\n"
    )
    agent.write_text(text)
    app = runtime_app(Path(agent.name), runtime="claude-code")

    async def run_before(pilot: Pilot[Any]) -> None:
        await _after("tab", "ctrl+s")(pilot)
        await pilot.app.workers.wait_for_complete()
        await settle(pilot)

    assert snap_compare(app, terminal_size=(120, 36), run_before=run_before)
