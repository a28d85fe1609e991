"""How each panel follows the lab's state: one small subscription per panel.

Every ``bind_*`` function subscribes a widget to the :class:`LabState` attributes it draws
(``widget.watch(state, name, draw)``: the subscription ends with the widget) and turns the
state into what the widget is given (rows, a bill, a shape). Widgets stay state-free: they draw
what they are given and post messages for what the user asks. Watchers run synchronously when
the state changes, on the UI thread: a keystroke's ranking is drawn in the step it arrives in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from textual.dom import DOMNode
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import TabbedContent

from workbench.config.filtering import SEARCH_METHODS
from workbench.search.selection import match_always_include, select
from workbench.tui.dashboard.marks import expected_indices
from workbench.tui.dashboard.runtime import knobs_note, runtime_text
from workbench.tui.dashboard.state import LabState, Shown
from workbench.tui.view import RankRow, holo_rows, ranking_rows, server_tokens, split_text
from workbench.tui.widgets.banner import Banner
from workbench.tui.widgets.catalog_table import CatalogTable
from workbench.tui.widgets.compare_view import CompareView, column_title
from workbench.tui.widgets.findings_list import FindingsList
from workbench.tui.widgets.header_bar import HeaderBar, HeaderInfo
from workbench.tui.widgets.history_list import HistoryList
from workbench.tui.widgets.knobs_panel import KnobsPanel
from workbench.tui.widgets.ranking_table import RankingTable
from workbench.tui.widgets.score_strip import ScoreShape, ScoreStrip
from workbench.tui.widgets.servers_panel import ServersPanel
from workbench.tui.widgets.status_line import DetailLine, StatusLine
from workbench.tui.widgets.token_bars import TokenBars, TokenBill

#: Rows of the ranking table (the rest of a 10,000-tool ranking is not drawn).
RANKING_ROWS = 50
COMPARE_ROWS = 25
#: The catalog's label marks follow the ranking's this much later (seconds).
CATALOG_MARKS_LAG = 0.05


def bind_panels(screen: Screen[None], state: LabState) -> None:
    """Subscribe every panel of the dashboard to ``state``."""
    bind_header(screen.query_one(HeaderBar), state)
    bind_servers(screen.query_one(ServersPanel), state)
    for table in screen.query(CatalogTable):
        bind_catalog(table, state)
    bind_knobs(screen.query_one(KnobsPanel), state)
    ranking = screen.query_one(RankingTable)
    bind_ranking(ranking, state)
    bind_split(screen.query_one("#ranking-split", DetailLine), ranking, state)
    bind_bill(screen.query_one(TokenBars), state)
    bind_scores(screen.query_one(ScoreStrip), state)
    bind_compare(screen.query_one(CompareView), state)
    tabs = screen.query_one(TabbedContent)
    bind_findings(screen.query_one("#findings", FindingsList), tabs, state)
    bind_catalog_findings(screen.query_one("#catalog-findings", FindingsList), tabs, state)
    bind_query_findings(screen.query_one("#query-findings", FindingsList), state)
    bind_history(screen.query_one(HistoryList), state)
    bind_status(screen.query_one("#lab-status", StatusLine), state)
    bind_banner(screen.query_one(Banner), state)


def _on(widget: DOMNode, state: LabState, names: Sequence[str], draw: Callable[[], None]) -> None:
    """Call ``draw`` whenever any of ``names`` changes on ``state``."""
    for name in names:
        widget.watch(state, name, draw, init=False)


def bind_header(header: HeaderBar, state: LabState) -> None:
    def draw() -> None:
        header.show(header_info(state))

    _on(header, state, ("agent", "runtime", "servers", "lab"), draw)
    draw()


def header_info(state: LabState) -> HeaderInfo:
    """agent · model · runtime (why), and once the workspace is open its encoding, embedder and
    tool count."""
    agent, servers = state.agent.agent, state.servers
    info = HeaderInfo(
        agent=agent.name,
        model=f"{agent.model.provider}:{agent.model.name}",
        servers_ok=servers.ok,
        servers=len(servers.statuses),
        runtime=runtime_text(state.runtime),
        runtime_elsewhere=not state.runtime.reads_tool_filtering,
    )
    if state.lab is None:
        return info
    ws = state.lab.workspace
    return HeaderInfo(
        agent=info.agent,
        model=info.model,
        encoding=ws.tokens.encoding,
        exact=ws.tokens.exact,
        servers_ok=info.servers_ok,
        servers=info.servers,
        tools=len(ws.catalog),
        embedder=ws.embedder.model_id or "bm25 only",
        runtime=info.runtime,
        runtime_elsewhere=info.runtime_elsewhere,
    )


def bind_servers(panel: ServersPanel, state: LabState) -> None:
    def draw() -> None:
        panel.set_servers(list(state.servers.statuses), state.servers.tokens)

    _on(panel, state, ("servers",), draw)


def bind_catalog(table: CatalogTable, state: LabState) -> None:
    """The tools with their tokens; ★ on those always_include resolves to; ✓/✗ on the query's
    expected tools (sent or missed by the ranking on screen)."""

    def fill() -> None:
        if state.lab is not None:
            table.set_catalog(state.lab.workspace.catalog, state.lab.workspace.tokens.per_tool)

    def mark() -> None:
        if state.lab is not None:
            catalog = state.lab.workspace.catalog
            found = (match_always_include(catalog, e) for e in state.setting.always_include)
            table.set_always(frozenset(catalog.tools[i].full_name for i in found if i is not None))

    later: list[Timer] = []

    def label(shown: Shown | None) -> None:
        if shown is None:
            return
        tools = shown.lab.workspace.catalog.tools
        found = state.marks(shown.selection)
        marks = {tools[i].full_name: m == "sent" for i, m in found.items()}
        while later:
            later.pop().stop()
        if table.has_focus:  # labelling in this table
            table.set_labels(marks)
        else:  # a DataTable draws all its rows again for one cell: after the ranking's frame
            later.append(table.set_timer(CATALOG_MARKS_LAG, partial(table.set_labels, marks)))

    _on(table, state, ("lab",), fill)
    _on(table, state, ("setting",), mark)
    table.watch(state, "shown", label, init=False)


def bind_knobs(knobs: KnobsPanel, state: LabState) -> None:
    def draw() -> None:
        knobs.show(state.setting, state.file_setting)

    def note() -> None:
        knobs.note(knobs_note(state.runtime))

    _on(knobs, state, ("setting", "file_setting"), draw)
    _on(knobs, state, ("runtime",), note)
    note()


def bind_ranking(table: RankingTable, state: LabState) -> None:
    """The ranking on screen, its cut lines, and ✓/✗ on the query's expected tools (a label
    changed announces ``shown`` again, so the marks follow it in the same step)."""

    def draw(shown: Shown | None) -> None:
        if shown is None:
            return
        if shown.ranking is None or shown.selection is None:
            table.show([])
            return
        ws = shown.lab.workspace
        if shown.split is not None:
            table.show(
                holo_rows(
                    shown.split,
                    ws.catalog,
                    ws.tokens.per_tool,
                    limit=RANKING_ROWS,
                    expected=state.marks(shown.selection),
                ),
                follow=shown.follow,
            )
            return
        rows = ranking_rows(
            shown.ranking,
            shown.selection,
            ws.catalog,
            ws.tokens.per_tool,
            shown.setting,
            limit=RANKING_ROWS,
            expected=state.marks(shown.selection),
        )
        table.show(rows, follow=shown.follow)

    table.watch(state, "shown", draw, init=False)


def bind_split(line: DetailLine, table: RankingTable, state: LabState) -> None:
    """Under serve's engine, the line under the ranking: the highlighted tool's score split by
    signal, each signal's raw value and share (hidden under HoloDeck's ranking). Bound after
    the ranking, so it reads the rows just drawn."""

    def draw() -> None:
        rows = [row for row in table.rows_shown if isinstance(row, RankRow) and row.split]
        line.display = bool(rows)
        if not rows:
            return
        key = table.highlighted_tool()
        row = next((r for r in rows if r.tool == key), rows[0])
        line.text = split_text(row)

    line.watch(state, "shown", lambda _: draw(), init=False)
    line.watch(table, "cursor", lambda _: draw(), init=False)
    line.display = False


def bind_bill(bars: TokenBars, state: LabState) -> None:
    def draw(shown: Shown | None) -> None:
        bars.bill = None if shown is None else token_bill(shown)

    bars.watch(state, "shown", draw, init=False)


def token_bill(shown: Shown) -> TokenBill:
    """All tools against what the selection sends (every tool with no query or filtering off)."""
    ws, setting = shown.lab.workspace, shown.setting
    if shown.selection is None or not (setting.enabled or shown.split is not None):
        chosen: Sequence[int] = range(len(ws.catalog))
    else:
        chosen = shown.selection.indices
    return TokenBill(
        all=ws.tokens.all,
        sent=ws.tokens.total(list(chosen)),
        encoding=ws.tokens.encoding,
        exact=ws.tokens.exact,
        tools=len(ws.catalog),
        chosen=len(chosen),
        servers=tuple(server_tokens(ws.catalog, ws.tokens.per_tool, list(chosen))),
        filtering=setting.enabled or shown.split is not None,
        overhead=ws.tokens.overhead,
    )


def bind_scores(strip: ScoreStrip, state: LabState) -> None:
    def draw(shown: Shown | None) -> None:
        # A fused score is no 0-1 similarity: under serve's engine the split says more.
        strip.display = shown is None or shown.split is None
        if shown is None or shown.ranking is None or shown.split is not None:
            strip.shape = None
            return
        strip.shape = ScoreShape(
            shown.ranking.scores, shown.setting.similarity_threshold, shown.ranking.method
        )

    strip.watch(state, "shown", draw, init=False)


def bind_compare(view: CompareView, state: LabState) -> None:
    """While the compare tab is open: each method's cached ranking of the query, with what the
    setting would send under that method (and whether it sends the query's expected tools)."""

    def draw(shown: Shown | None) -> None:
        if shown is None or shown.ranking is None or not state.comparing:
            return
        lab, query = shown.lab, shown.ranking.query
        ws = lab.workspace
        expected = expected_indices(state.expected(), ws.catalog).keys()
        for method in SEARCH_METHODS:
            ranking = lab.cached(query, method)
            if ranking is None:
                continue
            setting = shown.setting.with_(search_method=method)
            selection = (
                shown.selection
                if method == shown.setting.search_method
                and shown.selection is not None
                and shown.split is None
                else select(ranking, setting, ws.catalog, lab.usage)
            )
            rows = ranking_rows(
                ranking,
                selection,
                ws.catalog,
                ws.tokens.per_tool,
                setting,
                limit=COMPARE_ROWS,
                expected=expected,
            )
            title = column_title(method, ranking.model_id, ranking.fallback)
            view.column(method).show(title, rows)

    view.watch(state, "shown", draw, init=False)


def bind_findings(findings: FindingsList, tabs: TabbedContent, state: LabState) -> None:
    def draw() -> None:
        diagnosed = state.diagnosed
        if diagnosed is None:
            return
        if diagnosed.error is not None:
            findings.update(f"diagnostics failed: {diagnosed.error}")
            return
        findings.show(diagnosed.findings)
        serious = sum(1 for f in diagnosed.findings if f.severity in ("error", "warning"))
        tabs.get_tab("tab-findings").label = f"findings ({serious})" if serious else "findings"

    _on(findings, state, ("diagnosed",), draw)


def bind_history(history: HistoryList, state: LabState) -> None:
    """The labelled queries, with how many tools each expects."""

    def draw() -> None:
        history.set_labelled({key: len(names) for key, names in state.labels.items()})

    _on(history, state, ("labels",), draw)
    draw()


def bind_catalog_findings(findings: FindingsList, tabs: TabbedContent, state: LabState) -> None:
    """The catalog's findings under its table (unreachable tools once measured), counted in the
    tab's label."""

    def draw() -> None:
        advice = state.advice
        if advice is None:
            findings.update("reading the catalog…" if state.lab is not None else "")
            return
        found = advice.shown
        findings.show(found, empty="No catalog findings.", evidence=False)
        if advice.cases is None:
            why = advice.cases_error or "no labelled cases"
            findings.add_note(f"unreachable tools: {why}")
        serious = sum(1 for f in found if f.severity in ("error", "warning"))
        tabs.get_tab("tab-catalog").label = f"catalog ({serious})" if serious else "catalog"

    _on(findings, state, ("advice",), draw)


def bind_query_findings(findings: FindingsList, state: LabState) -> None:
    """What the runtime cannot read of the query, under the status line (hidden when nothing)."""

    def draw() -> None:
        found = state.query_found
        findings.display = bool(found)
        if found:
            findings.show(found, evidence=False)

    _on(findings, state, ("query_found",), draw)
    findings.display = False


def bind_status(line: StatusLine, state: LabState) -> None:
    def draw() -> None:
        line.text, line.error = state.status.text, state.status.error

    _on(line, state, ("status",), draw)


def bind_banner(banner: Banner, state: LabState) -> None:
    def draw() -> None:
        banner.show(state.banner)

    _on(banner, state, ("banner",), draw)
