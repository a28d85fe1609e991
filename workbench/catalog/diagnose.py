"""Why an MCP server's listing failed, in one line a user can act on.

The SDK reports most failures as a bare "Connection closed" or an exception group; this module
keeps the clues (the step that failed, the first HTTP error status, what the server wrote on
stdout that was not JSON-RPC) and turns the root cause into a sentence.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from workbench.catalog.specs import McpServerSpec


class ServerFailure(Exception):
    """A failure we diagnosed ourselves; its message is the one line the user sees."""


class Phase:
    """Which step a server's listing is in, so a failure says where it happened."""

    def __init__(self) -> None:
        self.step = "connect"
        self.http_error: str | None = None

    async def on_response(self, response: httpx2.Response) -> None:
        """httpx event hook: remember the first HTTP error status (the SDK hides it)."""
        if response.status_code >= 400 and self.http_error is None:
            reason = response.reason_phrase
            self.http_error = f"HTTP {response.status_code} {reason} from {response.request.url}"


class StdoutGarbage:
    """Collects what a server wrote on stdout that is not JSON-RPC (for the error message)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception) and len(self.lines) < 5:
            self.lines.append(garbage_text(message))

    def describe(self) -> str:
        if not self.lines:
            return ""
        return f"; it wrote non-JSON-RPC output on stdout: {self.lines[0]!r}"


def garbage_text(err: Exception) -> str:
    if isinstance(err, ValidationError):
        for detail in err.errors():
            raw = detail.get("input")
            if isinstance(raw, str):
                return raw[:120]
    return str(err).splitlines()[0][:120] if str(err) else type(err).__name__


def leaf(err: BaseException) -> BaseException:
    """The first real cause inside (nested) exception groups."""
    while isinstance(err, BaseExceptionGroup):
        inner = [e for e in err.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        err = (inner or list(err.exceptions))[0]
    return err


def describe_failure(err: BaseException, spec: McpServerSpec, phase: Phase | None = None) -> str:
    """One line saying why a server's listing failed."""
    err = leaf(err)
    step = phase.step if phase else "connect"
    if isinstance(err, ServerFailure):
        return str(err)
    if isinstance(err, FileNotFoundError) and spec.transport == "stdio":
        return f"command not found: {spec.command}"
    if isinstance(err, PermissionError) and spec.transport == "stdio":
        return f"command cannot be run: {spec.command} ({err.strerror})"
    if isinstance(err, httpx2.HTTPStatusError):
        response = err.response
        return f"HTTP {response.status_code} {response.reason_phrase} from {err.request.url}"
    if isinstance(err, httpx2.ConnectError):
        return f"cannot connect to {spec.url}: {err or 'connection failed'}"
    if isinstance(err, httpx2.HTTPError):
        return f"HTTP error from {spec.url}: {type(err).__name__}: {err}"
    if isinstance(err, MCPError):
        text = str(err) or "MCP error"
        if "closed" in text.lower():
            return "the server closed the connection"
        if phase is not None and phase.http_error:
            return f"{step} failed: {phase.http_error}"
        return f"{step} failed: {text}"
    if isinstance(err, anyio.EndOfStream | anyio.BrokenResourceError | anyio.ClosedResourceError):
        return "the server closed the connection"
    text = str(err).splitlines()[0] if str(err) else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
