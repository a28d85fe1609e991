"""serve's usage log and ``holo-tune cases from-log``, as a user meets them.

A scripted session against the real ``holo-tune serve`` over stdio, in front of a real MCP server
(``tests/servers/toolserver.py``), searches then calls: its log, through ``cases from-log``, gives
exactly the cases the script makes (a query searched twice counted, a hand label kept, what
could not be attributed said), and ``tune --cases`` (with the ``--usage-out`` file as
``--usage``) runs on them. No argument value is in the log unless ``--log-arguments`` (then the
servers' env values hidden). The log rotates as logrotate does, and a moved file is opened anew.
Any line a user hands ``cases from-log`` that is not a record ends in one line naming the file,
the line and the field, exit 2.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_values import VALUES
from serve_client import (
    STATELESS_HEADERS,
    free_port,
    http_session,
    search_names,
    serve_stdio,
    start_http,
    text_of,
)

from workbench.cli import main
from workbench.errors import InputError
from workbench.evaluate.usagelog import parse_record, read_logs
from workbench.serve.usagelog import session_digest

needs_fastmcp = pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])

REPO = Path(__file__).resolve().parents[1]
TOOLSERVER = str(REPO / "tests" / "servers" / "toolserver.py")
SAMPLE = REPO / "sample_configs"
AGENT = SAMPLE / "research-agent.yaml"
CATALOG = SAMPLE / "research-agent.catalog.json"
SECRET = "tok-3f9a1c77e2"
PRIVATE = "PRIVATE-ARGUMENT-VALUE"
WEB = "brave_search-brave_web_search"
NEWS = "brave_search-brave_news_search"


def write_agent(tmp_path: Path) -> Path:
    agent = tmp_path / "agent.yaml"
    args = [TOOLSERVER, "--tools", "8", "--callable"]
    agent.write_text(
        "name: served\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: x\n"
        "tools:\n  - name: good\n    type: mcp\n    description: a test server\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
        f"    env:\n      API_TOKEN: {SECRET}\n"
    )
    return agent


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def scripted(agent: Path, log: Path, errlog: Path, *extra: str) -> list[list[str]]:
    """The session: searches, each followed (or not) by calls; returns every search's answer."""
    answers = []
    args = [str(agent), "--embedder", "none", "--usage-log", str(log), *extra]
    with errlog.open("w") as err:
        async with serve_stdio(args, err) as session:

            async def search(query: str) -> None:
                answers.append(await search_names(session, query))

            async def call(name: str, **arguments: Any) -> tuple[bool, str]:
                sent = {"name": name, "arguments": {"query": PRIVATE, **arguments}}
                result = await session.call_tool("call_tool", sent)
                return result.is_error, text_of(result)

            await search("run tool_01")
            assert (await call("good-tool_01"))[0] is False
            await search("run tool_02")
            await call("good-tool_02")
            await search("run  tool_01 ")  # the same query again: one case, counted twice
            await call("good-tool_01")
            await search("run tool_03")  # hand-labelled in the cases file: kept as it is
            direct = await session.call_tool("good-tool_03", {"query": PRIVATE})
            assert not direct.is_error
            await search("run tool_01 and tool_02")
            await call("good-tool_01")
            await call("good-tool_02", note=SECRET)
            await search("run tool_05")
            await call("good-tool_05")
            await search("run tool_06")  # no call follows
            await call("good-tool_00")  # no search returned it
            assert (await call("good-nope"))[0] is True  # refused: not a tool of the catalog
            await search("select:good-tool_02")  # named, no query to learn
    return answers


HAND = (
    "# my labels\n"
    "cases:\n"
    "  - query: run tool_03\n"
    "    expected: [good-tool_07]   # mine: stays\n"
    "  - query: run tool_07\n"
    "    expected: [good-tool_07]\n"
)


