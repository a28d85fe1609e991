"""``eval`` and ``tune`` from the command line: output contracts and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import run_cli

from workbench.cli import main

TOOLS = {
    "weather": [
        ("get_forecast", "Weather forecast for a city for the next days"),
        ("get_alerts", "Severe weather alerts for a region"),
    ],
    "mail": [
        ("send_email", "Send an email message to a recipient"),
        ("list_inbox", "List the messages in the email inbox"),
        ("delete_email", "Delete an email message"),
    ],
    "files": [
        ("read_file", "Read the contents of a file"),
        ("write_file", "Write text to a file"),
        ("list_directory", "List the files in a directory"),
    ],
}
CASES = [
    ("will it rain in Paris tomorrow forecast", ["weather-get_forecast"]),
    ("any storm alerts for Texas", ["get_alerts"]),
    ("send an email to Bob", ["mail-send_email"]),
    ("show my inbox messages", ["list_inbox"]),
    ("delete that email", ["delete_email"]),
    ("read the file notes.txt", ["read_file"]),
    ("write hello to a file", ["write_file"]),
    ("what files are in this directory", ["list_directory"]),
    ("email the forecast to Ann", ["send_email", "get_forecast"]),
    ("list the directory then read a file", ["list_directory", "read_file"]),
]


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    servers: dict[str, Any] = {
        name: {
            "tools": [
                {"name": n, "description": d, "inputSchema": {"type": "object", "properties": {}}}
                for n, d in tools
            ]
        }
        for name, tools in TOOLS.items()
    }
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"holo_tune_catalog": 1, "servers": servers}))
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: cli\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: hi\n"
        "tool_filtering:\n  enabled: true\n  top_k: 2\n  similarity_threshold: 0.3\n"
        "  always_include: []\n  always_include_top_n_used: 0\n  search_method: bm25\n"
    )
    cases = tmp_path / "labelled.jsonl"
    cases.write_text("".join(json.dumps({"query": q, "expected": e}) + "\n" for q, e in CASES))
    return {"agent": agent, "catalog": catalog, "cases": cases, "dir": tmp_path}


def _args(world: dict[str, Path], command: str, *more: str) -> list[str]:
    base = [command, str(world["agent"]), "--catalog", str(world["catalog"])]
    return [*base, "--cases", str(world["cases"]), *more]


def test_eval_json(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(world, "eval", "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cases"] == len(CASES) and data["setting"]["top_k"] == 2
    assert len(data["per_case"]) == len(CASES)
    first = data["per_case"][0]
    assert first["expected"] == ["weather-get_forecast"] and first["rank_of_first"] == 1
    assert "weather-get_forecast" in first["selected"] and len(first["selected"]) <= 2
    assert 0 < data["metrics"]["token_reduction"] < 1


def test_eval_flags_override_the_block(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(world, "eval", "--json", "--top-k", "8", "--threshold", "0")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"]["recall"] == 1.0 and data["setting"]["top_k"] == 8


def test_min_recall_gate(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(world, "eval", "--min-recall", "0.1")) == 0
    assert "recall" in capsys.readouterr().out
    assert main(_args(world, "eval", "--top-k", "1", "--min-recall", "0.99")) == 1
    err = capsys.readouterr().err
    err = "".join(ln for ln in err.splitlines(True) if "holo-tune: cases:" not in ln)
    assert "below --min-recall 0.99" in err and err.count("\n") == 1


def test_a_bad_cases_file_exits_2_with_one_line(world: dict[str, Path]) -> None:
    bad = world["dir"] / "bad.jsonl"
    bad.write_text('{"query": "ok", "expected": ["read_file"]}\n{"query": "x", "expected": 5}\n')
    argv = ["eval", str(world["agent"]), "--catalog", str(world["catalog"]), "--cases", str(bad)]
    run = run_cli(*argv)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "Traceback" not in run.stderr
    assert f"{bad}:2: expected:" in run.stderr


def test_unknown_names_warn_with_file_and_line(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with world["cases"].open("a") as f:
        f.write(json.dumps({"query": "q", "expected": ["read_file", "no_such_tool"]}) + "\n")
        f.write(json.dumps({"query": "q2", "expected": ["gone"]}) + "\n")
    assert main(_args(world, "eval", "--json")) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["cases"] == len(CASES) + 1
    assert f"{world['cases']}:11: unknown expected tool 'no_such_tool'" in captured.err
    kept = len(CASES) + 1
    line = f"{kept} of {kept + 1} cases kept; 1 dropped: none of their expected tools"
    assert line in captured.err


def test_without_cases_the_agents_test_cases_are_used(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", str(world["agent"]), "--catalog", str(world["catalog"])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no cases" in err and "agent.cases.yaml" in err and err.count("\n") == 1
    with world["agent"].open("a") as f:
        f.write("test_cases:\n  - input: send a mail to Bob\n    expected_tools: [send_email]\n")
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["cases"] == 1 and data["per_case"][0]["expected"] == ["send_email"]
    assert data["cases_source"] == {"kind": "agent", "path": str(world["agent"])}
    assert "cases: the agent's test_cases" in captured.err


def test_the_cases_file_beside_the_agent_comes_after_its_test_cases(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The one default order: --cases, the agent's test_cases, <stem>.cases.yaml beside it."""
    beside = world["dir"] / "agent.cases.yaml"
    beside.write_text(
        "# labelled\ncases:\n  - query: read the file notes.txt\n    expected: [read_file]\n"
        "  - query: send an email to Bob\n    expected: [send_email]\n"
    )
    argv = ["eval", str(world["agent"]), "--catalog", str(world["catalog"]), "--json"]
    for command in ("eval", "compare"):
        assert main([command, *argv[1:]]) == 0
        captured = capsys.readouterr()
        if command == "eval":
            assert json.loads(captured.out)["cases"] == 2
        assert f"cases: {beside} (beside the agent)" in captured.err
    assert main([*argv, "--cases", str(world["cases"])]) == 0
    assert json.loads(capsys.readouterr().out)["cases"] == len(CASES)  # --cases wins
    with world["agent"].open("a") as f:
        f.write("test_cases:\n  - input: send a mail to Bob\n    expected_tools: [send_email]\n")
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["cases_source"]["kind"] == "agent"


