"""Each diagnostic of the reference list, triggered by a small real config and catalog snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from workbench.cli import main
from workbench.config.filtering import ToolFiltering
from workbench.evaluate.diagnostics import Finding, Parts, has_errors, hybrid_floor
from workbench.evaluate.diagnostics import diagnose as diagnose_as
from workbench.runtimes.detect import detect_runtime
from workbench.search.types import Ranking
from workbench.workspace import Workspace, open_workspace

HEAD = "name: diag\nmodel:\n  provider: {provider}\n  name: {model}\ninstructions:\n  inline: hi\n"
BLOCK = (
    "tool_filtering:\n  enabled: true\n  top_k: {top_k}\n  similarity_threshold: {threshold}\n"
    "  always_include: {always}\n  always_include_top_n_used: {top_n}\n  search_method: {method}\n"
)
TOOLS: list[dict[str, Any]] = [
    {"name": "read_file", "description": "Read a file from disk", "inputSchema": {}},
    {"name": "write_file", "description": "Write a file to disk", "inputSchema": {}},
    {"name": "search", "description": "Search files by name", "inputSchema": {}},
    {"name": "list_dir", "description": "", "inputSchema": {}},
]
VECTORSTORE = (
    "tools:\n  - name: notes\n    type: vectorstore\n    description: my notes\n"
    "    source: docs.md\n"
)
OTHER: list[dict[str, Any]] = [
    {"name": "search", "description": "Search the web", "inputSchema": {}},
    {"name": "read/page", "description": "Fetch a page", "inputSchema": {}},
    {"name": "read?page", "description": "Fetch a page again", "inputSchema": {}},
]


def _write(
    tmp_path: Path,
    *,
    provider: str = "openai",
    model: str = "gpt-4o",
    block: bool = True,
    extra: str = "",
    **setting: Any,
) -> tuple[Path, Path]:
    values = {"top_k": 5, "threshold": 0.3, "always": "[]", "top_n": 0, "method": "bm25"}
    values.update(setting)
    text = HEAD.format(provider=provider, model=model) + extra
    if block:
        text += BLOCK.format(**values)
    agent = tmp_path / "agent.yaml"
    agent.write_text(text)
    snapshot = tmp_path / "catalog.json"
    servers = {"fs": {"tools": TOOLS}, "web": {"tools": OTHER}}
    snapshot.write_text(json.dumps({"holo_tune_catalog": 1, "servers": servers}))
    return agent, snapshot


def _open(tmp_path: Path, **kw: Any) -> Workspace:
    agent, snapshot = _write(tmp_path, **kw)
    return open_workspace(agent, catalog_file=snapshot, embedder_spec="none")


def diagnose(parts: Parts, setting: ToolFiltering | None = None, **kw: Any) -> list[Finding]:
    """The findings under the runtime detected from the agent, as ``check`` detects it."""
    runtime = detect_runtime(parts.agent.path, parts.agent.data)
    return diagnose_as(parts, setting, runtime=runtime, **kw)


def _codes(findings: list[Finding]) -> dict[str, Finding]:
    return {f.code: f for f in findings}


def test_a_clean_config_has_only_catalog_findings(tmp_path: Path) -> None:
    found = _codes(diagnose(_open(tmp_path)))
    assert set(found) == {"name-collision", "empty-description"}
    assert not has_errors(list(found.values()))


def test_catalog_findings_name_the_tools(tmp_path: Path) -> None:
    found = _codes(diagnose(_open(tmp_path)))
    assert found["empty-description"].evidence["tools"] == ["fs-list_dir"]
    assert "'read?page' is skipped" in found["name-collision"].message


def test_a_name_semantic_kernel_refuses_is_an_error(tmp_path: Path) -> None:
    agent, snapshot = _write(tmp_path)
    tools = [*TOOLS, {"name": "math.pow", "description": "Power", "inputSchema": {}}]
    snapshot.write_text(json.dumps({"holo_tune_catalog": 1, "servers": {"fs": {"tools": tools}}}))
    found = _codes(diagnose(open_workspace(agent, catalog_file=snapshot, embedder_spec="none")))
    err = found["runtime-refuses-names"]
    assert err.severity == "error" and "'math.pow'" in err.message
    assert "HoloDeck fails to start an agent with this server" in err.message


def test_tool_filtering_in_a_07_config_is_an_error(tmp_path: Path) -> None:
    ws = _open(tmp_path, extra="openai:\n  tool_search:\n    enabled: true\n")
    found = _codes(diagnose(ws))
    err = found["filtering-removed-0.7"]
    assert err.severity == "error" and err.evidence["runtime"] == "holodeck-0.7"
    assert "openai" in err.evidence["why"]
    assert err.evidence["line"] == 10


def test_anthropic_ignores_the_block(tmp_path: Path) -> None:
    ws = _open(tmp_path, provider="anthropic", model="claude-sonnet-4-5")
    err = _codes(diagnose(ws))["filtering-ignored-anthropic"]
    assert err.severity == "error" and err.evidence["provider"] == "anthropic"


def test_no_block_sends_everything_with_its_cost(tmp_path: Path) -> None:
    ws = _open(tmp_path, block=False)
    found = _codes(diagnose(ws))
    warning = found["filtering-disabled"]
    assert warning.evidence["tokens_all"] == ws.tokens.all and warning.evidence["tools"] == 6
    assert "no tool_filtering block" in warning.message


#: The findings about what the knobs do when the filter runs.
KNOB_CODES = {
    "semantic-is-bm25",
    "scored-as-bm25",
    "top-n-used-cold-start",
    "threshold-cuts-nothing",
    "threshold-cuts-everything",
    "always-include-unmatched",
    "always-include-ambiguous",
    "top-k-no-search",
}


def test_a_filter_that_does_not_run_gets_no_finding_about_its_knobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The research agent without its block used to get "every request carries all 18 tools"
    and top-n-used-cold-start ("the first 3 catalog tools ride along") side by side."""
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")
    samples = Path(__file__).resolve().parents[1] / "sample_configs"
    text = (samples / "research-agent.yaml").read_text()
    agent = tmp_path / "research-agent.yaml"
    agent.write_text(text[: text.index("\ntool_filtering:") + 1])
    catalog = str(samples / "research-agent.catalog.json")
    argv = ["check", str(agent), "--catalog", catalog, "--embedder", "none", "--json"]

    def codes(*more: str) -> set[str]:
        assert main([*argv, *more]) == 0
        return {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}

    no_block = codes()
    assert "filtering-disabled" in no_block and not no_block & KNOB_CODES
    # Asked for a filter (the flags): its knobs are checked, and nothing says it is off.
    enabled = codes("--enabled", "true")
    assert "top-n-used-cold-start" in enabled and "filtering-disabled" not in enabled
    # A block that is off: the same as none.
    agent.write_text(text.replace("  enabled: true\n", "  enabled: false\n"))
    off = codes()
    assert "filtering-disabled" in off and not off & KNOB_CODES