@needs_fastmcp
@pytest.mark.slow
def test_a_served_sessions_log_gives_the_cases_and_tune_runs_on_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = write_agent(tmp_path)
    log = tmp_path / "usage.jsonl"
    answers = anyio.run(scripted, agent, log, tmp_path / "serve.err")
    assert answers[0][0] == "good-tool_01" and answers[4][:2] == ["good-tool_02", "good-tool_01"]
    assert "good-tool_00" not in {name for answer in answers for name in answer}

    logged = records(log)
    assert [r["event"] for r in logged].count("search") == 8
    assert [r["event"] for r in logged].count("call") == 9
    text = log.read_text()
    assert PRIVATE not in text and SECRET not in text and "arguments" not in text
    first = logged[0]
    assert first["query"] == "run tool_01" and first["refused"] is False
    assert first["tools"][0]["name"] == "good-tool_01" and first["tools"][0]["score"] > 0
    assert isinstance(first["session"], str) and first["ms"] >= 0
    call = logged[1]
    assert (call["tool"], call["upstream"], call["outcome"]) == ("good-tool_01", "good", "ok")
    assert {r["session"] for r in logged} == {first["session"]}  # one stdio client
    refused = [r for r in logged if r.get("tool") == "good-nope"]
    assert (refused[0]["outcome"], refused[0]["upstream"]) == ("refused", "good")

    cases = tmp_path / "agent.cases.yaml"
    cases.write_text(HAND)
    usage = tmp_path / "usage.json"
    capsys.readouterr()
    snapshot = tmp_path / "catalog.json"  # the servers listed once for the commands below
    assert main(["snapshot", str(agent), "-o", str(snapshot)]) == 0
    argv = ["cases", "from-log", str(agent), str(log), "-o", str(cases), "--usage-out", str(usage)]
    argv += ["--catalog", str(snapshot)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        f"{cases}: 4 cases from the log (8 searches and 9 calls read from 1 file; 1 query " in out
    )
    assert (
        "not attributed: 1 call whose tool no earlier search returned (a pinned tool is called "
        "without a search): good-tool_00 1; 1 search whose tools no call followed; 0 searches "
        "that found no tool; 1 select: search; 1 call of a tool not in the agent's catalog: "
        "good-nope 1; 1 query already in the cases file, kept as written"
    ) in out
    assert f"{usage}: 8 calls of 5 tools" in out
    written = cases.read_text()
    assert written.startswith("# my labels\n") and "# mine: stays" in written
    assert yaml.safe_load(written)["cases"] == [
        {"query": "run tool_03", "expected": ["good-tool_07"]},
        {"query": "run tool_07", "expected": ["good-tool_07"]},
        {"query": "run tool_01", "expected": ["good-tool_01"], "source": "log", "count": 2},
        {"query": "run tool_02", "expected": ["good-tool_02"], "source": "log", "count": 1},
        {
            "query": "run tool_01 and tool_02",
            "expected": ["good-tool_01", "good-tool_02"],
            "source": "log",
            "count": 1,
        },
        {"query": "run tool_05", "expected": ["good-tool_05"], "source": "log", "count": 1},
    ]
    # Every call that ran, by tool (the refused one did not run).
    assert json.loads(usage.read_text()) == {
        "good-tool_01": 3,
        "good-tool_02": 2,
        "good-tool_00": 1,
        "good-tool_03": 1,
        "good-tool_05": 1,
    }

    # A second run replaces the log's cases of the first (same file, same cases).
    assert main(argv) == 0
    assert cases.read_text() == written

    capsys.readouterr()
    on = ["--cases", str(cases), "--catalog", str(snapshot), "--json"]
    assert main(["tune", str(agent), *on, "--usage", str(usage)]) == 0
    report = capsys.readouterr()
    assert json.loads(report.out)["cases_source"] == {"kind": "flag", "path": str(cases)}
    assert "cases kept" not in report.err  # every case resolved: none dropped
    assert main(["eval", str(agent), *on]) == 0
    evaluated = json.loads(capsys.readouterr().out)
    assert evaluated["cases"] == 6


