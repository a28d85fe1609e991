"""Writing a planned file, one way for every writer (the block, 0.7 allowlists, ``.mcp.json``,
the runtimes' own configuration files, the cases store).

:func:`atomic_write` replaces a file so that a reader sees the old one or the new one, never half
of either. :func:`apply_bytes` is the one apply every plan goes through: it refuses a file that
changed since it was read, keeps a backup of the old bytes, keeps the file's permission bits,
writes through a symbolic link to the file it points to (the link stays a link), and gives a new
file the mode ``open()`` would (the umask's).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import WriteBackError


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: What a new file gets (the temporary file is 0600): read once, at import, as the umask can only
#: be read by setting it.
NEW_FILE_MODE = 0o666 & ~_umask()


def backup_path(path: str | Path) -> Path:
    """Where a write keeps the previous file: ``NAME.bak`` next to it."""
    path = Path(path)
    return path.with_name(path.name + ".bak")


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class FilePlan:
    """A planned write, the one type every writer plans (the agent's block and allowlists,
    ``.mcp.json``, a runtime's JSON, YAML or Python file): the file's bytes when it was read
    (None: no file yet), the new bytes, the diff to show first, what to warn of it, and what it
    changes in words (the keys or servers, for the status line)."""

    path: Path
    old: bytes | None
    new: bytes
    diff: str
    warnings: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.old != self.new

    @property
    def new_text(self) -> str:
        return self.new.decode("utf-8")


def apply_plan(plan: FilePlan, *, backup: bool = True) -> Path | None:
    """Write ``plan`` through :func:`apply_bytes`; returns the backup's path (None: no backup,
    or nothing to write)."""
    if not plan.changed:
        return None
    return apply_bytes(plan.path, plan.old, plan.new, backup=backup)


def apply_plans(plans: Sequence[FilePlan], *, backup: bool = True) -> Path | None:
    """Write each changed plan of ``plans`` in turn through :func:`apply_bytes` (a write that
    spans files: serve's servers file, then the agent that names it). Every file is checked
    first: when one changed since it was read, none is written. Returns the last backup kept
    (None: none)."""
    changed = [plan for plan in plans if plan.changed]
    for plan in changed:
        try:
            now: bytes | None = plan.path.resolve().read_bytes()
        except FileNotFoundError:
            now = None
        except OSError as err:
            raise WriteBackError(
                f"{plan.path}: cannot read: {err.strerror}; nothing written"
            ) from None
        if digest(now) != digest(plan.old):
            raise WriteBackError(f"{plan.path}: changed on disk since it was read; nothing written")
    kept = None
    for plan in changed:
        kept = apply_bytes(plan.path, plan.old, plan.new, backup=backup) or kept
    return kept


def apply_bytes(path: Path, old: bytes | None, new: bytes, *, backup: bool = True) -> Path | None:
    """Write ``new`` over ``path``, which held ``old`` when the plan was made (None: it did not
    exist); returns the backup's path (None: no backup, or nothing to write).

    Refused (WriteBackError, nothing written) when the file on disk is no longer ``old``. A
    symbolic link is followed: the file it points to is replaced, the link stays.
    """
    if old == new:
        return None
    name = str(path)
    target = path.resolve()
    try:
        now: bytes | None = target.read_bytes()
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError as err:
        if old is not None:  # it was there when the plan was made
            raise WriteBackError(f"{name}: cannot read: {err.strerror}; nothing written") from None
        now, mode = None, NEW_FILE_MODE
    except OSError as err:
        raise WriteBackError(f"{name}: cannot read: {err.strerror}; nothing written") from None
    if digest(now) != digest(old):
        raise WriteBackError(f"{name}: changed on disk since it was read; nothing written")
    saved = backup_path(path) if backup and old is not None else None
    if saved is not None and old is not None:
        try:
            atomic_write(saved, old, mode=mode)
        except OSError as err:
            raise WriteBackError(
                f"{name}: cannot write its backup {saved}: {err.strerror}; file unchanged"
            ) from None
    try:
        if old is None:  # a new file: its folder may be new too (~/.pizzapi)
            target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, new, mode=mode)
    except OSError as err:
        raise WriteBackError(f"{name}: cannot write: {err.strerror}; file unchanged") from None
    return saved


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
