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


_ERROR_LINE = re.compile(r"^\s*(npm\s+)?(\w*error\b|fatal\b)", re.IGNORECASE)


def stderr_tail(path: Path) -> str:
    """The telling line of a server's stderr: the last error line near the end, else the last."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    tail = [ln for ln in lines[-8:] if "complete log" not in ln]
    if not tail:
        return ""
    errors = [ln for ln in tail if _ERROR_LINE.match(ln)]
    return f"; stderr: {(errors or tail)[-1][:200]!r}"
