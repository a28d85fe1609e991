"""Snapshots: save -> load gives the same catalog; replay starts no process; bad files say where."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog import load_catalog, load_snapshot, save_snapshot
from workbench.catalog.models import Catalog
from workbench.catalog.snapshot import parse_snapshot
from workbench.cli import main
from workbench.config import load_agent
from workbench.errors import CatalogError

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
SERVERS = Path(__file__).resolve().parent / "servers"
ProcessFinder = Callable[[str], list[int]]


def _agent_yaml(tmp_path: Path, servers: dict[str, list[str]], extra: str = "") -> Path:
    """An agent file whose MCP entries run this Python with the given arguments."""
    entries = "".join(
        f"  - name: {name}\n    type: mcp\n    description: test server {name}\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
        "    request_timeout: 30\n"
        for name, args in servers.items()
    )
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: snap-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        f"instructions:\n  inline: test\ntools:\n{extra}{entries}"
    )
    return path


def _same(a: Catalog, b: Catalog) -> None:
    assert a.tools == b.tools
    assert [t.definition for t in a.tools] == [t.definition for t in b.tools]
    assert a.listings == b.listings


def test_round_trip_gives_the_same_catalog(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    toolserver = str(SERVERS / "toolserver.py")
    path = _agent_yaml(
        tmp_path,
        {
            "paged": [toolserver, "--tools", "4", "--page-size", "3", "--odd"],
            "plain": [toolserver, "--tools", "2"],
        },
        extra="  - name: kb\n    type: vectorstore\n    description: Search the KB\n"
        "    source: data.md\n",
    )
    agent = load_agent(path)
    live = load_catalog(agent, log_dir=tmp_path)
    assert [s.state for s in live.servers] == ["local", "ok", "ok"]
    snap = save_snapshot(live, tmp_path / "catalog.json")

    # Replace the servers with ones that would hang if they were started: none may be.
    hang = [str(SERVERS / "misbehaving.py"), "hang", "--tag", tag]
    replay_agent = load_agent(_agent_yaml(tmp_path, {"paged": hang, "plain": hang}))
    replayed = load_catalog(replay_agent, catalog_file=snap, log_dir=tmp_path, timeout=5)
    assert find_processes(tag) == []
    assert [s.state for s in replayed.servers] == ["snapshot", "snapshot"]
    live_mcp = Catalog(
        tools=[t for t in live.tools if t.kind == "mcp"], servers=[], listings=live.listings
    )
    _same(live_mcp, replayed)
    assert replayed.notes == [n for n in live.notes if not n.startswith("vectorstore")]


def test_snapshot_servers_stand_in_extras_follow_and_nothing_starts(
    tmp_path: Path, tag: str, find_processes: ProcessFinder
) -> None:
    """An entry the snapshot lacks is ``absent`` (said in a note and a warning), never started:
    it would hang the listing for its 30 s timeout if it were."""
    hang = [str(SERVERS / "misbehaving.py"), "hang", "--tag", tag]
    agent = load_agent(_agent_yaml(tmp_path, {"lacking": hang, "replayed": ["-c", "x"]}))
    snap = tmp_path / "snap.json"
    snap.write_text(
        json.dumps(
            {
                "holo_tune_catalog": 1,
                "servers": {
                    "zz_extra": {"tools": [{"name": "b"}, {"name": "a", "description": "A"}]},
                    "replayed": {"tools": [{"name": "r", "inputSchema": {"type": "object"}}]},
                },
            }
        )
    )
    seen: list[str] = []
    catalog = load_catalog(
        agent,
        catalog_file=snap,
        log_dir=tmp_path,
        on_status=lambda s: seen.append(f"{s.name}:{s.state}"),
    )
    assert find_processes(tag) == []
    assert seen == ["lacking:absent", "replayed:snapshot", "zz_extra:snapshot"]
    assert [(s.name, s.state, s.error) for s in catalog.servers] == [
        ("lacking", "absent", "not in the snapshot"),
        ("replayed", "snapshot", None),
        ("zz_extra", "snapshot", None),
    ]
    assert catalog.names() == ["replayed-r", "zz_extra-a", "zz_extra-b"]
    assert catalog.get("zz_extra-b") is not None
    assert catalog.get("zz_extra-b").description == functools.partial.__doc__  # type: ignore[union-attr]
    absent = (
        f"{snap}: server lacking of {agent.path} is not in the snapshot: its tools are left out "
        "(--catalog starts no server)"
    )
    assert absent in catalog.warnings and absent in catalog.notes


def test_sample_snapshots_open_offline() -> None:
    research = load_snapshot(SAMPLES / "research-agent.catalog.json")
    assert list(research) == ["brave_search", "memory"]
    assert "brave_web_search" in {t["name"] for t in research["brave_search"]}
    python = load_snapshot(SAMPLES / "python-servers.catalog.json")
    assert list(python) == ["time", "git", "fetch", "filesystem"]


def test_research_agent_replayed_in_runtime_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")
    agent = load_agent(SAMPLES / "research-agent.yaml")
    catalog = load_catalog(agent, catalog_file=SAMPLES / "research-agent.catalog.json")
    names = catalog.names()
    assert names[0] == "vectorstore-search_papers"
    brave = [n for n in names if n.startswith("brave_search-")]
    memory = [n for n in names if n.startswith("memory-")]
    assert names == [names[0], *brave, *memory]
    assert brave == sorted(brave) and memory == sorted(memory)
    assert "brave_search-brave_web_search" in brave and "memory-search_nodes" in memory


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"holo_tune_catalog": 1,\n "servers": {,}}', ":2: ", "not JSON"),
        ('{"servers": {}}', "snap.json: ", "no 'holo_tune_catalog' key"),
        ('{"holo_tune_catalog": 2, "servers": {}}', "holo_tune_catalog: ", "unsupported version 2"),
        ('{"holo_tune_catalog": 1, "servers": []}', "servers: ", "object of servers"),
        ('{"holo_tune_catalog": 1, "servers": {"s": {}}}', "servers.s: ", "'tools' list"),
        (
            '{"holo_tune_catalog": 1, "servers": {"s": {"tools": [{"name": "a"}, {"x": 1}]}}}',
            "servers.s.tools[1]: ",
            "non-empty string 'name'",
        ),
        (
            '{"holo_tune_catalog": 1, "servers": '
            '{"s": {"tools": [{"name": "a", "inputSchema": 3}]}}}',
            "servers.s.tools[0]: ",
            "'inputSchema' must be an object",
        ),
    ],
)
def test_bad_snapshot_names_file_line_and_field(text: str, where: str, message: str) -> None:
    with pytest.raises(CatalogError) as caught:
        parse_snapshot(text, "snap.json")
    line = str(caught.value)
    assert line.startswith("snap.json") and where in line and message in line
    assert "\n" not in line


def test_missing_snapshot_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="no such file"):
        load_snapshot(tmp_path / "absent.json")


def _fs_agent(folder: Path) -> Path:
    """An agent whose one MCP server is ``fs``."""
    agent = folder / "agent.yaml"
    agent.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
        "tools:\n  - {name: fs, type: mcp, description: files, command: npx}\n"
    )
    return agent


def _write_snapshot(path: Path, servers: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"holo_tune_catalog": 1, "servers": servers}))
    return path


def test_snapshot_servers_the_agent_lacks_are_added_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Added after the agent's own (docs/design.md, Files), but never silently: a catalog note the
    dashboard shows, and a warning on stderr from the command line."""
    agent = _fs_agent(tmp_path)
    tool = {"name": "t", "description": "d", "inputSchema": {}}
    servers = {"web": {"tools": [tool]}, "fs": {"tools": [tool]}, "db": {"tools": [tool]}}
    snapshot = _write_snapshot(tmp_path / "snap.json", servers)
    assert main(["tools", str(agent), "--catalog", str(snapshot), "--json"]) == 0
    captured = capsys.readouterr()
    note = f"{snapshot}: servers not in {agent}: web, db (added after the agent's own)"
    assert f"holo-tune: warning: {note}" in captured.err
    listed = json.loads(captured.out)
    assert [s["name"] for s in listed["servers"]] == ["fs", "web", "db"]
    catalog = load_catalog(load_agent(agent, environ={}), catalog_file=snapshot)
    assert note in catalog.notes and catalog.warnings == [note]
    # An agent with no MCP entry takes its whole catalog from the snapshot (the data sets).
    bare = tmp_path / "bare.yaml"
    bare.write_text(
        "name: b\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
    )
    assert load_catalog(load_agent(bare, environ={}), catalog_file=snapshot).warnings == []
    # A snapshot of the agent's own servers only: nothing to say.
    servers.pop("web"), servers.pop("db")
    _write_snapshot(snapshot, servers)
    assert main(["tools", str(agent), "--catalog", str(snapshot)]) == 0
    assert "servers not in" not in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "--embedder", "none", "read a file"],
        ["eval", "--embedder", "none", "--cases", "CASES"],
        ["snapshot", "-o", "OUT"],
    ],
)
def test_every_command_that_reads_a_snapshot_warns_of_servers_the_agent_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    agent = _fs_agent(tmp_path)
    tool = {"name": "read_file", "description": "read a file", "inputSchema": {}}
    servers = {"fs": {"tools": [tool]}, "db": {"tools": [{**tool, "name": "query"}]}}
    snapshot = _write_snapshot(tmp_path / "snap.json", servers)
    cases = tmp_path / "cases.yaml"
    cases.write_text("- {query: read a file, expected: [fs-read_file]}\n")
    swap = {"CASES": str(cases), "OUT": str(tmp_path / "out.json")}
    args = [swap.get(a, a) for a in argv]
    code = main([args[0], str(agent), "--catalog", str(snapshot), *args[1:]])
    assert code == 0
    err = capsys.readouterr().err
    note = f"{snapshot}: servers not in {agent}: db (added after the agent's own)"
    assert err.count(f"holo-tune: warning: {note}") == 1, err


