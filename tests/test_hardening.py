"""Hostile inputs (issue 13): each ends in one line and exit code 2, quickly, through the real CLI.

Each case is a file an attacker or a careless user could hand holo-tune; before the limits of
``workbench.limits`` each one hung, crawled, printed a traceback or crashed the interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench import cli
from workbench.catalog.serverlogs import log_name
from workbench.errors import EXIT_INTERNAL
from workbench.limits import MAX_DEPTH, MAX_FILE_BYTES, json_depth

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
CATALOG = SAMPLES / "research-agent.catalog.json"
AGENT = SAMPLES / "research-agent.yaml"

HEAD = "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"


def laughs(indent: str = "") -> str:
    """Nine lines that stand for 9^9 (387 million) strings."""
    lines = [f'{indent}a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 9):
        lines.append(f"{indent}a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture(autouse=True)
def _brave_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample agent names ${BRAVE_API_KEY}: set, so its warning does not join the output."""
    monkeypatch.setenv("BRAVE_API_KEY", "placeholder")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    started = time.monotonic()
    code = cli.main(list(args))
    assert time.monotonic() - started < 10
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("holo-tune: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("text", "line"),
    [
        (HEAD + "x_bomb:\n" + laughs("  "), 13),
        (HEAD + "tool_filtering:\n  enabled: true\n" + laughs("  "), 14),
    ],
    ids=["outside-tool_filtering", "inside-tool_filtering"],
)
def test_billion_laughs_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, line: int
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    code, _, err = run(capsys, "tools", str(path), "--catalog", str(CATALOG))
    one_line_error(code, err, f"agent.yaml:{line}:", "alias bomb")


def test_a_few_aliases_are_fine(tmp_path: Path) -> None:
    """Anchors used as users use them (a shared env block) load."""
    from workbench.config import load_agent

    path = tmp_path / "agent.yaml"
    path.write_text(  # (an anchor holder at the top level is a key HoloDeck refuses)
        HEAD
        + "tools:\n"
        + "  - {name: s0, type: mcp, description: d, command: npx, env: &env {A: '1', B: '2'}}\n"
        + "".join(
            f"  - {{name: s{i}, type: mcp, description: d, command: npx, env: *env}}\n"
            for i in range(1, 40)
        )
    )
    agent = load_agent(path, environ={}, dotenv_files=[], global_configs=[])
    assert len(agent.tools) == 40


@pytest.mark.timeout(10)
def test_fifo_is_refused_without_waiting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "agent.yaml"
    os.mkfifo(fifo)
    code, _, err = run(capsys, "tools", str(fifo), "--catalog", str(CATALOG))
    one_line_error(code, err, "agent.yaml: not a regular file")


@pytest.mark.timeout(10)
@pytest.mark.parametrize("suffix", [".yaml", ".jsonl"])
def test_fifo_cases_and_catalog_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str
) -> None:
    fifo = tmp_path / f"cases{suffix}"
    os.mkfifo(fifo)
    code, _, err = run(
        capsys,
        "eval",
        str(AGENT),
        "--catalog",
        str(CATALOG),
        "--cases",
        str(fifo),
        "--method",
        "bm25",
    )
    one_line_error(code, err, f"cases{suffix}: not a regular file")
    code, _, err = run(capsys, "tools", str(AGENT), "--catalog", str(fifo))
    one_line_error(code, err, f"cases{suffix}: not a regular file")


def test_too_large_file_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    with path.open("wb") as out:  # sparse: the size is what counts, nothing is read
        out.truncate(MAX_FILE_BYTES + 1)
    code, _, err = run(capsys, "tools", str(path), "--catalog", str(CATALOG))
    one_line_error(code, err, "agent.yaml: too large")


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "nested",
    [
        "x: " + "[" * 1000 + "]" * 1000 + "\n",
        "x: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n",
        "".join(" " * i + f"k{i}:\n" for i in range(1000)) + " " * 1000 + "v: 1\n",
        "x:\n  " + "- " * 300 + "1\n",
    ],
    ids=["flow-lists", "flow-mappings", "block-mappings", "block-lists"],
)
def test_deep_nesting_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nested: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(HEAD + nested)
    code, _, err = run(capsys, "tools", str(path), "--catalog", str(CATALOG))
    one_line_error(code, err, f"nested deeper than {MAX_DEPTH} levels")


