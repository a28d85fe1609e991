"""The dashboard driven like a user drives it (Pilot), asserting on what the widgets show."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, Label, Select, Switch
from tui_helpers import ENV, SAMPLES, broken_server_app, research_app, shown, snapshot_app

from workbench.catalog import ServerStatus
from workbench.config import load_agent
from workbench.tui.app import HoloTuneApp
from workbench.tui.options import Options
from workbench.tui.screens.dashboard import DashboardScreen
from workbench.tui.screens.error import ErrorScreen
from workbench.tui.screens.help import HELP
from workbench.tui.screens.server_log import ServerLogScreen
from workbench.tui.screenshots import settle
from workbench.tui.view import CutRow, RankRow
from workbench.tui.widgets.compare_view import CompareView
from workbench.tui.widgets.findings_list import FindingsList
from workbench.tui.widgets.history_list import HistoryList
from workbench.tui.widgets.knobs_panel import KnobsPanel
from workbench.tui.widgets.number_knob import NumberKnob
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.servers_panel import ServersPanel
from workbench.tui.widgets.token_bars import TokenBars

SIZE = (120, 36)


def _ranked(app: HoloTuneApp) -> list[RankRow]:
    rows = app.screen.query_one(RankingTable).rows_shown
    return [r for r in rows if isinstance(r, RankRow)]


def _sent(app: HoloTuneApp) -> dict[str, str]:
    return {r.tool: str(r.reason) for r in _ranked(app) if r.reason is not None}


def _dashboard(app: HoloTuneApp) -> DashboardScreen:
    screen = app.screen
    assert isinstance(screen, DashboardScreen)
    return screen


async def _type(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press(*text)
    await settle(pilot)


async def test_typing_a_query_ranks_the_catalog(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _dashboard(stackone_app)
        assert screen.focused is screen.query_one("#query", Input)
        await _type(pilot, "list job applications")
        lab = screen.lab
        assert lab is not None
        expected = lab.workspace.engine.rank("list job applications", "bm25")
        top = lab.workspace.catalog.tools[int(expected.order[0])].full_name
        rows = _ranked(stackone_app)
        assert rows[0].tool == top == "ats-ats_list_applications"
        assert rows[0].rank == 1 and rows[0].reason == "search"
        table = screen.query_one(RankingTable)
        first = shown(table).splitlines()[1]
        rank, tool = first.split()[:2]
        # clipped to its column in the middle: the start and the end of the name stay
        head, _, tail = tool.partition("…")
        assert rank == "1" and tail and tool == f"{head}…{tail}"
        assert "ats_list_applications".startswith(head) and "ats_list_applications".endswith(tail)
        cuts = [r.label for r in table.rows_shown if isinstance(r, CutRow)]
        assert cuts == ["top_k 5", "threshold 0.30"]
        assert len(_sent(stackone_app)) == 5
        bill = screen.query_one(TokenBars).bill
        assert bill is not None and bill.chosen == 5 and bill.encoding == "o200k_base"
        assert bill.sent == lab.workspace.tokens.total(list(lab.select(expected).indices))


async def test_top_k_slider_and_input_change_the_selection(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type(pilot, "list job applications")
        knob = stackone_app.screen.query_one("#knob-top-k", NumberKnob)
        knob.slider.focus()
        await pilot.press("right", "right")
        await settle(pilot)
        assert len(_sent(stackone_app)) == 7
        assert knob.has_class("-changed") and knob.input.value == "7"
        knob.input.focus()
        knob.input.value = ""
        await _type(pilot, "3")
        assert len(_sent(stackone_app)) == 3
        assert knob.slider.value == 3
        bill = stackone_app.screen.query_one(TokenBars).bill
        assert bill is not None and bill.chosen == 3


async def test_threshold_keys_move_the_cut(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type(pilot, "list job applications")
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("asterisk", "asterisk", "asterisk")  # +0.1 three times: 0.60
        await settle(pilot)
        knob = stackone_app.screen.query_one("#knob-threshold", NumberKnob)
        assert knob.value == 0.6 and knob.input.value == "0.60"
        sent = _ranked(stackone_app)
        assert all(r.score >= 0.6 for r in sent if r.reason == "search")
        cuts = [
            r.label
            for r in stackone_app.screen.query_one(RankingTable).rows_shown
            if isinstance(r, CutRow)
        ]
        assert cuts[-1] == "threshold 0.60"
        before = len(_sent(stackone_app))
        await pilot.press("asterisk", "asterisk")  # 0.80: fewer tools pass
        await settle(pilot)
        assert len(_sent(stackone_app)) < before


async def test_method_cycles_and_enabled_switch_sends_everything(tmp_path: Path) -> None:
    app = research_app(tmp_path, query="find papers on transformers")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = _dashboard(app)
        select: Select[str] = screen.query_one("#knob-method", Select)
        assert select.value == "semantic"
        banner = str(screen.query_one("#banner").render())
        assert "BM25" in banner
        screen.query_one(RankingTable).focus()
        await pilot.press("m")
        await settle(pilot)
        assert select.value == "bm25"
        assert screen.lab is not None and screen.lab.setting.search_method == "bm25"
        assert "bm25 scored by BM25" in str(screen.query_one("#lab-status").render())
        await pilot.press("m")
        await settle(pilot)
        assert select.value == "hybrid"
        assert "hybrid" in str(screen.query_one("#lab-status").render())
        switch = screen.query_one("#knob-enabled", Switch)
        assert switch.value is True
        state = screen.query_one("#enabled-state", Label)
        assert str(state.render()) == "on"
        switch.focus()
        await pilot.press("enter")
        await settle(pilot)
        bill = screen.query_one(TokenBars).bill
        assert bill is not None and not bill.filtering
        assert bill.chosen == 18 and bill.sent == bill.all
        assert str(state.render()) == "off: sends all"  # said in words, not only a colour
        await pilot.press("ctrl+r")  # back to the file's block
        await settle(pilot)
        assert switch.value is True and str(state.render()) == "on"


async def test_top_n_used_adds_the_first_catalog_tools(tmp_path: Path) -> None:
    app = research_app(tmp_path, query="find papers on transformers")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert list(_sent(app).values()).count("top_n_used") == 2  # 3 minus search_papers
        knob = app.screen.query_one("#knob-top-n", NumberKnob)
        knob.slider.focus()
        await pilot.press("home")
        await settle(pilot)
        assert "top_n_used" not in _sent(app).values()
        await pilot.press("right", "right", "right", "right")
        await settle(pilot)
        reasons = _sent(app)
        assert list(reasons.values()).count("top_n_used") == 3
        assert reasons["vectorstore-search_papers"] == "always_include"
        assert len(reasons) == 5


async def test_a_toggles_always_include_from_the_ranking(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type(pilot, "list job applications")
        table = stackone_app.screen.query_one(RankingTable)
        table.focus()
        target = _ranked(stackone_app)[7]
        assert target.reason is None
        table.move_to(target.tool)
        await pilot.press("a")
        await settle(pilot)
        assert _sent(stackone_app)[target.tool] == "always_include"
        knobs = stackone_app.screen.query_one(KnobsPanel)
        always = knobs.query_one("#knob-always")
        assert always.has_class("-changed") and target.tool in str(always.render())
        assert len(_sent(stackone_app)) == 5  # top_k counts the always-included tool
        await pilot.press("a")
        await settle(pilot)
        assert target.tool not in _sent(stackone_app)
        assert not always.has_class("-changed")


async def test_the_ranking_cursor_starts_on_rank_one_and_a_toggles_what_it_shows(
    tmp_path: Path,
) -> None:
    """The cut rows are never the cursor: Tab lands on rank 1, ↓ on rank 2 (over a cut), `a`
    toggles exactly the highlighted tool, and a re-ranking keeps the cursor on its tool."""
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type(pilot, "search the web for news")
        await pilot.press("tab")
        await settle(pilot)
        table = app.screen.query_one(RankingTable)
        assert app.screen.focused is table
        first, second, third = _ranked(app)[:3]
        assert isinstance(table.rows_shown[2], CutRow)  # top_k's cut sits between 2 and 3
        assert table.highlighted_tool() == first.tool
        assert shown(table).splitlines()[1 + table.cursor].split()[0] == "1"
        await pilot.press("a")
        await settle(pilot)
        lab = _dashboard(app).lab
        assert lab is not None and first.tool in lab.setting.always_include
        await pilot.press("down")
        assert table.highlighted_tool() == second.tool
        await pilot.press("down")  # over the cut row
        assert table.highlighted_tool() == third.tool
        await pilot.press("a")
        await settle(pilot)
        assert third.tool in lab.setting.always_include
        assert second.tool not in lab.setting.always_include
        assert table.highlighted_tool() == third.tool  # re-selected: still on its tool
        await pilot.press("right_square_bracket", "right_square_bracket")
        await settle(pilot)
        assert table.highlighted_tool() == third.tool
        await pilot.press("slash", "backspace", "backspace", "x", "tab")  # a new query
        await settle(pilot)
        key = table.highlighted_tool()
        assert key is not None and key == _ranked(app)[0].tool


async def test_findings_follow_every_setting_change_including_revert(tmp_path: Path) -> None:
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "d")
        await settle(pilot)
        findings = app.screen.query_one("#findings", FindingsList)
        assert "always_include_top_n_used: 3" in shown(findings)
        await pilot.press("n", "n")
        await settle(pilot)
        assert "always_include_top_n_used: 5" in shown(findings)
        await pilot.press("ctrl+r")  # back to the file's values
        await settle(pilot)
        text = shown(findings)
        assert "always_include_top_n_used: 3" in text and "top_n_used: 5" not in text


async def test_compare_view_shows_three_methods(tmp_path: Path) -> None:
    app = research_app(tmp_path, query="find papers on transformers")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab")  # out of the query, so `c` is a key, not a letter
        await pilot.press("c")
        await settle(pilot)
        view = app.screen.query_one(CompareView)
        lab = _dashboard(app).lab
        assert lab is not None
        for method in ("semantic", "bm25", "hybrid"):
            column = view.column(method)
            tools = column.tools()
            expected = lab.workspace.engine.rank("find papers on transformers", method)
            names = [lab.workspace.catalog.tools[int(i)].full_name for i in expected.order[:3]]
            assert tools[:3] == names
        title = str(view.column("semantic").query_one(".compare-title").render())
        assert "= BM25" in title


async def test_write_back_confirm_writes_and_keeps_a_backup(stackone_app: HoloTuneApp) -> None:
    path = stackone_app.options.agent
    before = path.read_bytes()
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("right_square_bracket", "right_square_bracket")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        diff = shown(stackone_app.screen.query_one("#writeback-diff"))
        assert "-  top_k: 5" in diff and "+  top_k: 7" in diff
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(stackone_app.screen, DashboardScreen)
        knob = stackone_app.screen.query_one("#knob-top-k", NumberKnob)
        assert not knob.has_class("-changed")
    after = path.read_bytes()
    assert after == before.replace(b"top_k: 5", b"top_k: 7")
    backups = [p for p in path.parent.iterdir() if p.name != path.name and p.suffix != ".json"]
    assert any(p.read_bytes() == before for p in backups)
    agent = load_agent(path)
    assert agent.filtering is not None and agent.filtering.top_k == 7


async def test_write_back_cancel_leaves_the_file_alone(stackone_app: HoloTuneApp) -> None:
    path = stackone_app.options.agent
    before = path.read_bytes()
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stackone_app.screen.query_one(RankingTable).focus()
        await pilot.press("minus")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        diff = shown(stackone_app.screen.query_one("#writeback-diff"))
        assert "+  similarity_threshold: 0.29" in diff
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(stackone_app.screen, DashboardScreen)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["agent.yaml"]


async def test_a_failed_server_shows_its_error_while_the_others_work(tmp_path: Path) -> None:
    app = broken_server_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(ServersPanel)
        states = {s.name: s.state for s in panel.statuses}
        assert states == {"memory": "ok", "missing": "error", "filesystem": "ok"}
        lines = [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]
        missing = next(line for line in lines if "missing" in line)
        assert missing.startswith("✗") and "holo-tune-no-such-server" in missing
        header = str(app.screen.query_one("#header").render())
        assert "2/3 servers ok" in header and "10 tools" in header


async def test_a_server_the_snapshot_lacks_is_shown_as_such_and_never_started(
    tmp_path: Path, tag: str, find_processes: Callable[[str], list[int]]
) -> None:
    """--catalog starts no process: `missing` is listed "not in the snapshot", left out of the
    catalog, and `r` does not start it either."""
    app = snapshot_app(tmp_path, tag)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(ServersPanel)
        states = {s.name: s.state for s in panel.statuses}
        assert states == {"memory": "snapshot", "missing": "absent", "filesystem": "snapshot"}
        lines = [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]
        assert "○ missing  not in the snapshot" in lines
        header = str(app.screen.query_one("#header").render())
        assert "2/3 servers ok" in header and "10 tools" in header
        lab = _dashboard(app).lab
        assert lab is not None and not lab.workspace.catalog.tools_of("missing")
        panel.focus()
        panel.highlighted = [s.name for s in panel.statuses].index("missing")
        await pilot.press("r")
        await settle(pilot)
        messages = [n.message for n in app._notifications]
        assert any("starts no server" in m for m in messages), messages
        assert find_processes(tag) == []


def _bill_rows(bars: TokenBars) -> dict[str, tuple[int, int]]:
    """The panel's ``name sent/all`` rows as drawn."""
    rows = {}
    for line in shown(bars).splitlines():
        body = line.strip("│ ")
        name, _, numbers = body.rpartition(" ")
        if "/" in numbers and name.strip():
            sent, _, all_ = numbers.partition("/")
            rows[name.strip()] = (int(sent.replace(",", "")), int(all_.replace(",", "")))
    return rows


