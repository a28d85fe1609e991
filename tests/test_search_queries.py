"""``--llm``: the search call a model would write, end to end against a local OpenAI-compatible
server (real sockets, real httpx): eval --engine anthropic, tune and compare on the deferred
runtimes, the disk cache (a second run asks nothing), a bad pattern's fallback, what is sent; and
without a model, the output says the message itself was searched."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_world import SECRET, WEATHER_AND_MAIL, private_agent
from fake_chat_server import FakeChatServer, write_catalog
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.evaluate.chat import BadAnswer
from workbench.evaluate.search_queries import (
    MESSAGE,
    keyword_pattern,
    parse_answer,
    pattern_problem,
)
from workbench.search.strategies.anthropic import PATTERN_MAX

LLM = "openai:gpt-4o-mini"
TOOLS = {
    **WEATHER_AND_MAIL,
    "files": [
        ("read_file", "Read a file from disk", ["path"]),
        ("write_file", "Write text to a file on disk", ["path", "content"]),
    ],
}
#: Messages that share no word with the tool they need, and the search call the model writes.
CASES: dict[str, tuple[str, dict[str, str]]] = {
    "Will it rain in Paris tomorrow, should I take an umbrella?": (
        "weather-get_forecast",
        {"bm25": "weather forecast city", "regex": "(?i)forecast"},
    ),
    "Is there a storm warning for Bavaria?": (
        "weather-get_alerts",
        {"bm25": "severe weather alerts region", "regex": "(?i)alert"},
    ),
    "Tell Bob the meeting moved to 3pm": (
        "mail-send_email",
        {"bm25": "send email message", "regex": "(?i)send"},
    ),
    "Show me what landed in my mailbox today": (
        "mail-list_inbox",
        {"bm25": "list inbox messages", "regex": "(?i)inbox"},
    ),
    "What's in the notes document on my drive?": (
        "files-read_file",
        {"bm25": "read file disk", "regex": "(?i)(forecast"},  # does not compile
    ),
    "Save these notes to todo.txt": (
        "files-write_file",
        {"bm25": "write text file", "regex": "(?i)write"},
    ),
}
BAD = "What's in the notes document on my drive?"


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as running:
        running.searches.update({message: call for message, (_, call) in CASES.items()})
        yield running


@pytest.fixture
def world(tmp_path: Path, server: FakeChatServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_catalog(tmp_path / "catalog.json", TOOLS)
    (tmp_path / "cases.jsonl").write_text(
        "".join(
            json.dumps({"query": message, "expected": [tool]}) + "\n"
            for message, (tool, _) in CASES.items()
        )
    )
    return private_agent(tmp_path, "deferred", "anthropic:claude-sonnet-4-5", server, monkeypatch)


def _run(agent: Path, command: str, *more: str) -> list[str]:
    folder = agent.parent
    return [
        command,
        str(agent),
        "--catalog",
        str(folder / "catalog.json"),
        "--cases",
        str(folder / "cases.jsonl"),
        "--embedder",
        "none",
        *more,
    ]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[dict[str, Any], str]:
    assert main(argv) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


# ------------------------------------------------------------------------------ eval --engine


def test_eval_scores_the_query_the_model_writes_and_caches_it(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, _ = _json(capsys, _run(world, "eval", "--engine", "anthropic", "--json"))
    assert plain["search_query"] == {"source": "message"}
    assert plain["metrics"]["recall"] == 0.0  # no message shares a word with its tool
    assert not server.requests

    data, err = _json(capsys, _run(world, "eval", "--engine", "anthropic", "--llm", LLM, "--json"))
    assert data["metrics"]["recall"] == 1.0
    assert data["search_query"]["source"] == "llm" and data["search_query"]["llm"] == LLM
    assert data["search_query"]["requests"] == len(CASES) and data["search_query"]["cached"] == 0
    searched = {row["query"]: row["search_query"] for row in data["per_case"]}
    assert searched["Tell Bob the meeting moved to 3pm"] == "send email message"
    assert f"asking {LLM} for the search call of {len(CASES)} cases" in err
    # what was sent: the case's message and the instructions, nothing of the agent
    assert len(server.requests) == len(CASES)
    assert {seen.message for seen in server.requests} == set(CASES)
    for seen in server.requests:
        text = json.dumps(seen.body)
        assert seen.body["response_format"] == {"type": "json_object"}
        assert SECRET not in text and "stay private" not in text and "get_forecast" not in text

    again, _ = _json(capsys, _run(world, "eval", "--engine", "anthropic", "--llm", LLM, "--json"))
    assert len(server.requests) == len(CASES)  # the second run asks nothing
    assert again["search_query"]["requests"] == 0
    assert again["search_query"]["cached"] == len(CASES)
    assert again["metrics"] == data["metrics"]


def test_a_bad_pattern_falls_back_to_the_keywords_with_a_note(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _run(world, "eval", "--engine", "anthropic", "--param", "variant=regex", "--json")
    plain, _ = _json(capsys, argv)
    assert plain["metrics"]["hit"] == 0.0  # a sentence is a pattern that matches no tool text

    data, err = _json(capsys, [*argv, "--llm", LLM])
    (note,) = data["search_query"]["notes"]
    assert BAD in note and "does not compile" in note and "(?i)(?:read|file|disk)" in note
    assert "does not compile" in err and "Traceback" not in err
    searched = {row["query"]: row["search_query"] for row in data["per_case"]}
    assert searched[BAD] == "(?i)(?:read|file|disk)"
    assert data["metrics"]["hit"] == 1.0


def test_a_malformed_answer_falls_back_to_the_message(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.searches[BAD] = {"keywords": "read file"}  # not the fields asked for, twice
    data, _ = _json(capsys, _run(world, "eval", "--engine", "anthropic", "--llm", LLM, "--json"))
    assert [seen.message for seen in server.requests].count(BAD) == 2  # asked again once
    (note,) = data["search_query"]["notes"]
    assert BAD in note and "no usable answer" in note and "its message is searched" in note
    assert {row["query"]: row["search_query"] for row in data["per_case"]}[BAD] == BAD
    assert data["metrics"]["hit"] == pytest.approx(5 / 6)


def test_text_output_says_what_was_searched(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run(world, "eval", "--engine", "anthropic")) == 0
    assert "the user's message itself is searched" in capsys.readouterr().out
    assert main(_run(world, "eval", "--engine", "anthropic", "--llm", LLM)) == 0
    assert f"the search call {LLM} would write for each case" in capsys.readouterr().out


# -------------------------------------------------------------------------- tune and compare


def test_tune_on_a_deferred_runtime_searches_the_model_query(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _run(world, "tune", "--runtime", "anthropic", "--folds", "2", "--json")
    plain, _ = _json(capsys, argv)
    assert plain["search_query"] == {"source": "message"}
    assert "the user's message is searched" in plain["approximation"]

    data, _ = _json(capsys, [*argv, "--llm", LLM])
    assert data["search_query"]["source"] == "llm" and len(server.requests) == len(CASES)
    assert LLM in data["approximation"] and "not publish" in data["approximation"]
    assert data["default"]["recall"] == 1.0 > plain["default"]["recall"]

    assert main([*argv[:-1], "--llm", LLM]) == 0  # text, from the cache
    out = capsys.readouterr().out
    assert f"query     the search call {LLM} would write" in out
    assert len(server.requests) == len(CASES)


def test_compare_runtimes_uses_the_model_query_for_the_deferred_rows(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _run(world, "compare", "--runtimes", "--llm", LLM, "--json")
    data, _ = _json(capsys, argv)
    assert data["search_query"]["source"] == "llm"
    rows = {row["runtime"]: row for row in data["rows"]}
    for name in ("anthropic", "claude-code", "openai"):
        assert LLM in rows[name]["note"]
    assert len(server.requests) == len(CASES)  # one call per case, shared by the three rows
    assert main(argv[:-1]) == 0
    assert f"deferred rows' search: the search call {LLM}" in capsys.readouterr().out


def test_llm_where_no_model_writes_a_query_is_one_line_and_exit_2(
    world: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_run(world, "tune", "--runtime", "holodeck-0.6", "--llm", LLM)) == 2
    assert main(_run(world, "eval", "--engine", "stackone", "--llm", LLM)) == 2
    assert main(_run(world, "compare", "--llm", LLM)) == 2
    err = capsys.readouterr().err
    assert err.count("--llm") == 3 and "Traceback" not in err
    assert not server.requests


# ------------------------------------------------------------------------------------ the parts


def test_parse_answer() -> None:
    assert parse_answer('{"bm25": " weather   forecast ", "regex": "x["}') == {
        "bm25": "weather forecast",
        "regex": "x[",
    }
    for bad in (
        "not json",
        "[]",
        '{"bm25": "a"}',
        '{"bm25": 1, "regex": ""}',
        '{"bm25": " ", "regex": "a"}',
    ):
        with pytest.raises(BadAnswer):
            parse_answer(bad)


def test_pattern_problem() -> None:
    assert pattern_problem("(?i)weather|forecast") is None
    assert "does not compile" in (pattern_problem("(unclosed") or "")
    assert "201 characters" in (pattern_problem("a" * (PATTERN_MAX + 1)) or "")
    assert pattern_problem("  ") == "is empty"
    assert MESSAGE.query("a sentence", "regex") == "a sentence"


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_the_keyword_fallback_is_always_a_valid_pattern(keywords: str) -> None:
    pattern = keyword_pattern(keywords)
    assert pattern_problem(pattern) in (None, "is empty")
    assert len(pattern) <= PATTERN_MAX
    first = re.findall(r"\w+", keywords)[:1]
    if first and 1 < len(first[0]) < 150:
        assert re.search(pattern, first[0])  # the first keyword is always kept