def test_nesting_at_the_limit_loads(tmp_path: Path) -> None:
    from workbench.config import load_agent

    path = tmp_path / "agent.yaml"
    # the document, tools, the entry and its config are four levels (a top-level key of its own
    # would be one HoloDeck refuses)
    depth = MAX_DEPTH - 4
    nested = "[" * depth + "]" * depth
    path.write_text(
        HEAD
        + "tools:\n  - name: s\n    type: mcp\n    description: d\n    command: npx\n"
        + f"    config:\n      x: {nested}\n"
    )
    agent = load_agent(path, environ={}, dotenv_files=[], global_configs=[])
    value = agent.data["tools"][0]["config"]["x"]
    for _ in range(depth - 1):
        value = value[0]
    assert value == []


@pytest.mark.timeout(30)
def test_very_deep_nesting_does_not_crash_the_interpreter(tmp_path: Path) -> None:
    """50,000 levels crashed libyaml's composer (a segfault) and `_duplicates` (Python's own
    stack): a separate process, so that a regression fails this test instead of the run."""
    path = tmp_path / "agent.yaml"
    path.write_text(HEAD + "x: " + "[" * 50_000 + "]" * 50_000 + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "workbench", "tools", str(path), "--catalog", str(CATALOG)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"holo-tune: error: {path}:7: nested deeper than {MAX_DEPTH} levels (holo-tune's limit)"
    ]


@pytest.mark.timeout(20)
def test_recursive_alias_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(HEAD + "x: &a [1, *a]\n")
    code, _, err = run(capsys, "tools", str(path), "--catalog", str(CATALOG))
    one_line_error(code, err, "agent.yaml:7:", "recursive structure")


def test_long_server_name_gets_a_short_log_name() -> None:
    """A 300-character entry name made the log file name too long for the file system (an
    ExceptionGroup traceback from the listing's task group)."""
    name = log_name("a" * 10_000)
    assert len(name.encode()) < 255 and name.endswith(".log")
    assert log_name("a" * 10_000) != log_name("a" * 10_001)
    assert log_name("memory") == "memory.log"


@pytest.mark.timeout(60)
def test_enormous_tool_name_loads_or_fails_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(
        HEAD + "tools:\n  - name: " + "a" * 1_000_000 + "\n    type: vectorstore\n"
        "    description: d\n    source: data.md\n"
    )
    code, out, err = run(capsys, "tools", str(path), "--catalog", str(CATALOG))
    assert code == 0, err
    assert "Traceback" not in err and "tokens" in out
    assert "agent.yaml:8: tools[0].name: 1,000,000 characters; OpenAI refuses function names" in err


def _catalog_with(tmp_path: Path, edit: str) -> Path:
    text = CATALOG.read_text()
    path = tmp_path / "catalog.json"
    path.write_text(text[: text.rindex("}")] + edit + "}")
    return path


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (', "x": ' + "9" * 100_000, "more than 4300 digits"),
        (', "x": ' + "[" * 100_000 + "]" * 100_000, "nested deeper than"),
        (', "x": ' + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), "nested deeper than"),
    ],
    ids=["huge-int", "deep-json", "deep-but-parseable"],
)
def test_hostile_catalog_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, edit: str, needle: str
) -> None:
    path = _catalog_with(tmp_path, edit)
    code, _, err = run(capsys, "tools", str(AGENT), "--catalog", str(path))
    one_line_error(code, err, "catalog.json", needle)