async def test_token_panel_shows_every_server_and_the_framing_so_the_rows_add_up(
    tmp_path: Path,
) -> None:
    """broken-server.yaml with filtering off: the panel grows with its lines (none wraps), every
    server has its row, and the format's fixed framing is a row of its own."""
    app = broken_server_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bars = app.screen.query_one(TokenBars)
        bill = bars.bill
        assert bill is not None
        text = shown(bars)
        assert "-0%" not in text and "filtering off" in text
        rows = _bill_rows(bars)
        assert set(rows) == {"memory", "filesystem", "framing"}
        lab = _dashboard(app).lab
        assert lab is not None and rows["framing"] == (lab.workspace.tokens.overhead,) * 2
        assert sum(sent for sent, _ in rows.values()) == bill.sent
        assert sum(all_ for _, all_ in rows.values()) == bill.all
        await pilot.press("tab", "e")  # filtering on: no query yet, so nothing saved
        await settle(pilot)
        assert "filtering off" not in shown(bars) and "%" not in shown(bars)
        await pilot.press("slash", *"read a file")
        await settle(pilot)
        bill = bars.bill
        assert bill is not None and bill.sent < bill.all
        assert "% tokens" in shown(bars)
        assert sum(sent for sent, _ in _bill_rows(bars).values()) == bill.sent


