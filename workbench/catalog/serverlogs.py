"""Per-run log files of the MCP servers, and the line of a server's stderr worth quoting.

Each run gets ``$XDG_CACHE_HOME/holo-tune/logs/<date>-<time>-<ns>-<pid>/`` (``~/.cache`` when
XDG_CACHE_HOME is unset); the newest KEEP_RUNS runs are kept. A stdio server's stderr goes to
``<server>.log`` there, and the listing appends its own diagnosis to the same file.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

#: How many per-run log directories are kept.
KEEP_RUNS = 20


def log_root() -> Path:
    """``$XDG_CACHE_HOME/holo-tune/logs`` (``~/.cache`` when XDG_CACHE_HOME is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "holo-tune" / "logs"


def new_log_dir(root: Path | None = None) -> Path:
    """A fresh directory for this run's server logs; older runs beyond KEEP_RUNS are removed.

    Falls back to a temporary directory when the cache directory cannot be written.
    """
    root = root or log_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path(tempfile.mkdtemp(prefix="holo-tune-logs-"))
    now = time.time_ns()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now // 1_000_000_000))
    path = root / f"{stamp}-{now % 1_000_000_000:09d}-{os.getpid()}"  # names sort by time
    path.mkdir()
    runs = sorted((p for p in root.iterdir() if p.is_dir() and p != path), key=lambda p: p.name)
    for old in runs[: max(0, len(runs) - (KEEP_RUNS - 1))]:
        shutil.rmtree(old, ignore_errors=True)
    return path


#: File systems refuse names over 255 bytes; a longer server name is cut and given a digest.
_MAX_STEM = 100


def log_name(server: str) -> str:
    """The log file name of a server (characters unsafe in a file name become ``_``; a name too
    long for a file name is cut, with a digest of the whole so that two names stay apart)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", server)
    if len(stem) > _MAX_STEM:
        digest = hashlib.sha256(server.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        stem = f"{stem[:_MAX_STEM]}-{digest}"
    return stem + ".log"


#: A line of an error report: ``error:``, ``npm error`` (``npm ERR!``), ``fatal:``, a Python
#: or Node ``...Error:``, or a cause in uv's chain (``cause:``, ``Caused by:``, ``╰─▶``, ``×``).
_ERROR_LINE = re.compile(
    r"^[\s│]*(npm\s+)?(\w*error\b|err!|fatal\b|caused by\b|cause:|×\s|╰─▶)",
    re.IGNORECASE,
)
#: Words of a line that names why (a package not found, a certificate refused, a missing key),
#: as opposed to a generic failure ("No solution found when resolving tool dependencies",
#: "Failed to fetch", "Request failed after 3 retries").
_CAUSE = re.compile(
    r"not found|could not be found|cannot find|can't find|no such|no module named|"
    r"not in this registry|certificate|\bssl\b|\btls\b|permission denied|access denied|"
    r"\bdenied\b|refused|unauthori[sz]ed|forbidden|\b40[134]\b|\bmissing\b|\brequired\b|"
    r"\binvalid\b|\bexpired\b|\bbecause\b|unsatisfiable|timed out|\bnot set\b|"
    r"\bunknown\b|unable to|"
    r"no space left|out of memory",
    re.IGNORECASE,
)
#: Lines that never say why: npm's pointer to its log, and its advice after a 404.
_NOISE = re.compile(
    r"complete log of this run|^\s*npm\s+(error|err!)\s*(404|\S+\.log)?\s*$|"
    r"you can also install from a|tarball, folder, http url, or git url",
    re.IGNORECASE,
)
#: How many of the last lines of a server's stderr are read for the telling one.
TAIL_LINES = 20


def telling_line(text: str) -> str:
    """The line of a server's stderr that says why it failed (empty when it wrote nothing).

    Of the last :data:`TAIL_LINES` non-blank lines (npm's log pointer and its 404 advice left
    out), the one that names a cause (:data:`_CAUSE`: "not found", "certificate", "because",
    "missing", ...) and is part of an error report (:data:`_ERROR_LINE`) wins; else a line that
    names a cause; else an error line; else the last line. Among equals, the last: a chain of
    causes ends with the root one, a traceback with the exception.
    """
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    tail = [ln for ln in lines[-TAIL_LINES:] if not _NOISE.search(ln)]
    if not tail:
        return ""

    def weight(position: int) -> tuple[bool, bool, int]:
        line = tail[position]
        return bool(_CAUSE.search(line)), bool(_ERROR_LINE.match(line)), position

    return tail[max(range(len(tail)), key=weight)]


def stderr_tail(path: Path) -> str:
    """``; stderr: '<the telling line>'`` (:func:`telling_line`, at most 200 characters) of a
    server's log, or empty."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    line = telling_line(text)
    return f"; stderr: {line[:200]!r}" if line else ""