@pytest.mark.parametrize("method", ["semantic", "hybrid"])
def test_semantic_without_an_embedding_service_is_bm25(tmp_path: Path, method: str) -> None:
    ws = _open(tmp_path, method=method)
    warning = _codes(diagnose(ws))["semantic-is-bm25"]
    assert warning.evidence["search_method"] == method
    assert "no vectorstore" in warning.evidence["reason"]
    assert "semantic-is-bm25" not in _codes(diagnose(ws, ws.setting.with_(search_method="bm25")))


def test_an_agent_with_a_vectorstore_has_an_embedding_service(tmp_path: Path) -> None:
    (tmp_path / "docs.md").write_text("# notes\n")
    ws = _open(tmp_path, method="semantic", extra=VECTORSTORE)
    assert "semantic-is-bm25" not in _codes(diagnose(ws))


def test_semantic_scored_as_bm25_here_while_the_runtime_embeds_is_said(tmp_path: Path) -> None:
    """HoloDeck embeds (a vectorstore), holo-tune has no embedder here (``none``): the scores
    the threshold and unreachable-tools findings read are BM25's, and check says so."""
    (tmp_path / "docs.md").write_text("# notes\n")
    ws = _open(tmp_path, method="semantic", extra=VECTORSTORE)
    note = _codes(diagnose(ws))["scored-as-bm25"]
    assert note.severity == "info" and note.evidence["search_method"] == "semantic"
    assert "embeddings are off here" in note.evidence["reason"]
    assert "scored-as-bm25" not in _codes(diagnose(ws, ws.setting.with_(search_method="bm25")))
    # Without an embedding service the runtime's own BM25 is the finding, not this note.
    (tmp_path / "plain").mkdir()
    plain = _codes(diagnose(_open(tmp_path / "plain", method="semantic")))
    assert "semantic-is-bm25" in plain and "scored-as-bm25" not in plain


