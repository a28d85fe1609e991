"""serve's usage log (``--usage-log FILE``): each search and each call as a line of JSON.

The server hands each record (:func:`search_logged`, :func:`call_logged`; nothing is built when
no log is open) to :class:`UsageLog`, the handler ``commands/serve.py`` attaches to the logger
:data:`USAGE_LOGGER`; it queues the record for a thread of its own that writes it, so the event
loop never waits on the disk (a full queue drops the record and says so once). Being a logging
handler, it is closed (what is queued written) by logging's shutdown, as at serve's exit. The
file is rotated by size as logrotate does (``FILE`` -> ``FILE.1`` -> ... ``FILE.KEEP``, the
oldest dropped); a file moved or removed from under serve (an outside logrotate) is opened anew.

What is written: the records of :mod:`workbench.evaluate.usagelog` (docs/serve.md). A call's
arguments only with ``--log-arguments``; never a header, and every environment and header value
of the agent's servers replaced by ``[hidden]`` (:class:`~workbench.serve.logs.Scrub`), in the
query and the arguments alike. A client's session id (the ``Mcp-Session-Id`` header) is written
as a digest of it: it pairs a session's searches with its calls and cannot be replayed.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from workbench.errors import InputError
from workbench.evaluate.usagelog import call_record, now_text, search_record
from workbench.serve.logs import Scrub

if TYPE_CHECKING:
    from workbench.search.serving import ServeAnswer
    from workbench.serve.upstream import UpstreamPool

USAGE_LOGGER = "holo_tune.usage"
#: ``--usage-log-max-mb`` and ``--usage-log-keep`` when not given: rotate past 10 MB, keep 5.
DEFAULT_MAX_MB = 10.0
DEFAULT_KEEP = 5
#: Records waiting for the writer at most; past it a record is dropped (a disk that hangs).
QUEUE_SIZE = 10_000
#: Records the writer writes before it flushes the file.
BATCH = 256
#: Seconds between checks that the file is still where it was opened (an outside rotation).
REOPEN_CHECK = 1.0
#: Seconds closing waits for the writer to write what is queued.
CLOSE_WAIT = 5.0
#: A new log file's permissions: the queries are the users' messages.
FILE_MODE = 0o600
#: The session of a stdio client: serve has that one client for its whole life.
STDIO_SESSION = "stdio-" + uuid.uuid4().hex[:12]

_logger = logging.getLogger(USAGE_LOGGER)
_logger.propagate = False
_serve_logger = logging.getLogger("holo_tune.serve")
_STOP = object()


def logging_on() -> bool:
    """Whether a usage log is open (else the hooks build nothing)."""
    return bool(_logger.handlers)


def session_digest(value: str) -> str:
    """A session id as the log writes it: 16 hex digits of its SHA-256."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def log_search(
    query: str | None,
    tools: Sequence[tuple[str, float]],
    *,
    refused: bool,
    seconds: float,
    session: str | None,
    select: bool = False,
    error: str | None = None,
) -> None:
    """A ``search_tools`` answer that took ``seconds`` (it started that long ago)."""
    if not logging_on():
        return
    record = search_record(
        time=now_text(seconds),
        session=session,
        query=query,
        tools=tools,
        refused=refused,
        ms=seconds * 1000,
        select=select,
        error=error,
    )
    _put(record)


def log_call(
    tool: str,
    upstream: str | None,
    outcome: str,
    *,
    seconds: float,
    session: str | None,
    arguments: object = None,
) -> None:
    """A call of ``tool`` (``arguments`` are written only with ``--log-arguments``)."""
    if not logging_on():
        return
    record = call_record(
        time=now_text(seconds),
        session=session,
        tool=tool,
        upstream=upstream,
        outcome=outcome,
        ms=seconds * 1000,
    )
    _put(record, arguments)