def test_tune_json_and_budget(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(world, "tune", "--json", "--max-tokens", "150")) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {
        "runtime", "cases", "budget", "setting", "heldout", "default", "front", "what_if",
    }  # fmt: skip
    assert data["runtime"]["name"] == "holodeck-0.6"
    assert isinstance(data["what_if"], list)
    assert set(data["difference"]) == {"recall", "tokens"}
    assert isinstance(data["distinguishable"], bool)
    assert data["budget"] == {"max_tokens": 150, "min_reduction": None}
    assert data["setting"]["enabled"] is True and data["setting"]["search_method"] == "bm25"
    assert data["heldout"]["tokens_all"] == data["default"]["tokens_all"]
    assert data["front"] and {"setting", "recall", "tokens_selected_mean"} == set(data["front"][0])
    # the proposal keeps the budget on every case, measured by eval
    s = data["setting"]
    flags = ["--top-k", str(s["top_k"]), "--threshold", str(s["similarity_threshold"])]
    assert main(_args(world, "eval", "--json", *flags)) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["tokens_selected_mean"] <= 150


def test_tune_apply_writes_the_block(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """--force: on this 154-token catalog the verdict keeps every tool (writes nothing)."""
    before = world["agent"].read_text()
    assert main(_args(world, "tune", "--apply", "--folds", "3")) == 0
    assert "nothing written: the verdict is keep-all" in capsys.readouterr().err
    assert world["agent"].read_text() == before
    assert main(_args(world, "tune", "--apply", "--folds", "3", "--force")) == 0
    out = capsys.readouterr()
    assert "proposed" in out.out and "held-out" in out.out
    after = world["agent"].read_text()
    assert (world["dir"] / "agent.yaml.bak").read_text() == before
    head = before.split("tool_filtering:")[0]
    assert after.startswith(head)
    assert "tool_filtering written" in out.err


def test_tune_rejects_bad_budgets(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_args(world, "tune", "--min-reduction", "2")) == 2
    assert "--min-reduction" in capsys.readouterr().err
    assert main(_args(world, "tune", "--folds", "1")) == 2


def test_a_missing_variable_does_not_stop_a_measurement(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOLO_TUNE_TEST_UNSET_KEY", raising=False)
    text = (
        world["agent"]
        .read_text()
        .replace(
            "tool_filtering:",
            "tools:\n  - name: mail\n    type: mcp\n    description: mail\n    command: npx\n"
            "    args: [mail-server]\n"
            "    env:\n      KEY: ${HOLO_TUNE_TEST_UNSET_KEY}\ntool_filtering:",
        )
    )
    world["agent"].write_text(text)
    assert main(_args(world, "eval", "--json")) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["cases"] == len(CASES)
    # Under --catalog no server starts: a key only the server's entry uses is not said.
    assert "HOLO_TUNE_TEST_UNSET_KEY" not in captured.err


def test_under_catalog_only_a_servers_unset_key_goes_unsaid(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No BRAVE_API_KEY warning where no server starts; a variable used elsewhere in the agent
    (here its instructions) is still said, and so is the server's key once servers start."""
    monkeypatch.delenv("HOLO_TUNE_TEST_UNSET_KEY", raising=False)
    monkeypatch.delenv("HOLO_TUNE_TEST_UNSET_TEXT", raising=False)
    text = world["agent"].read_text()
    text = text.replace(
        "tool_filtering:",
        "tools:\n  - name: mail\n    type: mcp\n    description: mail\n    command: npx\n"
        "    args: [mail-server, --key, '${HOLO_TUNE_TEST_UNSET_KEY}']\n"
        "    env:\n      KEY: ${HOLO_TUNE_TEST_UNSET_KEY}\n"
        "tool_filtering:",
    ).replace("  inline: hi\n", "  inline: hi ${HOLO_TUNE_TEST_UNSET_TEXT}\n")
    world["agent"].write_text(text)
    from workbench.commands.common import agent_warnings
    from workbench.config import load_agent

    agent = load_agent(world["agent"], missing_env="warn")
    everything = agent_warnings(agent)
    assert [w for w in everything if "HOLO_TUNE_TEST_UNSET_KEY" in w]  # servers start: said
    quiet = agent_warnings(agent, servers_start=False)
    assert not [w for w in quiet if "HOLO_TUNE_TEST_UNSET_KEY" in w]
    assert [w for w in quiet if "HOLO_TUNE_TEST_UNSET_TEXT" in w]


def test_tune_says_whether_the_proposal_is_distinguishable(
    world: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The paired difference is of the held-out proposal and the current setting per case: its
    mean is the difference of the two reported figures; 10 cases cannot tell them apart."""
    assert main(_args(world, "tune", "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    diff = data["difference"]["recall"]
    assert diff["mean"] == pytest.approx(data["heldout"]["recall"] - data["default"]["recall"])
    tokens = data["difference"]["tokens"]
    mean_tokens = data["heldout"]["tokens_selected_mean"] - data["default"]["tokens_selected_mean"]
    assert tokens["mean"] == pytest.approx(mean_tokens)
    low, high = diff["ci95"]
    assert low <= diff["mean"] <= high
    assert main(_args(world, "tune")) == 0
    out = capsys.readouterr().out
    verdict = [line for line in out.splitlines() if line.startswith("verdict")]
    assert len(verdict) == 1
    # 154 tokens for every tool: no budget flag keeps every tool
    assert data["verdict"]["kind"] == "keep-all" and "keep every tool" in verdict[0]
    assert main(_args(world, "tune", "--json", "--max-tokens", "60")) == 0
    data = json.loads(capsys.readouterr().out)
    assert main(_args(world, "tune", "--max-tokens", "60")) == 0
    verdict = [line for line in capsys.readouterr().out.splitlines() if line.startswith("verdict")]
    kind = data["verdict"]["kind"]
    if kind == "tie":
        assert "keep the current setting" in verdict[0] and "includes 0" in verdict[0]
        assert not data["distinguishable"]
    elif kind == "change":
        assert verdict[0].startswith("verdict   change") and data["distinguishable"]
    else:
        assert kind in ("give-up", "keep", "same"), kind


def test_too_few_resolvable_cases_name_their_cause_not_a_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One case left after a misspelled name: the error says so and names the file; --folds
    only when the user passed it."""
    sample = Path(__file__).resolve().parents[1] / "sample_configs"
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        "cases:\n"
        "  - query: find the attention paper\n    expected: [search_papers]\n"
        "  - query: remember Ada\n    expected: [create_entites]\n"
        "  - query: what do we know of Ada\n    expected: [read_graph]\n"
    )
    argv = [
        "tune",
        str(sample / "research-agent.yaml"),
        "--catalog",
        str(sample / "research-agent.catalog.json"),
        "--embedder",
        "none",
        "--cases",
        str(cases),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{cases}:5: unknown expected tool 'create_entites' (did you mean " in err
    assert "2 of 3 cases kept; 1 dropped: none of their expected tools is in the catalog" in err
    assert err.endswith(
        f"holo-tune: error: {cases}: only 2 case(s) name a tool of this catalog; 1 more were "
        "dropped: none of their expected tools is in the catalog (the names warned about "
        "above): the held-out figures (5-fold) need at least 5, one per fold\n"
    )
    assert "--folds" not in err
    assert main([*argv, "--folds", "3"]) == 2
    assert "--folds 3 needs at least 3, one per fold" in capsys.readouterr().err
