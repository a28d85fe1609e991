"""A real HTTP server on 127.0.0.1 that speaks the OpenAI, Azure OpenAI and Ollama embedding APIs.

It checks what a real service checks (path, auth header, body shape), answers with deterministic
vectors (:func:`vector_of`), records every request, and can be scripted to fail first: a status
(``429``, ``500``, ...) or a stall longer than the client's timeout; ``delay`` slows every answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

DIMENSION = 8
OPENAI_KEY = "sk-test-openai-0123456789"
AZURE_KEY = "azure-test-key-abcdef"
AZURE_DEPLOYMENT = "embed-small"


def vector_of(model: str, text: str) -> list[float]:
    """The vector the server returns for ``text`` under ``model`` (differs per model)."""
    digest = hashlib.sha256(f"{model}\0{text}".encode()).digest()
    return [(b - 127.5) / 127.5 for b in digest[:DIMENSION]]


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Fault:
    """Answer the next request with ``status`` (and ``body``), or stall ``stall`` seconds first."""

    status: int = 500
    body: Any = None
    stall: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class FakeEmbeddingServer:
    """``with FakeEmbeddingServer() as server:`` serves on ``server.url`` until the block ends."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.faults: deque[Fault] = deque()
        #: Seconds every answer waits (a slow service: requests that stay in flight).
        self.delay = 0.0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def fail_next(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> FakeEmbeddingServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- used by the handler ------------------------------------------------------------------

    def record(self, seen: Seen) -> Fault | None:
        with self._lock:
            self.requests.append(seen)
            return self.faults.popleft() if self.faults else None


def _handler_for(server: FakeEmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = None
            seen = Seen(
                "POST",
                parts.path,
                parse_qs(parts.query),
                {k.lower(): v for k, v in self.headers.items()},
                body,
            )
            fault = server.record(seen)
            if fault is not None:
                if fault.stall:
                    time.sleep(fault.stall)
                    return  # the client has given up; nothing to answer
                self._send(fault.status, fault.body or {"error": {"message": "scripted"}}, fault)
                return
            status, answer = _route(seen)
            time.sleep(server.delay)
            self._send(status, answer)

        def _send(self, status: int, payload: Any, fault: Fault | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (fault.headers if fault else {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def _route(seen: Seen) -> tuple[int, Any]:
    """The answer a real service would give (errors in each API's own shape)."""
    if seen.path == "/v1/embeddings":
        return _openai(seen)
    if seen.path == f"/openai/deployments/{AZURE_DEPLOYMENT}/embeddings":
        return _azure(seen)
    if seen.path.startswith("/openai/deployments/"):
        return 404, {"error": {"code": "DeploymentNotFound", "message": "no such deployment"}}
    if seen.path == "/api/embed":
        return _ollama(seen)
    return 404, {"error": "not found"}


def _texts(body: Any) -> list[str] | None:
    if not isinstance(body, dict):
        return None
    given = body.get("input")
    if isinstance(given, list) and given and all(isinstance(t, str) for t in given):
        return given
    return None


def _openai_answer(model: str, texts: list[str]) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": i, "embedding": vector_of(model, t)}
        for i, t in enumerate(texts)
    ]
    # Real servers may answer out of order; the index is what counts.
    return {"object": "list", "data": list(reversed(data)), "model": model}


def _openai(seen: Seen) -> tuple[int, Any]:
    auth = seen.headers.get("authorization", "")
    if auth != f"Bearer {OPENAI_KEY}":
        shown = auth.removeprefix("Bearer ")
        # OpenAI echoes (part of) a wrong key: the client must not print it.
        return 401, {"error": {"message": f"Incorrect API key provided: {shown}."}}
    texts = _texts(seen.body)
    model = seen.body.get("model") if isinstance(seen.body, dict) else None
    if texts is None or not isinstance(model, str):
        return 400, {"error": {"message": "'input' must be a list of strings and 'model' set"}}
    if model == "missing-model":
        return 404, {"error": {"message": f"The model `{model}` does not exist"}}
    return 200, _openai_answer(model, texts)


def _azure(seen: Seen) -> tuple[int, Any]:
    if not seen.query.get("api-version"):
        return 404, {"error": {"code": "404", "message": "Resource not found"}}
    if seen.headers.get("api-key") != AZURE_KEY:
        return 401, {"error": {"code": "401", "message": "Access denied due to invalid key."}}
    texts = _texts(seen.body)
    if texts is None:
        return 400, {"error": {"message": "'input' must be a list of strings"}}
    return 200, _openai_answer(AZURE_DEPLOYMENT, texts)


def _ollama(seen: Seen) -> tuple[int, Any]:
    texts = _texts(seen.body)
    model = seen.body.get("model") if isinstance(seen.body, dict) else None
    if texts is None or not isinstance(model, str):
        return 400, {"error": "invalid input"}
    if model == "missing-model":
        return 404, {"error": f'model "{model}" not found, try pulling it first'}
    return 200, {"model": model, "embeddings": [vector_of(model, t) for t in texts]}