async def test_server_log_and_reconnect_work_outside_the_servers_list(tmp_path: Path) -> None:
    """`l` and `r` act on the highlighted server from the ranking too; the palette's
    "Server log…" asks which server; the log wraps its long lines."""
    app = broken_server_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(ServersPanel)
        panel.highlighted = [s.name for s in panel.statuses].index("missing")
        await pilot.press("tab")  # the ranking has focus, not the servers list
        await pilot.press("l")
        await settle(pilot)
        assert isinstance(app.screen, ServerLogScreen) and app.screen.status.name == "missing"
        await pilot.press("escape")
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, DashboardScreen)
        messages = [n.message for n in app._notifications]
        assert "Listing missing again…" in messages
        panel.highlighted = [s.name for s in panel.statuses].index("memory")
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Server log")
        await pilot.pause(0.5)
        await pilot.press("enter")  # the palette asks which: the highlighted server first
        await pilot.pause(0.5)
        await pilot.press(*"filesystem")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ServerLogScreen) and app.screen.status.name == "filesystem"


async def test_server_log_wraps_long_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    tail = "the-end-of-a-very-long-line"
    log.write_text("Error: " + "x" * 250 + " " + tail + "\n")
    status = ServerStatus("web", "stdio", state="error", error="exited", log_path=log)
    app = research_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(ServerLogScreen(status))
        await settle(pilot)
        await pilot.pause(0.2)
        body = shown(app.screen.query_one("#log-body"))
        assert tail in body and "Error:" in body