@needs_fastmcp
@pytest.mark.slow
def test_over_stateless_http_the_window_pairs_and_log_arguments_hides_the_secrets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "usage.jsonl"
    args = [str(AGENT), "--catalog", str(CATALOG), "--embedder", "none"]
    args += ["--usage-log", str(log), "--log-arguments"]
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    # A snapshot: no server starts, and a call is refused (and still logged).
    proc = start_http(args, port, tmp_path / "serve.err", BRAVE_API_KEY=SECRET)

    async def run() -> None:
        async with http_session(url) as session:
            await search_names(session, "search the web")
            sent = {"query": PRIVATE, "note": f"key {SECRET}"}
            await session.call_tool("call_tool", {"name": WEB, "arguments": sent})

    try:
        anyio.run(run)
        # A request that carries a session header of its own: only a digest of it is written.
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        body["params"] = {"name": "search_tools", "arguments": {"query": "news today"}}
        headers = {**STATELESS_HEADERS, "Mcp-Session-Id": "client-session-7"}
        assert httpx2.post(url, json=body, headers=headers, timeout=30).status_code == 200
        proc.send_signal(signal.SIGTERM)  # what is queued is written before the process ends
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    logged = records(log)
    assert [r["event"] for r in logged] == ["search", "call", "search"]
    # Stateless HTTP: no session (the window pairs the call with the search).
    assert [r["session"] for r in logged] == [None, None, session_digest("client-session-7")]
    assert "client-session-7" not in log.read_text()
    assert logged[1]["arguments"] == {"query": PRIVATE, "note": "key [hidden]"}
    assert (logged[1]["tool"], logged[1]["outcome"]) == (WEB, "refused")
    assert SECRET not in log.read_text()
    assert "(with call arguments)" in (tmp_path / "serve.err").read_text()

    out = tmp_path / "cases.jsonl"
    argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG), "-o", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text()) == {
        "query": "search the web",
        "expected": [WEB],
        "source": "log",
        "count": 1,
    }


# ------------------------------------------------------------------------ the writer: rotation


def test_the_log_rotates_by_size_keeping_n_files_and_reopens_a_moved_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.serve import usagelog

    path = tmp_path / "usage.jsonl"
    handler = usagelog.open_usage_log(
        path, max_mb=2000 / (1024 * 1024), keep=2, log_arguments=False, secrets=()
    )
    try:
        for n in range(60):
            usagelog.log_call(f"s-tool_{n:03d}", "s", "ok", seconds=0.001, session=None)
        handler.close()
        files = sorted(p.name for p in tmp_path.iterdir())
        assert files == ["usage.jsonl", "usage.jsonl.1", "usage.jsonl.2"]
        assert all(p.stat().st_size <= 2000 for p in tmp_path.iterdir())
        assert oct(path.stat().st_mode & 0o777) == "0o600"  # the queries are users' messages
        # Oldest first, the kept records are the newest, in order, none torn.
        names = [
            r["tool"] for name in files[::-1] for r in records(tmp_path / name)
        ]  # .2, .1, then the file
        assert names == [f"s-tool_{n:03d}" for n in range(60 - len(names), 60)]
        # The reader puts rotated files in time order, whatever order they are given in.
        events = read_logs([tmp_path / name for name in files])
        assert [e.tool for e in events if hasattr(e, "tool")] == names

        # An outside logrotate moves the file away: the next record goes to a new one.
        monkeypatch.setattr(usagelog, "REOPEN_CHECK", 0.0)
        handler = usagelog.open_usage_log(path, max_mb=0, keep=0, log_arguments=False, secrets=())
        usagelog.log_call("s-before", "s", "ok", seconds=0.0, session=None)
        handler.flush()
        _wait_for(lambda: "s-before" in path.read_text())
        path.rename(tmp_path / "moved.jsonl")
        usagelog.log_call("s-after", "s", "ok", seconds=0.0, session=None)
        handler.close()
        assert [r["tool"] for r in records(path)] == ["s-after"]
        assert records(tmp_path / "moved.jsonl")[-1]["tool"] == "s-before"
    finally:
        for old in list(logging.getLogger(usagelog.USAGE_LOGGER).handlers):
            logging.getLogger(usagelog.USAGE_LOGGER).removeHandler(old)
            old.close()