def _put(record: dict[str, Any], arguments: object = None) -> None:
    """Hand the record to the open log's writer (not through a LogRecord: the caller is serve's
    event loop, and this is the whole of its part)."""
    for handler in _logger.handlers:
        if isinstance(handler, UsageLog):
            handler.put(record, arguments)


def search_logged(
    query: str,
    found: ServeAnswer | None,
    started: float,
    session: Callable[[], str | None],
    error: str | None = None,
) -> None:
    """``search_tools``' answer (``found``; None: refused with ``error``), started at
    ``started`` (``time.perf_counter``), in the log: the tools returned with their scores."""
    if not logging_on():
        return
    took = time.perf_counter() - started
    if found is None:
        log_search(None, (), refused=True, seconds=took, session=session(), error=error)
        return
    scores = found.result.ranking.scores
    indices = found.result.indices
    tools = [
        (tool.full_name, float(scores[i])) for tool, i in zip(found.tools, indices, strict=True)
    ]
    selected = found.result.ranking.selected is not None
    log_search(
        query, tools, refused=found.refused, seconds=took, session=session(), select=selected
    )


def call_logged(
    pool: UpstreamPool | None,
    name: str,
    arguments: object,
    outcome: str | bool,
    started: float,
    session: Callable[[], str | None],
) -> None:
    """A call of ``name`` in the log, with the server that owns it (``outcome``: ``refused``,
    or whether the result is an error)."""
    if not logging_on():
        return
    if isinstance(outcome, bool):
        outcome = "error" if outcome else "ok"
    owner = pool.owner(name) if pool is not None else None
    upstream = owner[0].name if owner is not None else None
    took = time.perf_counter() - started
    log_call(name, upstream, outcome, seconds=took, session=session(), arguments=arguments)