def test_900_level_input_schema_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = json.loads(CATALOG.read_text())
    schema = '{"type": "string"}'
    for _ in range(900):  # built as text: json.dumps itself would recurse
        schema = f'{{"type": "object", "properties": {{"p": {schema}}}}}'
    data["servers"]["memory"]["tools"][0]["inputSchema"] = "SCHEMA"
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(data).replace('"SCHEMA"', schema))
    code, _, err = run(capsys, "tools", str(AGENT), "--catalog", str(path))
    one_line_error(code, err, "catalog.json", "nested deeper than")


def test_json_depth_walks_without_recursion() -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    assert json_depth(deep) == MAX_DEPTH + 1  # stops counting past the limit
    assert json_depth({"a": [1, {"b": 2}]}) == 3 and json_depth(5) == 0


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        (
            "cases.yaml",
            "cases:\n  - query: q\n    expected: [x]\n    bomb:\n" + laughs("      "),
            "alias bomb",
        ),
        ("cases.yaml", "cases: " + "[" * 2000 + "]" * 2000, "nested deeper than"),
        ("cases.jsonl", '{"query": "q", "expected": ' + "[" * 5000 + "]" * 5000 + "}\n", "deeper"),
        ("cases.jsonl", '{"query": "q", "expected": ["x"], "n": ' + "9" * 5000 + "}\n", "digits"),
    ],
    ids=["yaml-bomb", "yaml-deep", "jsonl-deep", "jsonl-huge-int"],
)
def test_hostile_cases_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, _, err = run(
        capsys,
        "eval",
        str(AGENT),
        "--catalog",
        str(CATALOG),
        "--cases",
        str(path),
        "--method",
        "bm25",
    )
    one_line_error(code, err, name, needle)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
        ('{"memory-read_graph": ' + "9" * 10_000 + "}", "digits"),
    ],
    ids=["deep", "huge-int"],
)
def test_hostile_usage_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, needle: str
) -> None:
    path = tmp_path / "usage.json"
    path.write_text(text)
    code, _, err = run(
        capsys,
        "search",
        str(AGENT),
        "q",
        "--catalog",
        str(CATALOG),
        "--usage",
        str(path),
        "--method",
        "bm25",
    )
    one_line_error(code, err, "usage.json", needle)


def test_internal_error_is_one_line_exit_3(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: object, **__: object) -> None:
        raise ZeroDivisionError("something nobody foresaw\nsecond line")

    monkeypatch.setattr("workbench.commands.export.load_agent", boom)
    code = cli.main(["export", str(AGENT)])
    _, err = capsys.readouterr()
    assert code == EXIT_INTERNAL
    assert err.splitlines() == [
        "holo-tune: internal error: ZeroDivisionError: something nobody foresaw second line; "
        "rerun with --debug for the traceback"
    ]
    code = cli.main(["export", str(AGENT), "--debug"])
    _, err = capsys.readouterr()
    assert code == EXIT_INTERNAL
    assert err.startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: something nobody foresaw" in err


def test_internal_error_of_a_group_names_its_first_exception(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_: object, **__: object) -> None:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [OSError(36, "File name too long")])

    monkeypatch.setattr("workbench.commands.export.load_agent", boom)
    assert cli.main(["export", str(AGENT)]) == EXIT_INTERNAL
    assert "internal error: OSError: [Errno 36] File name too long;" in capsys.readouterr().err


def test_write_back_on_a_file_ending_in_a_keep_scalar_is_refused(tmp_path: Path) -> None:
    """Appending the block after a ``|+`` scalar would add a blank line to its value: the full
    check sees it and refuses (the quick check of the block's lines alone would not)."""
    from workbench.config.filtering import ToolFiltering
    from workbench.config.writeback.block import plan_write
    from workbench.errors import WriteBackError

    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions:\n  inline: |+\n    hi\n"
    )
    with pytest.raises(WriteBackError, match="layout defeats a safe edit"):
        plan_write(path, ToolFiltering(enabled=True))


