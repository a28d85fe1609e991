"""The chat client (``cases generate``, ``--llm``) against real local servers speaking each
dialect it claims: OpenAI, Azure OpenAI and Ollama. What the server received (path, query,
headers, body) and what the user gets: the cases, or for a refused connection, a server that
never answers, 4xx, 5xx and bodies that are not the JSON asked for, one clear line and exit 2.

The CLI runs in-process (``main``), on real sockets and real httpx; only the timeout is tested
through :func:`ask_all` itself, where it can be made short (the command waits 60 s per try).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_world import WEATHER_AND_MAIL, private_agent
from fake_chat_server import (
    AZURE_DEPLOYMENT,
    AZURE_KEY,
    AZURE_VERSION,
    DIALECTS,
    KEY,
    OLLAMA_MODEL,
    FakeChatServer,
    Fault,
    closed_port,
    error_body,
    write_catalog,
)

from workbench.cli import main
from workbench.evaluate import load_cases
from workbench.evaluate.chat import ChatError, Prompt, ask_all, resolve_endpoint
from workbench.search.embedders.http import RetryPolicy

#: The one tool asked for in the error cases (one prompt: the error is the tool's only answer).
ONE_TOOL = "get_forecast"
#: How often holo-tune asks a prompt answered 429 or 5xx (its retry policy: 4 more tries).
TRIES = 5


@pytest.fixture(params=DIALECTS)
def server(request: pytest.FixtureRequest) -> Iterator[FakeChatServer]:
    with FakeChatServer(request.param) as running:
        yield running


@pytest.fixture
def agent(tmp_path: Path, server: FakeChatServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agent on OpenAI (the dialect under test comes from ``--llm``), its catalog snapshot, and
    the environment pointing at ``server``."""
    write_catalog(tmp_path / "catalog.json", WEATHER_AND_MAIL)
    return private_agent(tmp_path, "chat", "openai:gpt-4o-mini", server, monkeypatch)


def _generate(agent: Path, *more: str) -> int:
    catalog = agent.parent / "catalog.json"
    return main(["cases", "generate", str(agent), "--catalog", str(catalog), *more])


def _error_line(capsys: pytest.CaptureFixture[str], agent: Path) -> str:
    """The one line the user gets on stderr besides the "asking ..." notice and the warnings
    about the agent's and the catalog's files (asserted alone)."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    other = ("holo-tune: asking ", f"holo-tune: warning: {agent.parent}/")
    lines = [line for line in err.splitlines() if not line.startswith(other)]
    assert len(lines) == 1, err
    assert lines[0].startswith("holo-tune: error: ")
    return lines[0]


def _where(server: FakeChatServer) -> str:
    """The URL the client posts to, as messages name it (no query string)."""
    return {
        "openai": f"{server.url}/chat/completions",
        "azure_openai": f"{server.url}/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions",
        "ollama": f"{server.url}/api/chat",
    }[server.dialect]


# ------------------------------------------------------------------------------ each dialect


def test_each_dialect_is_asked_in_its_own_shape_and_its_answers_become_cases(
    agent: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _generate(agent, "--llm", server.spec()) == 0
    cases = load_cases(agent.parent / "agent.cases.yaml")
    assert len(cases) == 3 * 4 and {c.origin for c in cases} == {"generated"}
    assert "12 generated cases for 4 of 4 tools (4 requests" in capsys.readouterr().out
    assert len(server.requests) == 4
    seen = server.requests[0]
    messages = seen.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert seen.headers["content-type"] == "application/json"
    if server.dialect == "openai":
        assert seen.path == "/v1/chat/completions" and not seen.query
        assert seen.headers["authorization"] == f"Bearer {KEY}" and "api-key" not in seen.headers
        assert seen.body["model"] == "gpt-4o-mini"
        assert seen.body["response_format"] == {"type": "json_object"}
        assert seen.body["seed"] == 0
    elif server.dialect == "azure_openai":
        assert seen.path == f"/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"
        assert seen.query == {"api-version": [AZURE_VERSION]}
        assert seen.headers["api-key"] == AZURE_KEY and "authorization" not in seen.headers
        assert "model" not in seen.body  # the deployment is in the URL
        assert seen.body["response_format"] == {"type": "json_object"}
    else:
        assert seen.path == "/api/chat" and not seen.query
        assert "authorization" not in seen.headers and "api-key" not in seen.headers
        assert seen.body["model"] == OLLAMA_MODEL
        assert seen.body["stream"] is False and seen.body["format"] == "json"
        assert seen.body["options"]["seed"] == 0
        assert "response_format" not in seen.body


@pytest.mark.parametrize("server", ["azure_openai"], indirect=True)
def test_azure_takes_endpoint_key_and_version_from_the_agents_model_entry(
    tmp_path: Path, server: FakeChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``--llm``: the agent's ``model`` entry says where (its endpoint, api_version and key win
    over the variables)."""
    write_catalog(tmp_path / "catalog.json", WEATHER_AND_MAIL)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "1999-01-01")
    monkeypatch.setenv("MY_AZURE_KEY", AZURE_KEY)
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: chat\nmodel:\n  provider: azure_openai\n"
        f"  name: {AZURE_DEPLOYMENT}\n  endpoint: {server.url}\n"
        "  api_version: '2024-06-01'\n  api_key: ${MY_AZURE_KEY}\n"
        "instructions:\n  inline: hi\ntools: []\n"
    )
    assert _generate(agent, "--tools", ONE_TOOL) == 0
    (seen,) = server.requests
    assert seen.query == {"api-version": ["2024-06-01"]}
    assert seen.headers["api-key"] == AZURE_KEY