class UsageLog(logging.Handler):
    """Writes the usage records to ``path`` from a thread of its own, rotated by size."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int,
        keep: int,
        log_arguments: bool = False,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self.log_arguments = log_arguments
        self.scrub = Scrub(secrets)
        self.dropped = 0
        self._failed = False
        self._queue: queue.Queue[object] = queue.Queue(QUEUE_SIZE)
        self._file: IO[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._start()

    def _start(self) -> None:
        """Open the file (OSError: it cannot be written) and start the writer."""
        self._file = self._open()
        self._checked = time.monotonic()
        self._thread = threading.Thread(target=self._write_all, name="usage-log", daemon=True)
        self._thread.start()

    # -- the event loop's side: never waits

    def emit(self, record: logging.LogRecord) -> None:
        """A record logged on :data:`USAGE_LOGGER` with ``extra={"usage": {...}}``."""
        usage = getattr(record, "usage", None)
        if isinstance(usage, dict):
            self.put(usage, getattr(record, "usage_arguments", None))

    def put(self, usage: dict[str, Any], arguments: object = None) -> None:
        """Queue a record for the writer (``arguments`` kept only with ``--log-arguments``)."""
        if self.log_arguments and arguments is not None:
            usage = {**usage, "arguments": arguments}
        if self._thread is None:
            # Closed by a logging set-up (uvicorn's closes every handler): opened again, as
            # logging's own FileHandler does.
            try:
                self._start()
            except OSError as err:
                self._say_failed(err)
                return
        try:
            self._queue.put_nowait(usage)
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1:
                _serve_logger.warning(
                    "usage log %s: the writer is behind (%d records queued): records are "
                    "dropped until it catches up",
                    self.path,
                    QUEUE_SIZE,
                )

    def close(self) -> None:
        """Write what is queued (waiting at most :data:`CLOSE_WAIT`), then close the file."""
        thread, self._thread = self._thread, None
        if thread is not None and thread.is_alive():
            with contextlib.suppress(queue.Full):
                self._queue.put(_STOP, timeout=CLOSE_WAIT)
            thread.join(CLOSE_WAIT)
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None
        super().close()

    def _say_failed(self, err: Exception) -> None:
        if not self._failed:
            self._failed = True
            _serve_logger.warning("usage log %s: cannot write: %s", self.path, err)

    # -- the writer thread

    def _write_all(self) -> None:
        """Write what is queued, in batches (one flush for all that waited), until told to stop."""
        while True:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = _STOP in batch
            try:
                for item in batch:
                    if isinstance(item, dict):
                        self._write(self._line(item))
                if self._file is not None:
                    self._file.flush()
            except (OSError, ValueError) as err:
                self._say_failed(err)
            if stop:
                return

    def _line(self, record: dict[str, Any]) -> bytes:
        if "query" in record and isinstance(record["query"], str):
            record["query"] = self.scrub.scrub(record["query"])
        if "arguments" in record:
            record["arguments"] = _scrubbed(record["arguments"], self.scrub)
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        return (text + "\n").encode("utf-8", "surrogatepass")

    def _write(self, line: bytes) -> None:
        self._reopen_if_moved()
        file = self._file
        assert file is not None
        if self.max_bytes and file.tell() and file.tell() + len(line) > self.max_bytes:
            self._rotate()
            file = self._file
            assert file is not None
        file.write(line)
        self._failed = False

    def _open(self) -> IO[bytes]:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        return os.fdopen(fd, "ab")

    def _reopen_if_moved(self) -> None:
        now = time.monotonic()
        if now - self._checked < REOPEN_CHECK:
            return
        self._checked = now
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            on_disk = None
        assert self._file is not None
        mine = os.fstat(self._file.fileno())
        if on_disk is None or (on_disk.st_dev, on_disk.st_ino) != (mine.st_dev, mine.st_ino):
            self._file.close()
            self._file = self._open()

    def _rotate(self) -> None:
        """``FILE.{keep-1}`` -> ``FILE.{keep}`` ... ``FILE`` -> ``FILE.1``; keep 0: start over."""
        assert self._file is not None
        self._file.close()
        if self.keep > 0:
            for n in range(self.keep - 1, 0, -1):
                older = rotated(self.path, n)
                if older.exists():
                    os.replace(older, rotated(self.path, n + 1))
            os.replace(self.path, rotated(self.path, 1))
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self._file = self._open()


def rotated(path: Path, n: int) -> Path:
    """The ``n``-th rotated file of ``path`` (``usage.jsonl.1`` is the newest)."""
    return path.with_name(f"{path.name}.{n}")


def _scrubbed(value: Any, scrub: Scrub) -> Any:
    """``value`` (JSON-like) with every secret inside its strings hidden."""
    if not scrub.secrets:
        return value
    if isinstance(value, str):
        return scrub.scrub(value)
    if isinstance(value, dict):
        return {scrub.scrub(str(k)): _scrubbed(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrubbed(v, scrub) for v in value]
    return value


def open_usage_log(
    path: str | Path,
    *,
    max_mb: float,
    keep: int,
    log_arguments: bool,
    secrets: Iterable[str],
) -> UsageLog:
    """The usage log at ``path``, opened now (a folder that is missing or a file that cannot be
    written: one line naming ``--usage-log``) and attached to :data:`USAGE_LOGGER`."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a directory: give a file", file=path, field="--usage-log")
    try:
        handler = UsageLog(
            path,
            max_bytes=int(max_mb * 1024 * 1024),
            keep=keep,
            log_arguments=log_arguments,
            secrets=secrets,
        )
    except OSError as err:
        raise InputError(
            f"cannot write: {err.strerror or err}", file=path, field="--usage-log"
        ) from None
    for old in list(_logger.handlers):
        _logger.removeHandler(old)
        old.close()
    _logger.setLevel(logging.INFO)
    _logger.addHandler(handler)
    # Closed (what is queued written) at exit: logging's own shutdown may no longer know it
    # (uvicorn's logging set-up closes every handler and forgets them; it opens again).
    atexit.register(handler.close)
    return handler