def test_write_back_of_a_large_file_changes_only_the_block(tmp_path: Path) -> None:
    """Not a timing test (benchmarks/bench_writeback.py measures): the plan of a large file
    changes only the block and its diff is the few lines around it."""
    from benchmarks.bench_writeback import agent_text
    from workbench.config import load_agent
    from workbench.config.writeback.block import plan_write

    path = tmp_path / "agent.yaml"
    path.write_text(agent_text(2))
    agent = load_agent(path, environ={}, dotenv_files=[], global_configs=[], missing_env="warn")
    assert agent.filtering is not None
    plan = plan_write(path, agent.filtering.with_(top_k=7, search_method="bm25"))
    assert plan.diff.count("\n+") == 3 and "+  top_k: 7" in plan.diff  # +++ and two lines
    old, new = plan.old.decode(), plan.new_text
    assert (
        old.replace("top_k: 5", "top_k: 7", 1).replace(
            "search_method: semantic", "search_method: bm25", 1
        )
        == new
    )


@pytest.mark.timeout(20)
def test_fifo_as_function_tool_file_is_a_note_not_a_hang(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "tool.py")
    path = tmp_path / "agent.yaml"
    path.write_text(
        HEAD + "tools:\n  - name: f\n    type: function\n    description: d\n"
        "    file: tool.py\n    function: f\n"
    )
    code, out, err = run(capsys, "tools", str(path), "--catalog", str(CATALOG), "--json")
    assert code == 0, err
    assert "f-f" in out or '"f' in out


def test_an_unhashable_key_in_the_block_is_refused_by_the_write_back(tmp_path: Path) -> None:
    """Found by the fuzz test: a flow block with a list as a key composes but does not build;
    the write-back (which builds the block alone) says so in one line instead of PyYAML's
    ConstructorError."""
    from workbench.config.filtering import ToolFiltering
    from workbench.config.writeback.block import plan_write
    from workbench.errors import ConfigError

    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: flow-agent\n"
        "model: {provider: openai, name: gpt-4o}\n"
        "instructions:\n  inline: Be brief.\n"
        "tool_filtering: {enabled: true, [memory-read_graph]}   # compact\n"
    )
    with pytest.raises(ConfigError) as err:
        plan_write(path, ToolFiltering(top_k=3))
    cause = "not valid YAML: while constructing a mapping, found unhashable key"
    assert err.value.one_line() == f"{path}:5: {cause}"


def test_fifo_in_the_write_paths_is_refused_or_skipped_without_waiting(tmp_path: Path) -> None:
    """The label store, the write-back plan, .mcp.json and the runtime's pin files read files
    too; a FIFO in any of them is a one-line refusal (or, for a pin that only hints, skipped)."""
    from workbench.config.filtering import ToolFiltering
    from workbench.config.writeback.block import plan_write
    from workbench.config.writeback.mcp_json import plan_mcp_json
    from workbench.errors import CasesError, ConfigError
    from workbench.evaluate.casestore import load_expected
    from workbench.runtimes.detect import detect_runtime

    started = time.monotonic()
    for name in ("cases.yaml", "agent.yaml", ".mcp.json", "uv.lock"):
        os.mkfifo(tmp_path / name)
    with pytest.raises(CasesError, match=r"cases\.yaml: not a regular file"):
        load_expected(tmp_path / "cases.yaml")
    with pytest.raises(ConfigError, match=r"agent\.yaml: not a regular file"):
        plan_write(tmp_path / "agent.yaml", ToolFiltering(top_k=3))
    with pytest.raises(ConfigError, match=r"\.mcp\.json: not a regular file"):
        plan_mcp_json(tmp_path / ".mcp.json", {"mcpServers": {}}, ())
    (tmp_path / ".git").mkdir()
    (tmp_path / "labels.yaml").symlink_to(tmp_path / "gone.yaml")  # dangling: no file yet
    assert load_expected(tmp_path / "labels.yaml") == {}
    found = detect_runtime(tmp_path / "agent.yaml", {}, installed=lambda: None)
    assert found.name == "holodeck-0.6" and found.source != "pin"
    assert time.monotonic() - started < 5
