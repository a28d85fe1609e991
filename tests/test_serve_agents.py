"""Which agent serve points at itself, and what holo-tune reads of an agent that runs serve.

* A HoloDeck 0.7 agent is one the runtime detection calls 0.7: an ``openai:`` block, or a pin
  beside the agent (``requirements.txt``), so ``tune --runtime serve --apply`` rewrites the agent
  (its MCP entries moved to the servers file), never a ``.mcp.json`` HoloDeck does not read.
* An agent already pointed at serve is read with the servers it fronts: listing, search and
  tune see the same tools as before it ran serve, not serve's own three, so tuning it again
  only changes the entry's flags."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.errors import WriteBackError
from workbench.runtimes import get_runtime
from workbench.workspace import Workspace, build_workspace

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
CATALOG = SAMPLES / "research-agent.catalog.json"
CASES = SAMPLES / "research-agent.cases.yaml"
QUERY = "find recent papers on retrieval and remember the authors"


def _agent(tmp_path: Path) -> Path:
    """The research agent with no tool_filtering block (0.7 refuses one) and no openai block."""
    shutil.copytree(SAMPLES / "data", tmp_path / "data")
    text = (SAMPLES / "research-agent.yaml").read_text()
    agent = tmp_path / "research-agent.yaml"
    agent.write_text(text[: text.index("tool_filtering:")])
    return agent


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _apply(agent: Path, capsys: pytest.CaptureFixture[str]) -> str:
    flags = ["--catalog", str(CATALOG), "--cases", str(CASES), "--embedder", "none"]
    # --force: the knee's proposal is measured worse than serve's default on these cases
    code, _, err = _run(
        capsys, "tune", str(agent), "--runtime", "serve", *flags, "--apply", "--force"
    )
    assert code == 0, err
    return err


def _selected(agent: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    flags = ["--catalog", str(CATALOG), "--embedder", "none", "--method", "bm25"]
    code, out, err = _run(capsys, "search", str(agent), QUERY, *flags, "--json")
    assert code == 0, err
    return [t["tool"] for t in json.loads(out)["ranking"]]


def test_a_pinned_07_agent_is_pointed_at_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent(tmp_path)
    (tmp_path / "requirements.txt").write_text("holodeck-ai>=0.7,<0.8\n")
    _apply(agent, capsys)
    assert not (tmp_path / ".mcp.json").exists()
    tools = yaml.safe_load(agent.read_text())["tools"]
    mcp = [t for t in tools if t.get("type") == "mcp"]
    assert [t["name"] for t in mcp] == ["holo_tune"]
    assert "--servers" in mcp[0]["args"]
    moved = yaml.safe_load((tmp_path / "research-agent.servers.yaml").read_text())["tools"]
    assert {t["name"] for t in moved} == {"brave_search", "memory"}


def _workspace(agent: Path) -> Workspace:
    loaded = load_agent(agent, environ={"BRAVE_API_KEY": "x"})
    return build_workspace(loaded, load_catalog(loaded, catalog_file=CATALOG), embedder_spec="none")


def test_pointing_an_agent_at_serve_is_one_plan_of_two_files(tmp_path: Path) -> None:
    """The agent and the servers file its entries move to: one diff (the servers file's first),
    each written atomically with a backup, the servers file first."""
    agent = _agent(tmp_path)
    (tmp_path / "requirements.txt").write_text("holodeck-ai>=0.7,<0.8\n")
    before = agent.read_bytes()
    side = tmp_path / "research-agent.servers.yaml"
    plan = get_runtime("serve").flags_write(_workspace(agent), ["--top-k", "3"])
    assert plan.changed and plan.path == agent
    assert plan.diff.index(f"+++ {side}") < plan.diff.index(f"+++ {agent}")
    assert "brave_search, memory moved to the servers file" in plan.written
    assert plan.write() == agent.with_name(agent.name + ".bak")
    assert agent.with_name(agent.name + ".bak").read_bytes() == before
    assert {t["name"] for t in yaml.safe_load(side.read_text())["tools"]} == {
        "brave_search",
        "memory",
    }
    assert "--top-k" in yaml.safe_load(agent.read_text())["tools"][-1]["args"]


def test_an_agent_changed_since_planned_is_refused_before_any_file_is_written(
    tmp_path: Path,
) -> None:
    """Before: the servers file was written, then the agent refused, leaving a servers file
    that nothing names."""
    agent = _agent(tmp_path)
    (tmp_path / "requirements.txt").write_text("holodeck-ai>=0.7,<0.8\n")
    plan = get_runtime("serve").flags_write(_workspace(agent), ["--top-k", "3"])
    edited = agent.read_text() + "# edited meanwhile\n"
    agent.write_text(edited)
    with pytest.raises(WriteBackError, match="changed on disk since it was read"):
        plan.write()
    assert not (tmp_path / "research-agent.servers.yaml").exists()
    assert agent.read_text() == edited


def test_the_settings_and_the_entry_are_checked_before_either_is_written(tmp_path: Path) -> None:
    """The dashboard's Write joins serve's settings file and the client's entry; a ``.mcp.json``
    made while the dialog was open refused the write only after the settings file was written
    (a settings file that the entry in place might already name). Now neither is written."""
    from workbench.runtimes.serve import SETTINGS_FILE, _joined
    from workbench.search.holo.settings import HoloSettings

    agent = _agent(tmp_path)
    serve = get_runtime("serve")
    joined = _joined(serve.settings_writes(_workspace(agent), HoloSettings(top_k=3)))  # type: ignore[attr-defined]
    assert joined.changed and len(joined.plans) == 2
    mcp = tmp_path / ".mcp.json"
    mcp.write_text('{"mcpServers": {}, "made": "meanwhile"}\n')
    with pytest.raises(WriteBackError, match="changed on disk since it was read; nothing written"):
        joined.write()
    assert not (tmp_path / SETTINGS_FILE).exists()
    assert json.loads(mcp.read_text()) == {"mcpServers": {}, "made": "meanwhile"}
    mcp.unlink()
    joined.write()  # as planned: both written
    assert (tmp_path / SETTINGS_FILE).is_file() and "holo-tune" in mcp.read_text()


def test_an_unpinned_agent_gets_a_mcp_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent(tmp_path)
    before = agent.read_bytes()
    _apply(agent, capsys)
    assert agent.read_bytes() == before
    assert "holo-tune" in json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]


def test_an_agent_that_runs_serve_is_read_with_the_servers_it_fronts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent(tmp_path)
    (tmp_path / "requirements.txt").write_text("holodeck-ai>=0.7,<0.8\n")
    before = _selected(agent, capsys)
    assert any(name.startswith("memory") for name in before)
    _apply(agent, capsys)
    assert _selected(agent, capsys) == before  # serve's three tools would be all it had
    code, _, err = _run(capsys, "tools", str(agent), "--catalog", str(CATALOG))
    assert code == 0 and "runs holo-tune serve" in err
    rewritten = agent.read_bytes()
    err = _apply(agent, capsys)  # tuned again: the same servers, so the same flags
    assert "no change" in err
    assert agent.read_bytes() == rewritten


def test_tune_apply_checks_the_settings_and_the_entry_before_writing_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tune --runtime serve --apply`` writes serve's settings file and the client's entry as
    one write, as the dashboard does: a ``.mcp.json`` made between the plan and the write (here
    just before it) refuses both (before, the settings file was written first)."""
    import workbench.commands.apply as apply_command
    from workbench.runtimes.serve import SETTINGS_FILE

    agent = _agent(tmp_path)
    mcp = tmp_path / ".mcp.json"
    shown = apply_command.show_config_write

    def meanwhile(plan: object, *, to_stdout: bool) -> None:
        if not mcp.exists():
            mcp.write_text('{"mcpServers": {}, "made": "meanwhile"}\n')
        shown(plan, to_stdout=to_stdout)  # type: ignore[arg-type]

    monkeypatch.setattr("workbench.commands.tune.show_config_write", meanwhile)
    flags = ["--catalog", str(CATALOG), "--cases", str(CASES), "--embedder", "none"]
    code, _, err = _run(
        capsys, "tune", str(agent), "--runtime", "serve", *flags, "--apply", "--force"
    )
    assert code == 2 and "changed on disk since it was read; nothing written" in err
    assert not (tmp_path / SETTINGS_FILE).exists()
    assert json.loads(mcp.read_text()) == {"mcpServers": {}, "made": "meanwhile"}
