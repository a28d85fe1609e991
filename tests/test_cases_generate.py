"""``holo-tune cases generate`` end to end against a local OpenAI-compatible server (real sockets,
real httpx): retries on 429, a malformed answer asked again then skipped, a wrong key, the cache,
what is sent, duplicates; and the output read back by eval."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_world import SECRET, WEATHER_AND_MAIL, private_agent
from fake_chat_server import KEY, FakeChatServer, Fault, answer_for, write_catalog

from workbench.cli import main
from workbench.evaluate import load_cases
from workbench.evaluate.chat import BadAnswer
from workbench.evaluate.generate import (
    drop_duplicates,
    near_duplicate,
    validate,
    words,
)

ALL = [f"{server}-{name}" for server, tools in WEATHER_AND_MAIL.items() for name, _, _ in tools]


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as running:
        yield running


@pytest.fixture
def world(tmp_path: Path, server: FakeChatServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_catalog(tmp_path / "catalog.json", WEATHER_AND_MAIL)
    return private_agent(tmp_path, "gen", "openai:gpt-4o-mini", server, monkeypatch)


def _generate(agent: Path, *more: str) -> int:
    catalog = agent.parent / "catalog.json"
    return main(["cases", "generate", str(agent), "--catalog", str(catalog), *more])


def test_generates_cases_beside_the_agent_and_eval_reads_them(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _generate(world) == 0
    out = world.parent / "agent.cases.yaml"
    cases = load_cases(out)
    assert len(cases) == 3 * len(ALL)
    assert {c.origin for c in cases} == {"generated"}
    assert {c.expected[0] for c in cases} == set(ALL)
    assert out.read_text().startswith("# Labelled queries for agent.yaml")
    assert f"{out}: 12 generated cases for 4 of 4 tools (4 requests" in capsys.readouterr().out
    # what was sent: the model, json_object, the tool text, and nothing secret
    first = server.requests[0]
    assert first.body["model"] == "gpt-4o-mini"
    assert first.body["response_format"] == {"type": "json_object"}
    assert first.headers["authorization"] == f"Bearer {KEY}"
    for seen in server.requests:
        text = json.dumps(seen.body)
        assert SECRET not in text and KEY not in text and "stay private" not in text
    sent = {seen.tool: seen.body["messages"][1]["content"] for seen in server.requests}
    assert "Parameters: to, subject, body" in sent["send_email"]
    assert "Send an email message to a recipient" in sent["send_email"]
    # eval without --cases reads the file and warns that every case is generated
    assert main(["eval", str(world), "--catalog", str(world.parent / "catalog.json")]) == 0
    err = capsys.readouterr().err
    assert "every case is generated" in err and "agent.cases.yaml (beside the agent)" in err


def test_a_second_run_asks_nothing(world: Path, server: FakeChatServer) -> None:
    assert _generate(world) == 0
    first = (world.parent / "agent.cases.yaml").read_text()
    asked = len(server.requests)
    assert _generate(world) == 0
    assert len(server.requests) == asked  # every answer came from the cache
    assert (world.parent / "agent.cases.yaml").read_text() == first  # replaced, not doubled
    assert _generate(world, "--seed", "7", "--tools", "mail-*") == 0  # another seed: asked
    assert len(server.requests) == asked + 2


def test_429_then_success(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.faults.extend([Fault(429, {"retry-after-ms": "5"}), Fault(503, {"retry-after": "0"})])
    assert _generate(world, "--tools", "get_forecast") == 0
    assert len(server.requests) == 3
    assert len(load_cases(world.parent / "agent.cases.yaml")) == 3
    assert "skipped" not in capsys.readouterr().err


def test_a_malformed_answer_is_asked_again_then_skipped(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.malformed["get_alerts"] = 1  # spoiled once: the second answer is used
    server.malformed["list_inbox"] = -1  # always spoiled: reported and skipped
    assert _generate(world) == 0
    captured = capsys.readouterr()
    assert "mail-list_inbox: skipped: the answer is not JSON (asked twice)" in captured.err
    expected = {c.expected[0] for c in load_cases(world.parent / "agent.cases.yaml")}
    assert expected == set(ALL) - {"mail-list_inbox"}
    asked = [seen.tool for seen in server.requests]
    assert asked.count("get_alerts") == 2 and asked.count("list_inbox") == 2
    assert "3 of 4 tools" in captured.out and "1 tools skipped" in captured.out


def test_a_wrong_key_is_one_line_and_exit_2(
    world: Path,
    server: FakeChatServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-9999")
    assert _generate(world) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "error" in line]
    assert len(lines) == 1 and "HTTP 401" in lines[0] and "check the API key" in lines[0]
    assert "Traceback" not in captured.err and "sk-wrong-key-9999" not in captured.err
    assert not (world.parent / "agent.cases.yaml").exists()  # nothing half-written
    assert len(server.requests) <= 8  # the run stops: at most the requests already in flight


def test_hand_labels_stay_and_their_queries_are_not_generated_again(
    world: Path, server: FakeChatServer
) -> None:
    out = world.parent / "mine.cases.yaml"
    hand = answer_for("send_email", 1)[0]
    out.write_text(f"# mine\ncases:\n  - query: {hand}\n    expected: [send_email]\n")
    assert _generate(world, "-o", str(out), "--per-tool", "2") == 0
    cases = load_cases(out)
    assert "# mine" in out.read_text()
    assert [c.origin for c in cases].count(None) == 1
    assert sum(c.query == hand for c in cases) == 1
    assert len(cases) == 1 + 2 * len(ALL) - 1  # send_email's first query was already there


def test_usage_errors(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _generate(world, "--per-tool", "0") == 2
    assert _generate(world, "--tools", "nothing*") == 2
    assert _generate(world, "--llm", "anthropic:claude") == 2
    err = capsys.readouterr().err
    assert "--per-tool" in err and "nothing*" in err and "--llm" in err


# ------------------------------------------------------------------------------------ the parts


def test_validate() -> None:
    assert validate('{"queries": ["a  b", "", "a b", "c"]}', 3) == ["a b", "c"]
    assert validate('{"queries": ["x", "y", "z", "w"]}', 2) == ["x", "y"]
    for bad in ("not json", "[]", '{"queries": "x"}', '{"queries": [1]}', '{"queries": [" "]}'):
        with pytest.raises(BadAnswer):
            validate(bad, 3)


def test_duplicates() -> None:
    a = words("Send an email to Bob about the meeting")
    assert near_duplicate(a, words("send an email to bob about the meeting!"))
    assert near_duplicate(a, words("please send an email to Bob about the meeting"))
    assert not near_duplicate(a, words("read my inbox"))
    cases = [
        ("Send an email to Bob about the meeting", "mail-send"),
        ("send an email to bob about the meeting", "mail-send"),  # exact (case, punctuation)
        ("Please send an email to Bob about the meeting", "mail-send"),  # near
        ("what is the forecast for Paris", "weather-get"),
        ("what's on my calendar", "cal-list"),
    ]
    kept, dropped = drop_duplicates(cases, existing=["What's on my calendar?"])
    assert [q for q, _ in kept] == [cases[0][0], cases[3][0]] and dropped == 3