async def test_a_broken_config_shows_the_error_screen_and_exits_2(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: broken\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n"
        "  inline: Help.\ntool_filtering:\n  enabled: true\n  top_k: 99\n"
    )
    app = HoloTuneApp(Options(agent=agent, environ={}))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        detail = str(app.screen.query_one("#error-detail").render())
        assert "agent.yaml" in detail and "line  9" in detail and "top_k" in detail
        await pilot.press("q")
    assert app.return_code == 2


@pytest.mark.parametrize(
    ("flag", "content", "said"),
    [
        ("catalog", '{"garbage', "not JSON"),
        ("catalog", None, "no such file"),
        ("usage", '{"memory-read_graph": -5}', "count must be a whole number >= 0"),
        ("embedder", "local:no-such-model", "neither a folder nor in the Hugging Face cache"),
        ("HOLO_TUNE_EMBEDDER", "bogus:xyz", "HOLO_TUNE_EMBEDDER"),
    ],
    ids=["catalog-garbage", "catalog-missing", "usage-negative", "embedder-missing", "env"],
)
async def test_a_bad_file_or_flag_shows_the_error_screen_and_exits_2(
    tmp_path: Path, flag: str, content: str | None, said: str
) -> None:
    """Before, the dashboard opened without a catalog (a status line cut short) and quit with
    exit code 0; the CLI refused the same input in one line, exit 2."""
    agent = tmp_path / "research-agent.yaml"
    shutil.copyfile(SAMPLES / "research-agent.yaml", agent)
    options: dict[str, Any] = {"catalog": SAMPLES / "research-agent.catalog.json"}
    if flag == "embedder":
        options["embedder"] = content
    elif flag == "HOLO_TUNE_EMBEDDER":
        options["environ"] = {**ENV, flag: content}
    else:
        path = tmp_path / f"{flag}.json"
        if content is not None:
            path.write_text(content)
        options[flag] = path
    app = HoloTuneApp(Options(agent=agent, **{"environ": ENV, **options}))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        detail = str(app.screen.query_one("#error-detail").render())
        assert said in " ".join(detail.split())
        title = str(app.screen.query_one("#error-title").render())
        option = flag in ("embedder", "HOLO_TUNE_EMBEDDER")
        assert title == ("An option does not work" if option else f"{flag}.json does not load")
        await pilot.press("q")
    assert app.return_code == 2


