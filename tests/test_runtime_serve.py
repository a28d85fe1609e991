"""The ``serve`` runtime: holo-tune's own search behind an MCP client, tuned and written.

What the tuner measured is what serve answers: the fitted settings, given to the real command
over stdio as a file, answer each query with the tools the settings' engine returns, in order.
``tune --apply`` writes the settings file and a ``.mcp.json`` whose one ``holo-tune`` server
(``serve AGENT --settings FILE``) stands in for the agent's MCP servers (the others kept, a
backup kept).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import anyio
import pytest
from serve_client import search_names, serve_stdio

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.evaluate.cases import load_cases
from workbench.evaluate.serve_tune import labelled_of
from workbench.runtimes.serve import SERVER, SETTINGS_FILE
from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.settings import read_settings
from workbench.search.serving import answer_tokens
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


def test_the_tuned_settings_run_as_measured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """tune's settings, given to the real serve over stdio as a file, answer each query with
    the tools the same settings' engine returns, in order; the report's held-out figures are
    those of its folds' settings."""
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    report = _tune(AGENT, capsys, "--max-tokens", "4000")
    assert report["runtime"]["name"] == "serve"  # type: ignore[index]
    fit = report["fit"]
    assert fit["folds"] == 5 and len(fit["fold_settings"]) == 5  # type: ignore[index,arg-type]
    assert fit["heldout"]["cases"] == 35  # type: ignore[index]
    settings_file = tmp_path / "tuned.json"
    settings_file.write_text(json.dumps(report))  # the whole report is a settings file
    settings = read_settings(settings_file)
    assert settings.to_json() == report["settings"]
    agent = load_agent(AGENT, environ={"BRAVE_API_KEY": "x"})
    catalog = load_catalog(agent, catalog_file=CATALOG, view="listed")
    bill = token_table(catalog, agent.agent.model.provider, agent.agent.model.name)
    labelled = labelled_of(settings, catalog)  # the cases file the settings name, if they use it
    engine = HoloEngine(
        catalog, answer_tokens(catalog, bill), None, fields=settings.fields, labelled=labelled
    )
    queries = [case.query for case in load_cases(CASES)][:8]

    async def ask() -> list[list[str]]:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio(
                [str(AGENT), "--settings", str(settings_file), "--catalog", str(CATALOG)],
                errlog,
                BRAVE_API_KEY="x",
            ) as session:
                return [await search_names(session, q) for q in queries]

    found = anyio.run(ask)
    for query, names in zip(queries, found, strict=True):
        expected = [catalog.tools[i].full_name for i in engine.search(query, settings).indices]
        assert names == expected, query


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
    settings = tmp_path / SETTINGS_FILE
    assert server["args"][2:] == ["--settings", str(settings.resolve())]
    assert read_settings(settings).to_json()["weights"]  # the fitted settings, readable
    assert (tmp_path / ".mcp.json.bak").read_text() == before
    _tune(agent, capsys, "--apply", "--force")  # a second run changes nothing
    assert json.loads(mcp.read_text()) == written


def test_an_entrys_flags_read_back_as_the_command_line_reads_them() -> None:
    """serve's flags in a client's entry are read (tune's "now", the dashboard's Write) by the
    same declaration the command line is made of: the two readings agree, and an entry that
    does not start serve, or whose flags do not parse, reads as none."""
    from workbench.cli import parse_args
    from workbench.search.flags import SearchFlags, read_serve_argv

    argv = [
        "serve", "agent.yaml", "--settings", "s.json", "--top-k", "7", "--max-tokens", "900",
        "--threshold", "0.2", "--method", "bm25", "--pin", "a", "--pin", "b",
        "--always-include", "c", "--top-n-used", "0", "--embedder", "none",
        "--transport", "http", "--port", "9000", "--catalog", "c.json",
    ]  # fmt: skip
    read = read_serve_argv(argv)
    assert read == SearchFlags.of(vars(parse_args(argv)))
    assert read is not None and read.top_k == 7 and read.pin == ("a", "b")
    assert read_serve_argv(["search", "agent.yaml"]) is None
    assert read_serve_argv(["serve", "agent.yaml", "--top-k", "many"]) is None


def _export(agent: Path, *flags: str) -> tuple[dict[str, object], str]:
    """``export AGENT --runtime serve FLAGS`` through the CLI: its stdout as JSON, its stderr."""
    from cli_run import run_cli

    env = {**os.environ, "BRAVE_API_KEY": "x"}
    args = ["export", str(agent), "--runtime", "serve", "--catalog", str(CATALOG), *flags]
    done = run_cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_export_prints_the_settings_file_of_the_flags(tmp_path: Path) -> None:
    """``export --runtime serve`` prints serve's settings file, stdout only that (what
    ``serve --settings`` reads), for the flags over the YAML's block: ``--top-k``, bm25 (no
    dense signal), threshold 0 (none), the ``--keep`` tools and the MCP tools always_include
    names pinned; never the old flags (``--top-k`` in a ``.mcp.json`` entry)."""
    agent = tmp_path / "research-agent.yaml"
    shutil.copy(AGENT, agent)
    doc, err = _export(
        agent, "--top-k", "3", "--method", "bm25", "--threshold", "0", "--keep", "create_entities"
    )
    saved = tmp_path / SETTINGS_FILE
    saved.write_text(json.dumps(doc))
    settings = read_settings(saved)
    assert settings.to_json() == doc  # the whole of stdout is the settings
    assert settings.top_k == 3 and settings.threshold is None
    assert settings.weights["dense"] == 0.0 and settings.weights["lexical"] > 0
    assert settings.pins == ("memory-create_entities",)
    assert "mcpServers" not in doc
    assert f"--settings {SETTINGS_FILE}" in err
    assert "search_papers is not an MCP tool" in err  # always_include's vectorstore: not pinned


def test_export_keeps_what_an_older_entry_runs_beside_the_knobs(tmp_path: Path) -> None:
    """An older ``.mcp.json`` entry (``serve AGENT --method bm25 --top-k 3``, as an earlier
    ``tune --apply`` wrote) still runs: export reads it as serve does (no dense signal) and
    sets the YAML block's knobs over it (top_k 5, threshold 0.5, always_include)."""
    agent = tmp_path / "research-agent.yaml"
    shutil.copy(AGENT, agent)
    entry = ["serve", str(agent), "--method", "bm25", "--top-k", "3", "--pin", "read_graph"]
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {SERVER: {"command": "holo-tune", "args": entry}}})
    )
    doc, _ = _export(agent)
    assert doc["weights"]["dense"] == 0.0  # type: ignore[index]
    assert (doc["top_k"], doc["threshold"], doc["pins"]) == (5, 0.5, [])
