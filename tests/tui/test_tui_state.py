"""The lab's state without a terminal: what each method changes and what it announces, on the
research sample's real workspace (BM25 scores from the core)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.dom import DOMNode
from tui_helpers import ENV, SAMPLES

from workbench.catalog import ServerStatus
from workbench.catalog.enumerate import load_catalog
from workbench.config import AgentConfig, load_agent
from workbench.search.selection import select
from workbench.tui.dashboard.state import Ask, Diagnosed, LabState, file_setting_of
from workbench.tui.lab import Lab
from workbench.workspace import Workspace, build_workspace

QUERY = "search the web for papers"


@pytest.fixture(scope="module")
def agent() -> AgentConfig:
    return load_agent(SAMPLES / "research-agent.yaml", environ=ENV, missing_env="warn")


@pytest.fixture(scope="module")
def workspace(agent: AgentConfig) -> Workspace:
    catalog = load_catalog(agent, catalog_file=SAMPLES / "research-agent.catalog.json")
    return build_workspace(agent, catalog, embedder_spec="none", environ=ENV)


class Heard:
    """What a state announced, attribute by attribute (as a panel would see it)."""

    def __init__(self, state: LabState, *names: str) -> None:
        self.node = DOMNode()
        self.seen: dict[str, list[Any]] = {name: [] for name in names}
        for name in names:
            self.node.watch(state, name, self._recorder(self.seen[name]), init=False)

    @staticmethod
    def _recorder(values: list[Any]) -> Any:
        def record(value: Any) -> None:
            values.append(value)

        return record

    def clear(self) -> None:
        for values in self.seen.values():
            values.clear()


def _bm25(state: LabState) -> None:
    error = state.edit("search_method", "bm25")
    assert error is None


def test_knobs_moved_before_the_workspace_opens_are_kept(
    agent: AgentConfig, workspace: Workspace
) -> None:
    state = LabState(agent, query=QUERY)
    heard = Heard(state, "setting", "asked", "shown")
    state.edit("top_k", 7)
    assert state.setting.top_k == 7 and heard.seen["setting"][-1].top_k == 7
    assert state.changed() == [] and not heard.seen["asked"]  # nothing to rank yet
    state.open(Lab.open(workspace))
    assert state.lab is not None and state.lab.setting.top_k == 7
    assert state.changed() == ["top_k"]
    assert heard.seen["asked"] == [Ask(QUERY, (state.setting.search_method,))]


def test_a_refused_value_is_said_and_the_setting_announced_unchanged(agent: AgentConfig) -> None:
    state = LabState(agent)
    before = state.setting
    heard = Heard(state, "setting")
    error = state.edit("top_k", 0)
    assert error and "greater than or equal" in error
    assert heard.seen["setting"] == [before]  # the knob is drawn back to the valid value


def test_a_ranking_arrives_and_is_shown_as_the_core_selects_it(
    agent: AgentConfig, workspace: Workspace
) -> None:
    state = LabState(agent)
    state.open(Lab.open(workspace))
    _bm25(state)
    heard = Heard(state, "asked", "shown", "status")
    state.type_query(QUERY)
    assert heard.seen["asked"] == [Ask(QUERY, ("bm25",))]
    assert state.lab is not None
    ranking = state.lab.rank(QUERY, "bm25")
    state.arrived(QUERY, [ranking], 0.01)
    shown = heard.seen["shown"][-1]
    assert shown.ranking is ranking and not shown.follow
    expected = select(ranking, state.setting, workspace.catalog, None)
    assert shown.selection.indices == expected.indices
    assert "scored by" in state.status.text
    heard.clear()
    state.edit("top_k", 1)  # a knob: selected again from the cache, nothing scored
    assert not heard.seen["asked"]
    again = heard.seen["shown"][-1]
    assert again.ranking is ranking and again.follow and again.setting.top_k == 1
    assert again.selection.indices == select(ranking, again.setting, workspace.catalog).indices


def test_a_late_ranking_of_an_older_query_is_cached_not_shown(
    agent: AgentConfig, workspace: Workspace
) -> None:
    state = LabState(agent)
    state.open(Lab.open(workspace))
    _bm25(state)
    state.type_query("papers")
    state.type_query(QUERY)
    heard = Heard(state, "shown")
    assert state.lab is not None
    state.arrived("papers", [state.lab.rank("papers", "bm25")], 0.01)
    assert not heard.seen["shown"] and state.lab.cached("papers", "bm25") is not None


def test_the_compare_tab_asks_for_every_method_the_current_first(
    agent: AgentConfig, workspace: Workspace
) -> None:
    state = LabState(agent, query=QUERY)
    state.open(Lab.open(workspace))
    _bm25(state)
    heard = Heard(state, "asked")
    state.show_tab("tab-compare")
    assert heard.seen["asked"] == [Ask(QUERY, ("bm25", "semantic", "hybrid"))]
    state.show_tab("tab-ranking")
    assert state.methods_wanted() == ("bm25",)


def test_revert_adopts_the_files_setting(agent: AgentConfig, workspace: Workspace) -> None:
    state = LabState(agent)
    state.open(Lab.open(workspace))
    state.edit("similarity_threshold", 0.9)
    assert state.changed() == ["similarity_threshold"]
    state.revert()
    assert state.changed() == [] and state.setting == file_setting_of(agent)


def test_findings_of_a_setting_moved_on_from_are_dropped(agent: AgentConfig) -> None:
    state = LabState(agent)
    old = state.setting
    state.edit("top_k", 9)
    state.diagnosed_as(Diagnosed(old, []))
    assert state.diagnosed is None
    state.diagnosed_as(Diagnosed(old, error="boom"))  # a failure is always said
    assert state.diagnosed is not None and state.diagnosed.error == "boom"
    state.diagnosed_as(Diagnosed(state.setting, []))
    assert state.diagnosed.setting == state.setting and state.diagnosed.error is None


def test_a_catalog_so_far_keeps_what_the_listing_said_since(agent: AgentConfig) -> None:
    state = LabState(agent)
    state.server_changed(ServerStatus("memory", "stdio", state="ok", tools=9))
    later = ServerStatus("brave", "stdio", state="error", error="no key")
    state.server_changed(later)
    in_catalog = [
        ServerStatus("brave", "stdio", state="connecting"),
        ServerStatus("memory", "stdio", state="ok", tools=9),
    ]
    merged = state.merge_servers(in_catalog)
    assert [s.name for s in merged] == ["brave", "memory"] and merged[0] == later
    state.list_servers(merged, {"memory": 120})
    assert state.servers.get("brave") == later and state.servers.ok == 1
    assert state.servers.tokens == {"memory": 120}
    assert state.servers.statuses == tuple(merged)