async def test_history_reruns_a_query(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type(pilot, "list job applications")
        await pilot.press("enter")
        await pilot.press("slash")
        screen = _dashboard(stackone_app)
        screen.query_one("#query", Input).value = ""
        await _type(pilot, "create an employee")
        await pilot.press("enter", "h")
        await settle(pilot)
        history = screen.query_one("#history")
        assert [str(history.get_option_at_index(i).prompt).strip() for i in range(2)] == [
            "create an employee",
            "list job applications",
        ]
        await pilot.press("end", "enter")  # the older query
        await settle(pilot)
        assert screen.query_text == "list job applications"
        assert screen.shown_query == "list job applications"
        assert _ranked(stackone_app)[0].tool == "ats-ats_list_applications"


async def test_history_says_how_a_query_gets_there(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type(pilot, "list job applications")
        await pilot.press("tab", "h")  # typed, never submitted: nothing kept
        await settle(pilot)
        history = _dashboard(stackone_app).query_one(HistoryList)
        text = shown(history)
        assert "No queries yet" in text and "Enter in the query keeps it here" in text
        await pilot.press("enter")  # on the hint: nothing to run
        await settle(pilot)
        await pilot.press("slash", "enter", "h")
        await settle(pilot)
        assert history.queries == ["list job applications"]
        assert "No queries yet" not in shown(history)
        assert "list job applications" in shown(history)
    assert "Enter in the query keeps it" in HELP


async def test_export_shows_and_copies_the_block(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "right_square_bracket", "ctrl+e")
        await settle(pilot)
        block = shown(stackone_app.screen.query_one("#export-block"))
        assert "top_k: 6" in block and "search_method: bm25" in block
        assert "top_k: 6" in stackone_app.clipboard
        assert stackone_app.clipboard.startswith("tool_filtering:")


async def test_command_palette_runs_a_dashboard_action(stackone_app: HoloTuneApp) -> None:
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Method: hybrid")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await settle(pilot)
        screen = _dashboard(stackone_app)
        assert screen.lab is not None and screen.lab.setting.search_method == "hybrid"
        assert screen.query_one("#knob-method", Select).value == "hybrid"


async def test_write_back_refusal_is_shown_in_place(stackone_app: HoloTuneApp) -> None:
    path = stackone_app.options.agent
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "right_square_bracket", "ctrl+s")
        await settle(pilot)
        edited = path.read_text() + "# edited elsewhere\n"
        path.write_text(edited)  # the file changes after the diff was made
        await pilot.press("y")
        await settle(pilot)
        screen = stackone_app.screen
        assert not isinstance(screen, DashboardScreen)  # still the write-back modal
        error = shown(screen.query_one("#writeback-error"))
        assert "✗" in error and "changed" in error
    assert path.read_text() == edited


async def test_a_refused_write_offers_reload_then_writes_over_the_new_file(
    stackone_app: HoloTuneApp,
) -> None:
    path = stackone_app.options.agent
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("tab", "right_square_bracket", "ctrl+s")
        await settle(pilot)
        path.write_text(path.read_text() + "# edited elsewhere\n")
        await pilot.press("y")
        await settle(pilot)
        screen = stackone_app.screen
        assert not screen.query_one("#writeback-write", Button).display
        reload = screen.query_one("#writeback-reload-button", Button)
        assert reload.display
        assert "r reads the file again" in shown(screen.query_one("#writeback-error"))
        await pilot.press("r")  # read the file again: a new diff, the knobs kept
        await settle(pilot)
        screen = stackone_app.screen
        assert not isinstance(screen, DashboardScreen)
        assert screen.query_one("#writeback-write", Button).display
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(stackone_app.screen, DashboardScreen)
    text = path.read_text()
    assert "# edited elsewhere" in text and "top_k: 6" in text


async def test_write_back_refuses_a_file_changed_since_the_app_read_it(
    stackone_here: HoloTuneApp,
) -> None:
    """The refusal names the agent's file: relative here, so it wraps the same whatever the
    length of the test's folder."""
    stackone_app = stackone_here
    path = stackone_app.options.agent
    async with stackone_app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        edited = path.read_text() + "# edited in another editor\n"
        path.write_text(edited)  # before the diff is even made
        await pilot.press("tab", "right_square_bracket", "ctrl+s")
        await settle(pilot)
        screen = stackone_app.screen
        assert not isinstance(screen, DashboardScreen)
        assert "changed on disk" in shown(screen.query_one("#writeback-error"))
        assert not screen.query_one("#writeback-write", Button).display
    assert path.read_text() == edited