# -------------------------------------------------------------------------- what goes wrong


@pytest.mark.parametrize("server", ["ollama"], indirect=True)  # each try waits: ~8 s in all
def test_a_refused_connection_is_one_line(
    agent: Path,
    server: FakeChatServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Nothing listens on the port (Ollama not started, a wrong endpoint): tried again with
    backoff, then one line naming the URL; nothing written."""
    port = closed_port()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")  # as Ollama's own variable allows
    assert _generate(agent, "--llm", server.spec(), "--tools", ONE_TOOL) == 2
    line = _error_line(capsys, agent)
    assert line == (
        f"holo-tune: error: {server.spec()}: cannot reach http://127.0.0.1:{port}/api/chat"
    )
    assert not (agent.parent / "agent.cases.yaml").exists()


@pytest.mark.parametrize("server", ["openai", "azure_openai"], indirect=True)  # Ollama: no key
def test_a_wrong_key_is_one_line_without_the_key(
    agent: Path,
    server: FakeChatServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    variable = "OPENAI_API_KEY" if server.dialect == "openai" else "AZURE_OPENAI_API_KEY"
    monkeypatch.setenv(variable, "wrong-key-0000")
    assert _generate(agent, "--llm", server.spec()) == 2
    line = _error_line(capsys, agent)
    assert re.fullmatch(
        rf"holo-tune: error: {re.escape(server.spec())}: HTTP 401 from "
        rf"{re.escape(_where(server))}: \S.* \(check the API key\)",
        line,
    ), line
    assert "wrong-key-0000" not in line
    assert len(server.requests) <= 4  # the run stops: no prompt is tried again
    assert not (agent.parent / "agent.cases.yaml").exists()


#: ``--llm`` for a model (or deployment) the server does not have, and what its error says.
UNKNOWN = {
    "openai": ("openai:no-such-model", "The model `no-such-model` does not exist"),
    "azure_openai": (
        "azure_openai:no-such-deployment",
        "The API deployment for this resource does not exist.",
    ),
    "ollama": ("ollama:no-such-model", "model 'no-such-model' not found, try pulling it first"),
}
#: What holo-tune adds: the name that is wrong, in the dialect's words.
HINT_404 = {
    "openai": "check the model name",
    "azure_openai": "check the deployment name",
    "ollama": "check the model name",
}


def test_an_unknown_model_or_deployment_is_one_line_with_the_servers_reason(
    agent: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, reason = UNKNOWN[server.dialect]
    assert _generate(agent, "--llm", spec) == 2
    line = _error_line(capsys, agent)
    assert line.startswith(f"holo-tune: error: {spec}: HTTP 404 from http://127.0.0.1:")
    assert line.endswith(f": {reason} ({HINT_404[server.dialect]})"), line
    assert not (agent.parent / "agent.cases.yaml").exists()


#: A fault the server answers every try with, and what the user's line says (after the URL).
#: 429 and 5xx are tried again (the server asks for no wait); 400 and bodies are not.
FAULTS = {
    "429": (Fault(429, {"retry-after-ms": "0"}), TRIES, "HTTP 429 from {where}: slow down"),
    "500": (Fault(500, {"retry-after": "0"}), TRIES, "HTTP 500 from {where}: slow down"),
    "503": (Fault(503, {"retry-after": "0"}), TRIES, "HTTP 503 from {where}: slow down"),
    "400": (Fault(400), 1, "HTTP 400 from {where}: slow down"),
    "html": (
        Fault(200, raw=b"<html><body>Bad Gateway</body></html>"),
        1,
        "an answer that is not JSON from {where}",
    ),
    "cut json": (
        Fault(200, raw=b'{"choices": [{"message": {"content": "{\\"que'),
        1,
        "an answer that is not JSON from {where}",
    ),
    "json without a message": (
        Fault(200, body={"object": "chat.completion", "choices": []}),
        2,
        "no message in the answer (asked twice)",
    ),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_an_answer_that_is_not_a_chat_answer_is_one_line_and_nothing_written(
    agent: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    fault, asked, said = FAULTS[name]
    if fault.status >= 400:  # the error in the dialect's own shape
        fault = Fault(fault.status, fault.headers, error_body(server.dialect, "slow down"))
    server.fail_next(fault, times=asked)
    assert _generate(agent, "--llm", server.spec(), "--tools", ONE_TOOL) == 2
    line = _error_line(capsys, agent)
    out = agent.parent / "agent.cases.yaml"
    reason = said.format(where=_where(server))
    assert line == f"holo-tune: error: {out}: no query generated ({reason}); nothing written"
    assert len(server.requests) == asked and not server.faults
    assert not out.exists()


@pytest.mark.parametrize("server", ["openai"], indirect=True)
def test_a_fault_on_one_prompt_skips_its_tool_with_a_warning(
    agent: Path, server: FakeChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 400 for one prompt (Azure's content filter answers so) costs that tool, not the run."""
    server.fail_next(Fault(400, body=error_body("openai", "content filtered")))
    assert _generate(agent, "--llm", server.spec()) == 0
    captured = capsys.readouterr()
    warnings = [line for line in captured.err.splitlines() if ": skipped: " in line]
    assert len(warnings) == 1, captured.err
    assert warnings[0].endswith(f": skipped: HTTP 400 from {_where(server)}: content filtered")
    assert "9 generated cases for 3 of 4 tools" in captured.out


# ------------------------------------------------------------------------------ the timeout


def _ask(server: FakeChatServer, prompts: int, timeout: float) -> list[object]:
    endpoint = resolve_endpoint(server.spec(), None, server.environment(Path("unused")))
    asked = ask_all(
        [Prompt([{"role": "user", "content": f"Tool: t{i}"}], str) for i in range(prompts)],
        endpoint,
        version=1,
        concurrency=1,
        timeout=timeout,
        retry=RetryPolicy(max_retries=1, base_delay=0.0),
    )
    return asked.answers


def test_a_server_that_never_answers_stops_the_run_after_its_tries(
    server: FakeChatServer,
) -> None:
    """A server that accepts and never answers (a hung model server): each try waits the timeout;
    after the last the run stops with one line (every other prompt would wait as long)."""
    server.fail_next(Fault(hang=True), times=2)
    with pytest.raises(ChatError) as raised:
        _ask(server, prompts=3, timeout=0.3)
    assert str(raised.value) == (
        f"{server.spec()}: no answer from {_where(server)} within 0.3 s (tried 2 times)"
    )
    assert len(server.requests) == 2  # the other prompts were not asked


@pytest.mark.parametrize("server", ["openai"], indirect=True)
def test_one_slow_answer_is_tried_again(server: FakeChatServer) -> None:
    server.fail_next(Fault(hang=True))
    answers = _ask(server, prompts=1, timeout=0.3)
    assert len(server.requests) == 2 and isinstance(answers[0], str)
    assert '"queries"' in answers[0]
