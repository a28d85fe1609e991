"""The ``argus`` runtime (Argus MCP's find_tool optimizer): every config holo-tune writes loads
with argus-mcp 0.8.6's own ``ArgusConfig``, the lab's engine ranks as argus-mcp's own ``ToolIndex``,
and ``tune --apply`` merges into an existing config keeping what the user wrote.

argus-mcp's modules come from its sdist (tests/oracle/argus.py; ``make test`` fetches it)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from oracle.argus import SDIST, Argus, argus_mcp
from provided import require

from workbench.catalog.enumerate import load_catalog
from workbench.cli import main
from workbench.config import load_agent
from workbench.config.writeback.files import apply_plan
from workbench.errors import WriteBackError
from workbench.evaluate.cases import load_cases
from workbench.runtimes.argus import argus_names
from workbench.runtimes.argus.config_file import plan_argus, render_argus
from workbench.runtimes.detect import detect_runtime
from workbench.search.strategies.argus import ArgusParams, ArgusStrategy, Scorer
from workbench.tokens import token_table

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
AGENT = SAMPLES / "research-agent.yaml"
CATALOG = SAMPLES / "research-agent.catalog.json"
CASES = SAMPLES / "research-agent.cases.yaml"
DATASETS = REPO / "tests" / "data" / "datasets"
ENV = {"BRAVE_API_KEY": "x"}

needs_sdist = pytest.mark.provided("argus-mcp's sdist", files=[SDIST])


@pytest.fixture(scope="module")
def argus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Argus]:
    require("argus-mcp's sdist", files=[SDIST])
    with argus_mcp(tmp_path_factory.mktemp("argus-sdist")) as loaded:
        yield loaded


def validated(argus: Argus, text: str, environ: dict[str, str] | None = None) -> Any:
    """``text`` as Argus's loader takes it: YAML, ``${VAR}`` expanded, ``ArgusConfig``."""
    data = yaml.safe_load(text)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (environ or {}).items():
            mp.setenv(key, value)
        return argus.ArgusConfig.model_validate(argus.expand_env_vars(data))


def _cli(*args: str) -> list[str]:
    return [*args, "--catalog", str(CATALOG), "--embedder", "none"]


@pytest.fixture()
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    (tmp_path / ".git").mkdir()
    shutil.copy(AGENT, tmp_path / "agent.yaml")
    return tmp_path


# ---------------------------------------------------------------------------------------- export


