"""The ``serve`` runtime: holo-tune's own search behind an MCP client, tuned and written.

What the tuner measured is what serve answers: the proposal's flags, run as the real command
over stdio, list the pins + ``search_tools`` + ``call_tool`` and answer each query with the tools
the tuner's engine found, in order. ``tune --apply`` writes a ``.mcp.json`` whose one
``holo-tune`` server stands in for the agent's MCP servers (the others kept, a backup kept).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import anyio
import pytest
from serve_client import search_names, serve_stdio

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.evaluate.cases import load_cases
from workbench.runtimes.serve import SERVER, ServeSearch
from workbench.tokens import token_table

SAMPLES = Path(__file__).resolve().parents[1] / "sample_configs"
AGENT = SAMPLES / "research-agent.yaml"
CATALOG = SAMPLES / "research-agent.catalog.json"
CASES = SAMPLES / "research-agent.cases.yaml"


def _tune(agent: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    args = ["tune", str(agent), "--runtime", "serve", "--catalog", str(CATALOG)]
    args += ["--cases", str(CASES), "--embedder", "none", "--json", "--no-what-if", *extra]
    assert main(args) == 0
    out = capsys.readouterr().out
    return json.loads(out)  # type: ignore[no-any-return]


def test_the_tuned_flags_run_as_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    report = _tune(AGENT, capsys, "--max-tokens", "4000")
    assert report["gap"] and report["runtime"]["name"] == "serve"  # type: ignore[index]
    server = report["config"]["mcpServers"][SERVER]  # type: ignore[index]
    args = server["args"][1:]  # without "serve"
    pins = report["setting"]["loaded"]  # type: ignore[index]
    agent = load_agent(AGENT, environ={"BRAVE_API_KEY": "x"})
    catalog = load_catalog(agent, catalog_file=CATALOG)
    bill = token_table(catalog, "openai", "gpt-4o")
    k = report["setting"]["max_results"]  # type: ignore[index]
    index = {tool.full_name: i for i, tool in enumerate(catalog.tools)}
    engine = ServeSearch(catalog, bill, int(k), [index[n] for n in pins])
    queries = [case.query for case in load_cases(CASES)][:8]

    async def ask() -> tuple[list[str], list[list[str]]]:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio(
                [*args, "--catalog", str(CATALOG), "--embedder", "none"], errlog, BRAVE_API_KEY="x"
            ) as session:
                listing = [tool.name for tool in (await session.list_tools()).tools]
                return listing, [await search_names(session, q) for q in queries]

    listing, found = anyio.run(ask)
    assert listing == [*pins, "search_tools", "call_tool"]
    for query, names in zip(queries, found, strict=True):
        sent = [catalog.tools[i].full_name for i in engine.run(query).sent]
        expected = [n for n in sent if n not in pins]
        assert [n for n in names if n not in pins] == expected, query


def test_apply_writes_one_holo_tune_server_in_place_of_the_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    (tmp_path / ".git").mkdir()
    agent = tmp_path / "research-agent.yaml"
    shutil.copy(AGENT, agent)
    shutil.copytree(SAMPLES / "data", tmp_path / "data")
    mcp = tmp_path / ".mcp.json"
    mcp.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "memory": {"command": "npx", "args": ["-y", "server-memory"]},
                    "github": {"command": "gh-mcp"},
                },
                "note": "kept",
            },
            indent=2,
        )
        + "\n"
    )
    before = mcp.read_text()
    _tune(agent, capsys, "--apply", "--force")
    written = json.loads(mcp.read_text())
    assert set(written["mcpServers"]) == {"github", SERVER}
    assert written["note"] == "kept"
    server = written["mcpServers"][SERVER]
    command = Path(server["command"])  # the installation's script, absolute (Claude Code's PATH)
    assert (
        command.is_absolute()
        and command.name == "holo-tune"
        and server["args"][:2]
        == [
            "serve",
            str(agent.resolve()),
        ]
    )
    assert (tmp_path / ".mcp.json.bak").read_text() == before
    _tune(agent, capsys, "--apply", "--force")  # a second run changes nothing
    assert json.loads(mcp.read_text()) == written