def test_top_n_used_names_the_first_catalog_tools(tmp_path: Path) -> None:
    ws = _open(tmp_path, top_n=2)
    warning = _codes(diagnose(ws))["top-n-used-cold-start"]
    assert warning.evidence["tools"] == ["fs-list_dir", "fs-read_file"]
    assert warning.evidence["tokens"] == ws.tokens.total([0, 1])


def test_hybrid_threshold_under_the_floor_cuts_nothing(tmp_path: Path) -> None:
    ws = _open(tmp_path, method="hybrid", threshold=0.9)
    size = len(ws.catalog)
    floor = hybrid_floor(size)
    assert floor == pytest.approx(61 / (60 + size))
    warning = _codes(diagnose(ws))["threshold-cuts-nothing"]
    assert warning.evidence["least_score"] == floor and warning.evidence["tools"] == size
    above = ws.setting.with_(similarity_threshold=0.99)
    assert "threshold-cuts-nothing" not in _codes(diagnose(ws, above))
    # the runtime's own scores reach the floor and never go under it
    lows = [float(ws.engine.rank(q, "hybrid").scores.min()) for q in ("read file", "web", "zzz")]
    assert min(lows) == pytest.approx(floor) and all(low >= floor - 1e-12 for low in lows)


def test_a_zero_threshold_cuts_nothing_in_bm25(tmp_path: Path) -> None:
    found = _codes(diagnose(_open(tmp_path, threshold=0.0)))
    assert found["threshold-cuts-nothing"].severity == "info"


def test_a_semantic_threshold_above_the_cosine_range(tmp_path: Path) -> None:
    (tmp_path / "docs.md").write_text("# notes\n")
    ws = _open(tmp_path, method="semantic", threshold=0.9, extra=VECTORSTORE)
    parts = SimpleNamespace(
        agent=ws.agent,
        catalog=ws.catalog,
        tokens=ws.tokens,
        embedder=SimpleNamespace(model_id="local:all-MiniLM-L6-v2"),
    )
    warning = _codes(diagnose(parts))["threshold-cuts-everything"]
    # the range is the runtime's model's (HoloDeck's default for a vectorstore agent)
    assert warning.evidence == {
        "similarity_threshold": 0.9,
        "model": "text-embedding-3-small",
        "usual_max": 0.75,
    }
    assert "threshold-cuts-everything" not in _codes(
        diagnose(parts, ws.setting.with_(similarity_threshold=0.5))
    )
    # with rankings at hand the evidence is the data: most queries have no tool above 0.9
    size = len(ws.catalog)
    low = [
        Ranking("q", "semantic", "semantic", np.full(size, 0.4), np.arange(size)) for _ in range(3)
    ]
    data = _codes(diagnose(parts, rankings=low))["threshold-cuts-everything"]
    assert data.evidence["share_with_no_tool"] == 1.0 and data.evidence["queries"] == 3


def test_always_include_matching_none_or_several(tmp_path: Path) -> None:
    ws = _open(tmp_path, always='["search", "nothing_here", "fs-read_file"]')
    found = _codes(diagnose(ws))
    assert found["always-include-unmatched"].evidence == {"entry": "nothing_here"}
    ambiguous = found["always-include-ambiguous"].evidence
    assert ambiguous["taken"] == "fs-search" and ambiguous["tools"] == ["fs-search", "web-search"]


