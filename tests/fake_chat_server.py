"""A real HTTP server on 127.0.0.1 that speaks a chat API: OpenAI's chat completions (the
default), Azure OpenAI's (a deployment's URL, ``api-version``, an ``api-key`` header) or
Ollama's ``/api/chat``.

It checks what the real service checks (the key, the path, the deployment or model; errors in
each API's own shape), records every request, answers each tool's prompt with three distinct
queries in JSON and each search-call prompt (``--llm``: "User message: ...") with keywords and a
pattern, and can be scripted: answer the next requests with a status (``429`` with
``retry-after-ms``, ``500``), a body that is not JSON, or no answer at all (:class:`Fault`), or
answer a given tool with text that is not the JSON asked for (once, or always).
:func:`closed_port` gives a port nothing listens on.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

KEY = "sk-test-chat-0123456789"
AZURE_KEY = "azure-chat-key-fedcba9876"
AZURE_DEPLOYMENT = "chat-deploy"
#: Not holo-tune's default, so a test sees which version was sent.
AZURE_VERSION = "2025-01-01-preview"
OLLAMA_MODEL = "llama3.2"
DIALECTS = ("openai", "azure_openai", "ollama")
_TOOL = re.compile(r"^Tool: (\S+)$", re.MULTILINE)
_MESSAGE = re.compile(r"^User message: (.*)$", re.MULTILINE)


def write_catalog(
    path: Path, tools: Mapping[str, Sequence[tuple[str, str, Sequence[str]]]]
) -> Path:
    """A catalog snapshot of ``{server: [(name, description, parameter names), ...]}``."""
    servers = {
        name: {
            "tools": [
                {
                    "name": n,
                    "description": d,
                    "inputSchema": {"type": "object", "properties": {p: {} for p in params}},
                }
                for n, d, params in entries
            ]
        }
        for name, entries in tools.items()
    }
    path.write_text(json.dumps({"holo_tune_catalog": 1, "servers": servers}))
    return path


def search_answer_for(message: str) -> dict[str, str]:
    """The search call the server writes for a message: its long words, and them as a pattern."""
    words = [w for w in re.findall(r"[a-z]+", message.lower()) if len(w) > 3]
    return {"bm25": " ".join(words), "regex": "(?i)(" + "|".join(words[:3]) + ")"}


def answer_for(tool: str, n: int) -> list[str]:
    """The queries the server writes for ``tool``: distinct words per tool and per style."""
    tag = hashlib.sha256(tool.encode()).hexdigest()[:6]
    styles = [
        f"please use {tool} for the quarterly report now ref{tag}",
        f"I am trying to get something done with {tool} kind of ref{tag}",
        f"could you first look at {tool} and then summarise everything ref{tag}",
        f"what happens if we run {tool} twice ref{tag}",
    ]
    return styles[:n]


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed): connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any
    query: dict[str, list[str]] = field(default_factory=dict)

    @property
    def message(self) -> str | None:
        """The user message of a search-call prompt (None for a tool prompt)."""
        for message in self.body.get("messages", []):
            found = _MESSAGE.search(message.get("content", ""))
            if found:
                return found.group(1)
        return None

    @property
    def tool(self) -> str | None:
        for message in self.body.get("messages", []):
            found = _TOOL.search(message.get("content", ""))
            if found:
                return found.group(1)
        return None


@dataclass
class Fault:
    """Answer one request with ``status`` and ``body`` (a JSON value; default: an error message),
    or ``raw`` bytes as they are (a body that is not JSON), or never (``hang``: the connection
    stays open, silent, until the server stops)."""

    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    raw: bytes | None = None
    hang: bool = False


def _chat(dialect: str, content: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    if dialect == "ollama":
        return {"model": OLLAMA_MODEL, "message": message, "done": True}
    return {"choices": [{"index": 0, "message": message}], "model": "fake"}


def _refusal(dialect: str, seen: Seen) -> Fault | None:
    """The error the real service gives for a wrong key, path, deployment or model (None: none)."""
    if dialect == "openai":
        given = seen.headers.get("authorization", "")
        if given != f"Bearer {KEY}":
            # OpenAI echoes (part of) a wrong key: the client must not print it.
            shown = given.removeprefix("Bearer ")
            return Fault(401, body={"error": {"message": f"Incorrect API key provided: {shown}."}})
        if seen.path != "/v1/chat/completions":
            return Fault(404, body={"error": {"message": f"no route {seen.path}"}})
        model = seen.body.get("model")
        if model == "no-such-model":
            return Fault(404, body={"error": {"message": f"The model `{model}` does not exist"}})
        return None
    if dialect == "azure_openai":
        deployment = f"/openai/deployments/{AZURE_DEPLOYMENT}/chat/completions"
        if not seen.path.startswith("/openai/deployments/") or not seen.query.get("api-version"):
            return Fault(404, body={"error": {"code": "404", "message": "Resource not found"}})
        if seen.headers.get("api-key") != AZURE_KEY:
            message = "Access denied due to invalid subscription key or wrong API endpoint."
            return Fault(401, body={"error": {"code": "401", "message": message}})
        if seen.path != deployment:
            message = "The API deployment for this resource does not exist."
            return Fault(404, body={"error": {"code": "DeploymentNotFound", "message": message}})
        return None
    if seen.path != "/api/chat":
        return Fault(404, raw=b"404 page not found")
    model = seen.body.get("model")
    if model != OLLAMA_MODEL:
        return Fault(404, body={"error": f"model '{model}' not found, try pulling it first"})
    return None


class FakeChatServer:
    """``with FakeChatServer() as server:`` serves on ``server.url`` (OpenAI: ``.../v1``; Azure
    OpenAI: the resource's endpoint; Ollama: the host), speaking ``dialect``."""

    def __init__(self, dialect: str = "openai") -> None:
        assert dialect in DIALECTS, dialect
        self.dialect = dialect
        self.requests: list[Seen] = []
        self.faults: deque[Fault] = deque()
        #: tool name -> how many answers to spoil (-1: always).
        self.malformed: dict[str, int] = {}
        #: tool name -> queries to answer with instead of :func:`answer_for`.
        self.answers: dict[str, list[str]] = {}
        #: user message -> the search call (a JSON object) to answer instead of
        #: :func:`search_answer_for`.
        self.searches: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        base = f"http://{host!s}:{port}"
        return f"{base}/v1" if self.dialect == "openai" else base

    def environment(self, cache_home: Path) -> dict[str, str]:
        """The variables that point holo-tune's chat client here, with a private disk cache."""
        found = {
            "openai": {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": self.url},
            "azure_openai": {
                "AZURE_OPENAI_ENDPOINT": self.url,
                "AZURE_OPENAI_API_KEY": AZURE_KEY,
                "AZURE_OPENAI_API_VERSION": AZURE_VERSION,
            },
            "ollama": {"OLLAMA_HOST": self.url},
        }[self.dialect]
        return {**found, "XDG_CACHE_HOME": str(cache_home)}

    def spec(self) -> str:
        """The ``--llm`` spec of the model this server knows."""
        name = {"openai": "gpt-4o-mini", "azure_openai": AZURE_DEPLOYMENT}
        return f"{self.dialect}:{name.get(self.dialect, OLLAMA_MODEL)}"

    def fail_next(self, fault: Fault, times: int = 1) -> None:
        """Answer the next ``times`` requests that pass the key and route checks with ``fault``."""
        with self._lock:
            self.faults.extend([fault] * times)

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _respond(self, seen: Seen) -> Fault:
        with self._lock:
            self.requests.append(seen)
            refused = _refusal(self.dialect, seen)
            if refused is not None:
                return refused
            if self.faults:
                fault = self.faults.popleft()
                if fault.body is None and fault.raw is None and not fault.hang:
                    return replace(fault, body={"error": {"message": "try again"}})
                return fault
            message = seen.message
            if message is not None:
                call = self.searches.get(message) or search_answer_for(message)
                return Fault(200, body=_chat(self.dialect, json.dumps(call)))
            tool = seen.tool or "?"
            spoil = self.malformed.get(tool, 0)
            if spoil:
                self.malformed[tool] = spoil - 1 if spoil > 0 else spoil
                content = "Sure! Here are some queries: 1. find it 2. do it"
            else:
                queries = self.answers.get(tool) or answer_for(tool, 3)
                content = json.dumps({"queries": queries})
        return Fault(200, body=_chat(self.dialect, content))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {}
                if not isinstance(body, dict):
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                parts = urlsplit(self.path)
                seen = Seen(parts.path, headers, body, parse_qs(parts.query))
                answer = owner._respond(seen)
                if answer.hang:
                    owner._stopping.wait(timeout=60)
                    self.close_connection = True
                    return
                data = json.dumps(answer.body).encode() if answer.raw is None else answer.raw
                kind = "application/json" if answer.raw is None else "text/html"
                try:
                    self.send_response(answer.status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def error_body(dialect: str, message: str) -> Any:
    """An error body in the dialect's shape (Ollama: ``{"error": "..."}``)."""
    if dialect == "ollama":
        return {"error": message}
    return {"error": {"message": message}}