def _hanging_agent(tmp_path: Path, tag: str, names: list[str]) -> Path:
    """An agent whose MCP entries would each hang the listing if started (found by ``tag``)."""
    hang = [str(SERVERS / "misbehaving.py"), "hang", "--tag", tag]
    return _agent_yaml(tmp_path, {name: hang for name in names})


def test_search_with_a_snapshot_lacking_a_server_starts_nothing_and_says_so(
    tmp_path: Path, tag: str, find_processes: ProcessFinder, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _hanging_agent(tmp_path, tag, ["fs", "web"])
    tool = {"name": "read_file", "description": "read a file", "inputSchema": {}}
    snapshot = _write_snapshot(tmp_path / "snap.json", {"fs": {"tools": [tool]}})
    argv = ["search", str(agent), "read a file", "--catalog", str(snapshot), "--timeout", "30"]
    assert main([*argv, "--embedder", "none", "--json"]) == 0
    assert find_processes(tag) == []
    captured = capsys.readouterr()
    assert [row["tool"] for row in json.loads(captured.out)["ranking"]] == ["fs-read_file"]
    absent = (
        f"holo-tune: warning: {snapshot}: server web of {agent} is not in the snapshot: its tools "
        "are left out (--catalog starts no server)"
    )
    assert captured.err.splitlines().count(absent) == 1, captured.err
    assert main(["tools", str(agent), "--catalog", str(snapshot), "--json"]) == 0
    assert find_processes(tag) == []
    servers = json.loads(capsys.readouterr().out)["servers"]
    assert servers == [
        {"name": "fs", "status": "ok", "error": None, "tools": 1},
        {"name": "web", "status": "error", "error": "not in the snapshot", "tools": 0},
    ]


def test_a_snapshot_lacking_every_server_of_the_agent_ranks_its_own(
    tmp_path: Path, tag: str, find_processes: ProcessFinder, capsys: pytest.CaptureFixture[str]
) -> None:
    """A data set's snapshot with another agent (the bfcl snapshot with the research agent)."""
    agent = _hanging_agent(tmp_path, tag, ["brave", "memory"])
    tool = {"name": "triangle_area", "description": "area of a triangle", "inputSchema": {}}
    snapshot = _write_snapshot(tmp_path / "snap.json", {"bfcl": {"tools": [tool]}})
    argv = ["search", str(agent), "triangle area", "--catalog", str(snapshot), "--json"]
    assert main([*argv, "--embedder", "none", "--timeout", "30"]) == 0
    assert find_processes(tag) == []
    captured = capsys.readouterr()
    assert [row["tool"] for row in json.loads(captured.out)["ranking"]] == ["bfcl-triangle_area"]
    for name in ("brave", "memory"):
        assert f"server {name} of {agent} is not in the snapshot" in captured.err
    # Nothing at all to rank: one line, exit 2.
    _write_snapshot(snapshot, {})
    assert main([*argv, "--embedder", "none"]) == 2
    assert find_processes(tag) == []
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == "holo-tune: error: no server answered: there are no tools to rank"


def test_loading_a_catalog_in_the_main_thread_never_formats_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncio's runner puts its SIGINT handler back when the loop ends, and Python's enum
    formats that handler, its main task and the task's result into a message it discards: the
    catalog must not be that result (a repr of every tool, 50 ms of a 1,287-tool start)."""
    import signal

    formatted: list[str] = []

    def counted(self: Catalog) -> str:
        formatted.append("catalog")
        return "Catalog(...)"

    monkeypatch.setattr(Catalog, "__repr__", counted)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as a command has it
    try:
        bfcl = Path(__file__).parent / "data" / "datasets" / "bfcl"
        agent = load_agent(bfcl / "agent.yaml")
        catalog = load_catalog(agent, catalog_file=bfcl / "catalog.json")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(catalog.tools) == 1287
    assert formatted == []