def _wait_for(ok: Any, seconds: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_disk_that_hangs_never_holds_up_the_caller_and_the_drops_are_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import threading
    import time

    from workbench.serve import usagelog

    monkeypatch.setattr(usagelog, "QUEUE_SIZE", 5)
    # One record a batch: the writer holds the one it is writing, so what is kept does not
    # depend on how many records it took from the queue before its first write hung.
    monkeypatch.setattr(usagelog, "BATCH", 1)
    release = threading.Event()
    write = usagelog.UsageLog._write

    def stuck(self: usagelog.UsageLog, line: bytes) -> None:
        release.wait(10)  # a write that hangs (a full NFS mount)
        write(self, line)

    monkeypatch.setattr(usagelog.UsageLog, "_write", stuck)
    handler = usagelog.open_usage_log(
        tmp_path / "u.jsonl", max_mb=1, keep=1, log_arguments=False, secrets=()
    )
    try:
        started = time.perf_counter()
        with caplog.at_level(logging.WARNING, logger="holo_tune.serve"):
            for n in range(40):
                usagelog.log_call(f"s-t{n}", "s", "ok", seconds=0.0, session=None)
        assert time.perf_counter() - started < 0.5  # 40 records, none waited on the disk
        assert handler.dropped >= 40 - 5 - 1  # the queue's 5 and the one being written kept
        assert [r.message for r in caplog.records].count(
            f"usage log {tmp_path / 'u.jsonl'}: the writer is behind (5 records queued): "
            "records are dropped until it catches up"
        ) == 1
        release.set()
        handler.close()
        kept = records(tmp_path / "u.jsonl")
        assert len(kept) == 40 - handler.dropped and kept[0]["tool"] == "s-t0"
    finally:
        release.set()
        for old in list(logging.getLogger(usagelog.USAGE_LOGGER).handlers):
            logging.getLogger(usagelog.USAGE_LOGGER).removeHandler(old)
            old.close()


def test_a_usage_log_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.serve.usagelog import open_usage_log

    with pytest.raises(InputError) as err:
        open_usage_log(
            tmp_path / "no" / "u.jsonl", max_mb=1, keep=1, log_arguments=False, secrets=()
        )
    assert (
        str(err.value)
        == f"{tmp_path}/no/u.jsonl: --usage-log: cannot write: No such file or directory"
    )


# ------------------------------------------------------------------------ the reader: attribution


def _line(event: str, time: str, session: str | None = None, **fields: Any) -> str:
    record = {"v": 1, "event": event, "time": time, "session": session, "ms": 5, **fields}
    return json.dumps(record)


def _search(time: str, query: str, tools: list[str], session: str | None = None) -> str:
    listed = [{"name": t, "score": 1.0} for t in tools]
    return _line("search", time, session, query=query, tools=listed, refused=False)


def _select(time: str, tool: str, session: str | None = None) -> str:
    listed = [{"name": tool, "score": 1.0}]
    query = f"select:{tool}"
    return _line("search", time, session, query=query, tools=listed, refused=False, select=True)


def _call(time: str, tool: str, session: str | None = None, outcome: str = "ok") -> str:
    return _line("call", time, session, tool=tool, upstream=tool.split("-")[0], outcome=outcome)


def test_sessions_pair_calls_with_their_searches_and_the_window_pairs_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "u.jsonl"
    lines = [
        _search("2026-07-28T09:00:00Z", "latest news", [NEWS, WEB], "a"),
        _search("2026-07-28T09:00:01Z", "search the web", [WEB, NEWS], "b"),
        _call("2026-07-28T09:00:02Z", NEWS, "a"),  # a's own search, though b's is later
        _call("2026-07-28T09:00:03Z", WEB, "b"),
        _search("2026-07-28T09:01:00Z", "web results for cats", [WEB]),  # stateless
        _call("2026-07-28T09:01:30Z", WEB),  # 30 s later: within the window
        _search("2026-07-28T09:05:00Z", "old answer", [NEWS]),
        _call("2026-07-28T09:07:00Z", NEWS),  # 2 minutes later: outside 60 s
        _call("2026-07-28T09:07:01Z", NEWS, "c"),  # session c searched nothing; none in 60 s
    ]
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "cases.jsonl"
    argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG), "-o", str(out)]
    assert main(argv) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(c["query"], c["expected"]) for c in got] == [
        ("latest news", [NEWS]),
        ("search the web", [WEB]),
        ("web results for cats", [WEB]),
    ]
    assert "2 calls whose tool no earlier search returned" in capsys.readouterr().out
    # A longer window pairs the late call too.
    assert main([*argv, "--window", "300"]) == 0
    assert len(out.read_text().splitlines()) == 4


