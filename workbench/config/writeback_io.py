"""Atomic file replacement: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path

from workbench.errors import WriteBackError


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temp file in the same directory, fsync and rename.

    The temp file lives next to ``path`` so that ``os.replace`` is a rename on one file system
    (atomic on POSIX and Windows). ``mode`` (permission bits) is applied before the rename, so
    the file never appears with the temp file's 0600.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (best effort: not every platform can open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def replace_checked(
    path: Path, old: bytes | None, new: bytes, *, backup: bool = True
) -> Path | None:
    """Write ``new`` over ``path`` atomically, ``old`` being what was read (None: no file then),
    a backup of it kept beside as ``NAME.bak``; refused, nothing written, when the file changed
    on disk since it was read. Returns the backup kept, if any."""
    try:
        now: bytes | None = path.read_bytes()
    except FileNotFoundError:
        now = None
    except OSError as err:
        raise WriteBackError(f"{path}: cannot read: {err.strerror}; nothing written") from None
    if _digest(now) != _digest(old):
        raise WriteBackError(f"{path}: changed on disk since it was read; nothing written")
    saved = None
    try:
        if old is not None and backup:
            saved = path.with_name(path.name + ".bak")
            atomic_write(saved, old)
        atomic_write(path, new)
    except OSError as err:
        raise WriteBackError(f"{path}: cannot write: {err.strerror}; file unchanged") from None
    return saved


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()