@needs_sdist
def test_export_is_a_config_argus_loads(
    argus: Argus, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    keep = ["--keep", "brave_web_search", "--keep", "read_graph", "--keep", "search_papers"]
    assert main(["export", str(AGENT), "--runtime", "argus", *_cli()[:2], *keep]) == 0
    out, err = capsys.readouterr()
    assert out.startswith('version: "1"\n')
    assert "BRAVE_API_KEY: ${BRAVE_API_KEY}" in out  # kept as written, never expanded
    config = validated(argus, out, {"BRAVE_API_KEY": "secret"})
    assert config.version == "1" and set(config.backends) == {"brave_search", "memory"}
    brave = config.backends["brave_search"]
    assert (
        brave.type == "stdio"
        and brave.command == "npx"
        and brave.env == {"BRAVE_API_KEY": "secret"}
    )
    assert config.optimizer.enabled is True
    assert config.optimizer.keep_tools == ["brave_web_search", "read_graph"]
    assert "search_papers is the agent's own tool, not behind Argus" in err


@needs_sdist
def test_every_transport_becomes_the_backend_argus_names(argus: Argus) -> None:
    entries = [
        {"name": "files", "type": "mcp", "command": "npx", "args": ["-y", "fs"], "env_file": ".e"},
        {"name": "events", "type": "mcp", "transport": "sse", "url": "${EVENTS_URL}"},
        {
            "name": "crm",
            "type": "mcp",
            "transport": "http",
            "url": "https://crm.example/mcp",
            "headers": {"Authorization": "Bearer ${CRM_TOKEN}"},
        },
        {"name": "chat", "type": "mcp", "transport": "websocket", "url": "wss://chat.example"},
    ]
    doc, notes = render_argus(entries, ["list_files"])
    assert doc["backends"]["events"] == {"type": "sse", "url": "${EVENTS_URL}"}
    assert doc["backends"]["crm"]["headers"] == {"Authorization": "Bearer ${CRM_TOKEN}"}
    assert "chat" not in doc["backends"]
    assert notes == [
        "files: Argus has no env_file; set its variables in env",
        "chat: Argus has no websocket backend; left out",
    ]
    from workbench.runtimes.argus.config_file import dump

    env = {"EVENTS_URL": "https://events.example/sse", "CRM_TOKEN": "t"}
    config = validated(argus, dump(doc), env)
    assert config.backends["crm"].type == "streamable-http"
    assert config.backends["crm"].headers == {"Authorization": "Bearer t"}
    assert config.backends["events"].url == "https://events.example/sse"


@needs_sdist
def test_shared_tool_names_are_prefixed_as_argus_prefixes_them(argus: Argus) -> None:
    doc, _ = render_argus([{"name": "a", "command": "npx"}], ["a_search"], prefix=True)
    config = validated(argus, yaml.safe_dump(doc))
    assert config.conflict_resolution.strategy == "prefix"
    assert config.conflict_resolution.separator == "_"


# --------------------------------------------------------------------------------- the engine


def _catalogs() -> list[Any]:
    found = [pytest.param(AGENT, CATALOG, id="research-agent")]
    for folder in sorted(p for p in DATASETS.iterdir() if (p / "catalog.json").is_file()):
        found.append(pytest.param(folder / "agent.yaml", folder / "catalog.json", id=folder.name))
    return found


def _queries(agent: Path) -> list[str]:
    cases = CASES if agent == AGENT else next(agent.parent.glob("cases.*"))
    return [c.query for c in load_cases(cases)][:60]


@needs_sdist
@pytest.mark.parametrize("scorer", ["tfidf", "overlap"])
@pytest.mark.parametrize(("agent_path", "catalog_path"), _catalogs())
def test_the_lab_engine_ranks_as_argus_own_index(
    argus: Argus,
    agent_path: Path,
    catalog_path: Path,
    scorer: Scorer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """argus-mcp's ToolIndex, fed the tools as its registry lists them (names as Argus names
    them, the servers' descriptions), returns the lab engine's ranking tool for tool, in order:
    with scikit-learn (tfidf) and without it (its word-overlap fallback, argus-mcp's plain
    install: scikit-learn is not one of its dependencies)."""
    agent = load_agent(agent_path, environ=ENV)
    catalog = load_catalog(agent, catalog_file=catalog_path)
    bill = token_table(catalog, "openai", "gpt-4o")
    names = argus_names(catalog)
    engine = ArgusStrategy(catalog, bill, ArgusParams(scorer=scorer), names=names)
    search = sys.modules[argus.ToolIndex.__module__]
    monkeypatch.setattr(search, "_HAS_SKLEARN", scorer == "tfidf")
    index = argus.ToolIndex()
    index.store_sync(
        [
            {"name": n, "description": (t.definition or {}).get("description") or ""}
            for n, t in zip(names, catalog.tools, strict=True)
        ]
    )
    for query in _queries(agent_path):
        theirs = [hit["name"] for hit in index.search(query, limit=len(catalog))]
        ours = [names[i] for i in engine.ranking(query)[0].tolist()]
        assert ours == theirs, query


# ------------------------------------------------------------------------------------ detection


def test_an_argus_config_with_the_optimizer_on_is_the_evidence(agent_dir: Path) -> None:
    (agent_dir / "argus").mkdir()
    config = agent_dir / "argus" / "config.yaml"
    config.write_text("backends: {}\noptimizer: {enabled: false}\n")
    data = yaml.safe_load((agent_dir / "agent.yaml").read_text())
    assert detect_runtime(agent_dir / "agent.yaml", data).name == "holodeck-0.6"
    config.write_text("backends: {}\noptimizer: {enabled: true}\n")
    info = detect_runtime(agent_dir / "agent.yaml", data)
    assert info.name == "argus" and info.source == "yaml" and "argus/config.yaml" in info.reason


# --------------------------------------------------------------------------------- tune --apply


EXISTING = """\
# the team's gateway
version: "1"
server:
  host: 127.0.0.1   # loopback only
  port: 9000
backends:
  memory:
    type: stdio
    command: uvx
    args: [memory-server, --db, team.db]
optimizer:
  enabled: false
  keep_tools: [old_tool]
audit:
  enabled: false
"""


def _tune_apply(agent_dir: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    args = _cli("tune", str(agent_dir / "agent.yaml"), "--runtime", "argus", "--cases", str(CASES))
    assert main([*args, "--apply", "--force", "--json", "--no-what-if"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


@needs_sdist
def test_tune_apply_merges_keeping_the_users_config(
    argus: Argus, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (agent_dir / "argus").mkdir()
    path = agent_dir / "argus" / "config.yaml"
    path.write_text(EXISTING)
    report, err = _tune_apply(agent_dir, capsys)
    assert isinstance(report["keep_tools"], list) and report["limit"] in range(1, 11)
    assert report["scorer"] in ("overlap", "tfidf")
    text = path.read_text()
    assert "+++ " in err and "-  enabled: false" in err and "optimizer.keep_tools written" in err
    assert (agent_dir / "argus" / "config.yaml.bak").read_text() == EXISTING
    for kept in (
        "# the team's gateway",
        "host: 127.0.0.1   # loopback only",
        "args: [memory-server",
    ):
        assert kept in text
    config = validated(argus, text, ENV)
    assert list(yaml.safe_load(text)) == ["version", "server", "backends", "optimizer", "audit"]
    assert config.server.port == 9000 and config.audit.enabled is False
    assert config.backends["memory"].command == "uvx"  # the user's backend, as written
    assert config.backends["brave_search"].command == "npx"  # the agent's, added
    assert config.optimizer.enabled is True
    assert (
        config.optimizer.keep_tools
        == report["keep_tools"]
        == report["config"]["optimizer"]["keep_tools"]
    )
    catalog = load_catalog(load_agent(agent_dir / "agent.yaml"), catalog_file=CATALOG)
    assert set(config.optimizer.keep_tools) <= set(argus_names(catalog))
    _, again = _tune_apply(agent_dir, capsys)  # a second run: nothing to write
    assert "no change" in again and path.read_text() == text


@needs_sdist
def test_tune_apply_writes_a_new_config_argus_loads(
    argus: Argus, agent_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, err = _tune_apply(agent_dir, capsys)
    path = agent_dir / "argus" / "config.yaml"
    assert "a new file" in err
    config = validated(argus, path.read_text(), ENV)
    assert config.optimizer.keep_tools == report["keep_tools"]
    assert not (agent_dir / "config.yaml").exists()  # HoloDeck's file beside the agent: untouched
    load_agent(agent_dir / "agent.yaml", environ=ENV)  # the agent still loads


def test_a_file_changed_since_it_was_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(EXISTING)
    doc, _ = render_argus([{"name": "memory", "command": "npx", "args": []}], ["read_graph"])
    plan = plan_argus(path, doc)
    assert plan.changed and "+    - read_graph" in plan.diff
    path.write_text(EXISTING + "# edited meanwhile\n")
    with pytest.raises(WriteBackError, match="changed on disk since it was read"):
        apply_plan(plan)
    assert path.read_text().endswith("# edited meanwhile\n")
    assert not (tmp_path / "config.yaml.bak").exists()


def test_a_config_that_is_not_a_mapping_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("version: '1'\noptimizer: [a]\n")
    doc, _ = render_argus([], [])
    with pytest.raises(Exception) as err:
        plan_argus(path, doc)
    assert str(err.value) == f"{path}:2: optimizer: is not a mapping"