def test_a_call_after_a_select_search_is_the_selects_not_an_earlier_querys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``select:NAME`` asked for the tool by name: the call that follows answers it, so an
    earlier search that also returned the tool is not labelled with it (it was), and the
    summary says so; one call and one search are said in the singular."""
    log = tmp_path / "u.jsonl"
    lines = [
        _search("2026-07-28T09:00:00Z", "search the web", [WEB, NEWS], "a"),
        _select("2026-07-28T09:00:05Z", NEWS, "a"),
        _call("2026-07-28T09:00:06Z", NEWS, "a"),
        _search("2026-07-28T09:01:00Z", "web results for cats", [WEB, NEWS]),  # stateless
        _select("2026-07-28T09:01:05Z", WEB),
        _call("2026-07-28T09:01:06Z", WEB),
        _call("2026-07-28T09:01:07Z", NEWS),  # the stateless query's: no select named it
        _select("2026-07-28T09:05:00Z", NEWS),
        _call("2026-07-28T09:07:00Z", NEWS),  # 2 minutes after the select: outside 60 s
    ]
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "cases.jsonl"
    argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG), "-o", str(out)]
    assert main(argv) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(c["query"], c["expected"]) for c in got] == [("web results for cats", [NEWS])]
    said = capsys.readouterr().out
    assert "2 calls of a tool a select: search named" in said
    late = "1 call whose tool no earlier search returned (a pinned tool is called without a search)"
    assert f"{late}: {NEWS} 1" in said  # the select was 2 minutes before it
    assert "; 1 search whose tools no call followed;" in said  # "search the web": no select


def test_an_output_in_a_missing_folder_is_refused_not_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "u.jsonl"
    log.write_text(_search("2026-07-28T09:00:00Z", "news", [NEWS]) + "\n")
    for flag in ("-o", "--usage-out"):
        missing = tmp_path / "typo" / "out.json"
        argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG)]
        assert main([*argv, flag, str(missing)]) == 2
        assert not missing.parent.exists()
        name = "--output" if flag == "-o" else flag
        assert capsys.readouterr().err == (
            f"holo-tune: error: {missing}: {name}: no such folder (holo-tune makes none)\n"
        )


def test_the_usage_logs_flags_without_a_usage_log_are_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_configs"
    snapshot = [str(sample / "research-agent.yaml"), "--catalog"]
    snapshot.append(str(sample / "research-agent.catalog.json"))
    for extra in (["--usage-log-max-mb", "5"], ["--usage-log-keep", "2"], ["--log-arguments"]):
        assert main(["serve", *snapshot, "--embedder", "none", *extra]) == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"holo-tune: error: {extra[0]}: needs --usage-log FILE (there is no usage log)"
        )


def test_an_empty_log_writes_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "u.jsonl"
    log.write_text("\n")
    out = tmp_path / "cases.yaml"
    argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG), "-o", str(out)]
    assert main(argv) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err == f"holo-tune: error: {out}: no new case learned from the log; nothing written\n"


def test_times_at_the_calendars_ends_and_a_huge_window_are_no_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "u.jsonl"
    late = _line("search", "9999-12-31T23:59:59.999Z", ms=5000, query="q", tools=[])
    log.write_text(late + "\n")
    argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"holo-tune: error: {log}:1: time: out of range: ")
    log.write_text(_line("search", "2026-07-28T09:00:00Z", ms=1e300, query="q") + "\n")
    assert main(argv) == 2
    assert f"{log}:1: ms: must be a number of milliseconds from 0 to " in capsys.readouterr().err
    # A call at the calendar's start, with a window longer than the calendar: paired.
    lines = [
        _search("0001-01-01T00:00:00Z", "oldest query", [WEB]),
        _call("0001-01-01T00:00:01Z", WEB),
    ]
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "cases.jsonl"
    assert main([*argv, "-o", str(out), "--window", "1e300"]) == 0
    assert json.loads(out.read_text())["query"] == "oldest query"


# ------------------------------------------------------------------------ bad lines: file:line


GOOD = _search("2026-07-28T09:00:00Z", "q", [WEB])
FIELDS = ("v", "event", "time", "session", "ms", "query", "tools", "refused", "tool", "outcome")


def _mutated() -> st.SearchStrategy[str]:
    """A record with one field set to any JSON value, or removed; or any text; or a broken line."""
    base = json.loads(GOOD)
    call = json.loads(_call("2026-07-28T09:00:00Z", WEB))
    one_field = st.tuples(st.sampled_from([base, call]), st.sampled_from(FIELDS), VALUES).map(
        lambda t: json.dumps({**t[0], t[1]: t[2]})
    )
    dropped = st.tuples(st.sampled_from([base, call]), st.sampled_from(FIELDS)).map(
        lambda t: json.dumps({k: v for k, v in t[0].items() if k != t[1]})
    )
    cut = st.integers(1, len(GOOD) - 1).map(lambda n: GOOD[:n])
    return one_field | dropped | cut | st.text(max_size=40) | VALUES.map(json.dumps)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_mutated())
def test_any_bad_line_is_one_error_naming_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str
) -> None:
    if not line.strip() or "\n" in line or "\r" in line:
        return
    log = tmp_path / "bad.jsonl"
    log.write_text(GOOD + "\n" + line + "\n", encoding="utf-8", errors="surrogatepass")
    try:
        parse_record(line, log, 2)
    except InputError:
        pass
    else:
        return  # a record after all (a field set to a value it may hold)
    capsys.readouterr()
    assert main(["cases", "from-log", str(AGENT), str(log)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"holo-tune: error: {log}:2: ") and err.count("\n") == 1
    assert "internal error" not in err and "Traceback" not in err


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b and b.strip()))
def test_any_bytes_are_a_record_or_one_error_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], raw: bytes
) -> None:
    log = tmp_path / "bytes.jsonl"
    log.write_bytes(raw + b"\n")
    capsys.readouterr()
    code = main(["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG), "-o",
                 str(tmp_path / "c.yaml")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"holo-tune: error: {log}:1: ") or "no new case learned" in err


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["search", "call"]),
            st.datetimes(timezones=st.just(UTC)),
            st.floats(0, 7 * 24 * 3600 * 1000),
        ),
        min_size=1,
        max_size=4,
    ),
    st.floats(0.001, 1e300),
)
def test_records_at_any_time_and_any_window_never_crash(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    drawn: list[tuple[str, datetime, float]],
    window: float,
) -> None:
    log = tmp_path / "times.jsonl"
    lines = []
    for event, moment, ms in drawn:
        at = moment.isoformat()
        line = _search(at, "q", [WEB]) if event == "search" else _call(at, WEB)
        lines.append(line.replace('"ms": 5', f'"ms": {ms!r}'))
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "c.jsonl"
    argv = ["cases", "from-log", str(AGENT), str(log), "--catalog", str(CATALOG), "-o", str(out)]
    capsys.readouterr()
    code = main([*argv, "--window", repr(window)])
    err = capsys.readouterr().err
    assert code in (0, 2) and "internal error" not in err
    assert code == 0 or err.count("\n") == 1
