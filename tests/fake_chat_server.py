"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions API.

It checks the bearer key (401 with OpenAI's error body otherwise), records every request, answers
each tool's prompt with three distinct queries in JSON and each search-call prompt (``--llm``:
"User message: ...") with keywords and a pattern, and can be scripted: answer the next
requests with a status (``429`` with ``retry-after-ms``, ``500``), or answer a given tool with
text that is not the JSON asked for (once, or always).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

KEY = "sk-test-chat-0123456789"
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


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any

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
    status: int
    headers: dict[str, str] = field(default_factory=dict)


def _chat(content: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": content}
    return {"choices": [{"index": 0, "message": message}], "model": "fake"}


class FakeChatServer:
    """``with FakeChatServer() as server:`` serves on ``server.url`` (``.../v1``)."""

    def __init__(self) -> None:
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
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def environment(self, cache_home: Path) -> dict[str, str]:
        """The variables that point holo-tune's chat client here, with a private disk cache."""
        return {
            "OPENAI_API_KEY": KEY,
            "OPENAI_BASE_URL": self.url,
            "XDG_CACHE_HOME": str(cache_home),
        }

    def __enter__(self) -> FakeChatServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _respond(self, seen: Seen) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            self.requests.append(seen)
            if seen.headers.get("authorization") != f"Bearer {KEY}":
                error = {"message": "Incorrect API key provided: sk-wr***ng.", "type": "auth"}
                return 401, {}, {"error": error}
            if seen.path != "/v1/chat/completions":
                return 404, {}, {"error": {"message": f"no route {seen.path}"}}
            if self.faults:
                fault = self.faults.popleft()
                return fault.status, fault.headers, {"error": {"message": "try again"}}
            message = seen.message
            if message is not None:
                call = self.searches.get(message) or search_answer_for(message)
                return 200, {}, _chat(json.dumps(call))
            tool = seen.tool or "?"
            spoil = self.malformed.get(tool, 0)
            if spoil:
                self.malformed[tool] = spoil - 1 if spoil > 0 else spoil
                content = "Sure! Here are some queries: 1. find it 2. do it"
            else:
                queries = self.answers.get(tool) or answer_for(tool, 3)
                content = json.dumps({"queries": queries})
        return 200, {}, _chat(content)

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
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, payload = owner._respond(Seen(self.path, headers, body))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