def test_top_k_no_larger_than_the_always_sent(tmp_path: Path) -> None:
    ws = _open(tmp_path, top_k=2, always='["read_file"]', top_n=1)
    warning = _codes(diagnose(ws))["top-k-no-search"]
    assert warning.evidence == {"top_k": 2, "always_sent": ["fs-read_file", "fs-list_dir"]}
    more = ws.setting.with_(top_k=3)
    assert "top-k-no-search" not in _codes(diagnose(ws, more))


def test_findings_are_sorted_errors_first(tmp_path: Path) -> None:
    ws = _open(tmp_path, provider="anthropic", model="claude-sonnet-4-5", top_n=1)
    severities = [f.severity for f in diagnose(ws, ToolFiltering(enabled=True))]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)


def test_check_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    agent, snapshot = _write(tmp_path, top_n=2)
    assert main(["check", str(agent), "--catalog", str(snapshot)]) == 0
    out = capsys.readouterr().out
    assert "top-n-used-cold-start" in out and "0 error(s)" in out
    assert main(["check", str(agent), "--catalog", str(snapshot), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == 0 and {f["code"] for f in data["findings"]} >= {
        "top-n-used-cold-start"
    }
    bad, snap = _write(tmp_path, provider="anthropic", model="claude-sonnet-4-5")
    assert main(["check", str(bad), "--catalog", str(snap)]) == 1
    assert "1 error(s)" in capsys.readouterr().err


MCP_ENTRIES = (
    "tools:\n"
    "  - name: fs\n    type: mcp\n    description: files\n    command: npx\n"
    "    env:\n      TOKEN: ${HOLO_TUNE_TEST_UNSET_TOKEN}\n"
    "  - name: web\n    type: mcp\n    description: web\n    command: holo-tune-no-such-server\n"
)


def test_check_makes_what_holodeck_refuses_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing ${VAR} and a stdio command HoloDeck rejects: check fails, with the evidence."""
    monkeypatch.delenv("HOLO_TUNE_TEST_UNSET_TOKEN", raising=False)
    agent, snapshot = _write(tmp_path, extra=MCP_ENTRIES)
    assert main(["check", str(agent), "--catalog", str(snapshot), "--json"]) == 1
    captured = capsys.readouterr()
    found = _codes([Finding(**f) for f in json.loads(captured.out)["findings"]])
    unset = found["config-unset-variable"]
    assert unset.severity == "error"
    assert unset.evidence == {
        "file": str(agent),
        "line": 13,
        "variable": "HOLO_TUNE_TEST_UNSET_TOKEN",
    }
    command = found["config-command-rejected"]
    assert command.severity == "error"
    assert command.evidence["command"] == "holo-tune-no-such-server"
    assert (command.evidence["file"], command.evidence["line"]) == (str(agent), 17)
    assert "warning" not in captured.err  # the loader's warnings are findings here, not stderr
    assert main(["check", str(agent), "--catalog", str(snapshot)]) == 1
    captured = capsys.readouterr()
    assert f"[{agent}:13]" in captured.out and f"[{agent}:17]" in captured.out
    assert "2 error(s)" in captured.out and "will not run this agent" in captured.err
    # Other commands go on with a warning on stderr; under --catalog no server starts, so the
    # server's unset key is not said there (check above still makes it an error).
    assert main(["tools", str(agent), "--catalog", str(snapshot)]) == 0
    err = capsys.readouterr().err
    assert "HOLO_TUNE_TEST_UNSET_TOKEN" not in err and "holo-tune-no-such-server" in err


def test_broken_server_sample_fails_check(capsys: pytest.CaptureFixture[str]) -> None:
    """sample_configs/broken-server.yaml names a command HoloDeck rejects (no server started)."""
    ws = open_workspace(
        Path("sample_configs/broken-server.yaml"),
        catalog_file=_snapshot_of_nothing(),
        embedder_spec="none",
    )
    errors = [f for f in diagnose(ws) if f.severity == "error"]
    assert [f.code for f in errors] == ["config-command-rejected"]
    assert errors[0].evidence["command"] == "holo-tune-no-such-server"
    assert errors[0].evidence["line"] == 24


def _snapshot_of_nothing() -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "catalog.json"
    servers = {name: {"tools": []} for name in ("memory", "missing", "filesystem")}
    path.write_text(json.dumps({"holo_tune_catalog": 1, "servers": servers}))
    return path
