"""The ``fastmcp`` runtime (FastMCP's tool search transform over a proxy of the agent's MCP
servers): the file ``export`` prints and ``tune --apply`` writes runs for real and its
``search_tools`` answers what holo-tune's fastmcp engine ranks at the tuned setting; ``search
--runtime fastmcp`` gives the package's own transform's results, in its order, on every data set.

The proxy file is run with the venv's python over stdio against tests/servers/toolserver.py (an
agent whose MCP entries run it) and reached with the ``mcp`` client; the package's own
``BM25SearchTransform`` is the oracle of tests/test_fastmcp_oracle.py.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp.mcp_config import MCPConfig
from fastmcp.server.transforms.search import BM25SearchTransform, RegexSearchTransform
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.test_fastmcp_oracle import SETS, oracle_of
from tests.test_fastmcp_proxy import listing_and_answers
from workbench.cli import main
from workbench.commands.search import read_queries
from workbench.evaluate.cases import load_cases
from workbench.runtimes.detect import detect_runtime
from workbench.search.strategies import FastMCPParams, FastMCPStrategy
from workbench.workspace import open_workspace

REPO = Path(__file__).resolve().parents[1]
TOOLSERVER = str(REPO / "tests" / "servers" / "toolserver.py")
SAMPLES = REPO / "sample_configs"
ProcessFinder = Callable[[str], list[int]]
#: The variable an entry's env names (its value must never be written into the file).
PROBE = "HOLO_TUNE_FASTMCP_PROBE"
SECRET = "s3cr3t-value-never-in-the-file"

CASES = """\
cases:
  - query: read a file from the office
    expected: [office-read-file]
  - query: run test tool 02 with what to look for
    expected: [office-tool_02]
  - query: test tool number 1 of the lab
    expected: [lab-tool_01]
  - query: alpha space tool
    expected: [office-alpha-tool]
  - query: test tool number 3
    expected: [office-tool_03]
  - query: lab tool 00
    expected: [lab-tool_00]
  - query: read the file again
    expected: [office-read-file]
  - query: what is the probe environment
    expected: [lab-env_probe]
  - query: test tool number 2 in the lab
    expected: [lab-tool_02]
  - query: read file
    expected: [office-read-file]
"""


#: An entry of every other transport HoloDeck has, and a stdio one with env_file and config.
EXTRA_ENTRIES = """\
  - name: remote
    type: mcp
    description: d
    transport: http
    url: https://${HOST_NAME}/mcp
    headers:
      Authorization: Bearer ${TOKEN}
  - name: events
    type: mcp
    description: d
    transport: sse
    url: http://localhost:9/sse
  - name: socket
    type: mcp
    description: d
    transport: websocket
    url: ws://localhost:9
  - name: configured
    type: mcp
    description: d
    command: npx
    args: [-y, x]
    env_file: .env
    config:
      root: ${HOME_DIR}
      depth: 2
"""


def write_agent(folder: Path, tag: str) -> Path:
    """An agent whose two MCP entries run the test server (the second sees ``${PROBE}``)."""
    office = [TOOLSERVER, "--tools", "4", "--odd", "--tag", tag]
    lab = [TOOLSERVER, "--tools", "3", "--echo-env", "PROBE", "--tag", tag]
    agent = folder / "agent.yaml"
    python = json.dumps(sys.executable)
    agent.write_text(
        "name: proxied\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\ntools:\n"
        f"  - name: office\n    type: mcp\n    description: o\n    command: {python}\n"
        f"    args: {json.dumps(office)}\n"
        f"  - name: lab\n    type: mcp\n    description: l\n    command: {python}\n"
        f"    args: {json.dumps(lab)}\n    env:\n      PROBE: ${{{PROBE}}}\n"
        "    request_timeout: 20\n"
    )
    (folder / "agent.cases.yaml").write_text(CASES)
    return agent


async def ask(
    proxy: Path, queries: Sequence[str], env: dict[str, str]
) -> tuple[list[str], list[list[dict[str, Any]]]]:
    """The proxy file's listing and its ``search_tools`` answer to each query (over stdio)."""
    params = StdioServerParameters(command=sys.executable, args=[str(proxy)], env=env)
    return await listing_and_answers(params, proxy.parent / "proxy.log", queries)


@pytest.mark.slow
def test_the_tuned_proxy_file_runs_and_searches_as_the_engine(
    tmp_path: Path,
    tag: str,
    find_processes: ProcessFinder,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / tag  # the proxy's own command line carries the tag too
    folder.mkdir()
    (folder / ".git").mkdir()
    agent = write_agent(folder, tag)
    monkeypatch.setenv(PROBE, SECRET)
    tune = ["tune", str(agent), "--runtime", "fastmcp", "--embedder", "none", "--folds", "2"]
    code = main([*tune, "--apply", "--force", "--json", "--no-what-if"])
    out, err = capsys.readouterr()
    assert code == 0, err
    tuned = json.loads(out)
    proxy = folder / "fastmcp_proxy.py"
    text = proxy.read_text()
    assert "+++ " in err and "FastMCP proxy written" in err
    assert SECRET not in text and f'env("{PROBE}")' in text  # a lookup, never the value
    assert f"max_results={tuned['max_results']}," in text
    assert tuned["file"] == "fastmcp_proxy.py" and tuned["variant"] == "bm25"

    ws = open_workspace(agent, embedder_spec="none")
    pins = tuple(tuned["always_visible"])
    params = FastMCPParams(max_results=tuned["max_results"], always_visible=pins)
    engine = FastMCPStrategy(ws.catalog, ws.tokens, params)
    queries = ["read a file", "test tool 02 for what to look", f"PROBE {SECRET}"]
    env = {**os.environ, PROBE: SECRET}
    listing, answers = anyio.run(ask, proxy, queries, env)
    assert listing == [*(t.name for t in engine.pinned), "search_tools", "call_tool"]
    found = [[tool["name"] for tool in answer] for answer in answers]
    assert found == [engine.found_names(q) for q in queries]
    assert all(found) and found[2][0] == "lab_env_probe"  # the value reached the server
    assert answers[2][0]["description"] == f"PROBE={SECRET}"
    assert find_processes(tag) == []  # the proxy and its servers are gone with the client


@pytest.mark.slow
def test_an_exported_regex_proxy_pins_what_keep_names(
    tmp_path: Path, tag: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--keep`` takes the proxy's names or holo-tune's; the listing is the pins + the meta
    tools; the regex transform answers as the engine's regex variant."""
    agent = write_agent(tmp_path, tag)
    monkeypatch.setenv(PROBE, SECRET)
    keep = ["--keep", "lab_tool_01", "--keep", "office-tool_03"]
    args = ["export", str(agent), "--runtime", "fastmcp", "--variant", "regex", *keep]
    assert main([*args, "--max-results", "2"]) == 0
    proxy = tmp_path / "fastmcp_proxy.py"
    proxy.write_text(capsys.readouterr().out)
    ws = open_workspace(agent, embedder_spec="none")
    pins = ("office_tool_03", "lab_tool_01")  # the proxy's listing order
    params = FastMCPParams(variant="regex", max_results=2, always_visible=pins)
    engine = FastMCPStrategy(ws.catalog, ws.tokens, params)
    queries = ["tool_0[0-3]", "read.file"]

    async def regex() -> tuple[list[str], list[list[str]]]:
        server = StdioServerParameters(command=sys.executable, args=[str(proxy)],
                                       env={**os.environ, PROBE: SECRET})  # fmt: skip
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listing = [t.name for t in (await session.list_tools()).tools]
            found = []
            for pattern in queries:
                result = await session.call_tool("search_tools", {"pattern": pattern})
                found.append([t["name"] for t in json.loads(result.content[0].text)])  # type: ignore[union-attr]
            return listing, found

    listing, found = anyio.run(regex)
    assert listing == [*pins, "search_tools", "call_tool"]
    assert found == [engine.found_names(q) for q in queries]
    assert found[0] == ["office_tool_02", "office_tool_01"]  # the pins are not searched


def test_the_exported_file_builds_the_proxy_fastmcp_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every transport HoloDeck has: stdio (env, config as MCP_CONFIG), http and sse with
    headers, a websocket left out with a note; loaded without serving, the file's CONFIG is an
    MCPConfig and its server holds the transform with the knobs."""
    agent = tmp_path / "agent.yaml"
    text = (SAMPLES / "research-agent.yaml").read_text()
    head, block = text.split("\ntool_filtering:")
    agent.write_text(head + EXTRA_ENTRIES + "\ntool_filtering:" + block)
    (tmp_path / ".env").write_text("")
    for name, value in (("BRAVE_API_KEY", "k"), ("HOST_NAME", "h.example"), ("TOKEN", "t0k"),
                        ("HOME_DIR", "/data")):  # fmt: skip
        monkeypatch.setenv(name, value)
    catalog = SAMPLES / "research-agent.catalog.json"
    args = ["export", str(agent), "--runtime", "fastmcp", "--catalog", str(catalog)]
    assert main([*args, "--allow-partial", "--keep", "read_graph", "--max-results", "4"]) == 0
    out, err = capsys.readouterr()
    assert "socket: FastMCP's MCPConfig has no websocket transport; left out" in err
    assert "configured: the proxy reads no env_file" in err
    for value in ("h.example", "t0k", "/data"):
        assert value not in out
    path = tmp_path / "fastmcp_proxy.py"
    path.write_text(out)
    loaded = runpy.run_path(str(path), run_name="holo_tune_test")
    config = MCPConfig.model_validate(loaded["CONFIG"])
    servers = config.mcpServers
    assert list(servers) == ["brave_search", "memory", "remote", "events", "configured"]
    assert servers["remote"].url == "https://h.example/mcp"  # type: ignore[union-attr]
    assert servers["remote"].headers == {"Authorization": "Bearer t0k"}  # type: ignore[union-attr]
    assert servers["events"].transport == "sse"  # type: ignore[union-attr]
    assert servers["brave_search"].env == {"BRAVE_API_KEY": "k"}  # type: ignore[union-attr]
    assert servers["brave_search"].cwd == str(tmp_path)  # type: ignore[union-attr]
    assert servers["brave_search"].timeout == 60000
    mcp_config = json.loads(servers["configured"].env["MCP_CONFIG"])  # type: ignore[union-attr]
    assert mcp_config == {"root": "/data", "depth": 2}
    transforms = [t for t in loaded["server"].transforms if isinstance(t, BM25SearchTransform)]
    assert len(transforms) == 1
    assert transforms[0]._max_results == 4
    assert transforms[0]._always_visible == {"memory_read_graph"}


def test_a_missing_variable_stops_the_proxy_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file names the variable it lacks when it starts (no traceback, no server started)."""
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    catalog = SAMPLES / "research-agent.catalog.json"
    agent = str(SAMPLES / "research-agent.yaml")
    assert main(["export", agent, "--runtime", "fastmcp", "--catalog", str(catalog)]) == 0
    path = tmp_path / "fastmcp_proxy.py"
    path.write_text(capsys.readouterr().out)
    env = {k: v for k, v in os.environ.items() if k != "BRAVE_API_KEY"}
    done = subprocess.run(
        [sys.executable, str(path)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr == (
        "fastmcp_proxy.py: set BRAVE_API_KEY: the agent's MCP servers use ${BRAVE_API_KEY}\n"
    )


# ------------------------------------------------------------------------- search --runtime fastmcp

#: The data sets (tests/data/datasets) the fidelity test searches, with about this many queries.
DATASETS = [s for s in SETS if s[1].parent.parent.name == "datasets"]
SAMPLE = 40


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS, ids=[s[0] for s in DATASETS])
def test_search_json_is_the_packages_own_transform_on_every_data_set(
    dataset: tuple[str, Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``selected`` is BM25SearchTransform's answer tool for tool, in order; ``ranking`` every
    tool it scores, best first; with pinned tools too, and the regex variant."""
    _, agent, snapshot, cases = dataset
    queries = [c.query for c in load_cases(cases)]
    queries = queries[:: max(1, len(queries) // SAMPLE)]
    file = tmp_path / "queries.txt"
    file.write_text("".join(q.replace("\n", " ") + "\n" for q in queries))
    queries = read_queries(str(file))  # as search reads them (stripped)
    oracle = oracle_of(snapshot)
    base = ["search", str(agent), "--queries", str(file), "--runtime", "fastmcp", "--json"]
    base += ["--catalog", str(snapshot), "--embedder", "none"]

    def search(*flags: str) -> list[dict[str, Any]]:
        assert main([*base, *flags]) == 0
        return [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    got = search("--top-k", "5")
    assert [g["selected"] for g in got] == oracle.search(
        BM25SearchTransform(max_results=5), queries
    )
    everything = oracle.search(BM25SearchTransform(max_results=len(oracle.tools)), queries)
    assert [[r["tool"] for r in g["ranking"]] for g in got] == everything
    assert all(g["order"] == "ranked" and g["runtime"]["name"] == "fastmcp" for g in got)
    assert all([r["score"] for r in g["ranking"]] == sorted(
        (r["score"] for r in g["ranking"]), reverse=True) for g in got)  # fmt: skip
    assert sum(map(len, everything)) > len(queries)

    pins = list(dict.fromkeys(name for names in everything for name in names[:1]))[:3]
    flags = [f for name in pins for f in ("--always-include", name)]
    pinned = search("--top-k", "3", *flags)
    transform = BM25SearchTransform(max_results=3, always_visible=pins)
    assert [g["selected"] for g in pinned] == oracle.search(transform, queries)

    patterns = ["tool", "^get", "list|search", "(unclosed"]
    file.write_text("".join(p + "\n" for p in patterns))
    regex = search("--variant", "regex", "--top-k", "4")
    assert [g["selected"] for g in regex] == oracle.search(
        RegexSearchTransform(max_results=4), patterns
    )


def test_search_text_and_json_say_the_transform(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """HoloDeck's flags that FastMCP does not read are said to be ignored; the text shows where
    the transform's results end; an unknown pin is one line, exit 2."""
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    catalog = str(SAMPLES / "research-agent.catalog.json")
    args = ["search", str(SAMPLES / "research-agent.yaml"), "remember that Ada wrote it"]
    args += ["--runtime", "fastmcp", "--catalog", catalog, "--embedder", "none"]
    assert main([*args, "--top-k", "2", "--method", "semantic"]) == 0
    out, err = capsys.readouterr()
    assert "--method: fastmcp's search does not read it; ignored" in err
    assert "BM25SearchTransform(max_results=2)" in out and "returned: 2" in out
    assert main([*args, "--json", "--always-include", "memory_read_graph"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["setting"]["always_visible"] == ["memory_read_graph"]
    assert "memory_read_graph" not in [r["tool"] for r in data["ranking"]]
    assert data["top_k"] == 5 and data["method"] == "bm25" and len(data["selected"]) == 5
    assert data["tokens"]["request"] > data["tokens"]["selected"] > 0
    assert main([*args, "--always-include", "no_such_tool"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no tool named 'no_such_tool'" in err
    holodeck = [a if a != "fastmcp" else "holodeck-0.6" for a in args]
    assert main([*holodeck, "--variant", "regex", "--json"]) == 0  # HoloDeck's search, as before
    out, err = capsys.readouterr()
    assert "--variant: holodeck-0.6 is searched with HoloDeck's filter; ignored" in err
    assert "order" not in json.loads(out)


# ---------------------------------------------------------------------------- --apply, detection


def test_apply_writes_once_then_keeps_a_backup_and_detection_follows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", "x")
    (tmp_path / ".git").mkdir()
    agent = tmp_path / "agent.yaml"
    shutil.copy(SAMPLES / "research-agent.yaml", agent)
    assert detect_runtime(agent, {}).name != "fastmcp"
    tune = ["tune", str(agent), "--runtime", "fastmcp", "--no-what-if", "--embedder", "none"]
    tune += ["--force"]  # the knee's proposal is measured worse than FastMCP's default
    tune += ["--catalog", str(SAMPLES / "research-agent.catalog.json")]
    tune += ["--cases", str(SAMPLES / "research-agent.cases.yaml"), "--apply"]
    assert main(tune) == 0
    out = capsys.readouterr().out
    proxy = tmp_path / "fastmcp_proxy.py"
    assert "+++ " in out and "export    holo-tune export" in out
    written = proxy.read_text()
    info = detect_runtime(agent, {})
    assert info.name == "fastmcp" and info.source == "yaml"
    tuned = json.loads(capsys.readouterr().out if main([*tune[:-1], "--json"]) == 0 else "")
    search = ["search", str(agent), "add an observation to the graph", "--embedder", "none"]
    assert main([*search, "--catalog", tune[-4], "--json"]) == 0  # detected: the file's knobs
    found = json.loads(capsys.readouterr().out)
    assert found["runtime"]["name"] == "fastmcp"
    assert found["setting"]["always_visible"] == tuned["always_visible"]
    # (the tuned transform may be the regex one, whose pattern this query does not match)
    assert found["top_k"] == tuned["max_results"] >= len(found["selected"])
    assert main(tune) == 0
    assert "no change" in capsys.readouterr().err
    proxy.write_text(written.replace("max_results=", "max_results=9 or "))
    assert main(tune) == 0
    assert (tmp_path / "fastmcp_proxy.py.bak").read_text() != written
    assert proxy.read_text() == written


def test_an_agent_with_no_mcp_entry_is_tuned_but_has_nothing_to_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A data set's agent lists its tools in a catalog, not MCP entries: the proxy has nothing
    to mount, yet the figures stand. ``tune`` reports them with the reason on stderr; ``--apply``
    stops on that reason (exit 2) and writes nothing."""
    data = REPO / "tests" / "data" / "livemcpbench_slice"
    agent = tmp_path / "agent.yaml"
    shutil.copy(data / "agent.yaml", agent)
    tune = ["tune", str(agent), "--runtime", "fastmcp", "--embedder", "none", "--folds", "2"]
    tune += ["--catalog", str(data / "catalog.json"), "--cases", str(data / "cases.jsonl")]
    assert main([*tune, "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["transform"] is None and report["heldout"]["hit"] > 0
    assert "no MCP entry FastMCP can proxy" in captured.err
    assert "no configuration to write" in captured.err
    assert main([*tune, "--apply"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("holo-tune: error: the fastmcp proxy would break")
    assert not (tmp_path / "fastmcp_proxy.py").exists()
