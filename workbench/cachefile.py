"""One SQLite file of the user's cache, shared by the disk caches (tool vectors, token counts).

Each cache is a table of rows keyed by text hashes under ``$XDG_CACHE_HOME/holo-tune/``: the WAL
journal lets concurrent holo-tune processes read and write it, each write is one transaction (a
crash never leaves half a row), and reads go by chunks of keys. A cache is only an optimisation:
a file that cannot be read gives no rows, one that cannot be written keeps nothing, and either
logs a warning, never raises.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Keys per SELECT (SQLite's default limit on bound variables is 999 in old builds).
CHUNK = 500


def text_key(text: str) -> str:
    """The cache key of one text: sha256 of its UTF-8 bytes (hex); a lone surrogate (which JSON
    may hold) is kept as its own bytes, so distinct texts keep distinct keys."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/holo-tune`` (``~/.cache/holo-tune`` when XDG_CACHE_HOME is unset).

    ``environ`` (an agent's environment, its ``.env`` included) may set XDG_CACHE_HOME; where it
    does not, this process's does: an environment handed in whole (a dashboard's, a test's)
    then still caches where the process was told to, not in the user's home.
    """
    env = os.environ if environ is None else environ
    base = (
        env.get("XDG_CACHE_HOME") or os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    )
    return Path(base) / "holo-tune"


class CacheFile:
    """A SQLite file of one cache: its schema created once, a fresh connection per operation.

    ``label`` names the cache in warnings (``embedding cache``).
    """

    def __init__(self, path: Path, schema: str, label: str) -> None:
        self.path = path
        self.schema = schema
        self.label = label
        self._ready = False
        self._lock = threading.Lock()

    def select(self, sql: str, params: Sequence[Any], keys: Sequence[str]) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` for ``keys``, read by chunks; none from a file that is missing or
        unreadable (a warning logged). ``sql`` ends with ``IN ({marks})``: each chunk's ``?``
        marks go there, bound after ``params``."""
        if not keys or not self.path.exists():
            return []
        found: list[tuple[Any, ...]] = []
        try:
            with self.connect() as db:
                for start in range(0, len(keys), CHUNK):
                    chunk = list(keys[start : start + CHUNK])
                    marks = ",".join("?" * len(chunk))
                    found.extend(db.execute(sql.format(marks=marks), [*params, *chunk]))
        except (sqlite3.Error, OSError) as err:
            log.warning("%s %s not read: %s", self.label, self.path, err)
            return []
        return found

    def write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """``sql`` for each row, in one transaction; a file that cannot be written is logged."""
        try:
            with self.connect() as db, db:
                db.executemany(sql, rows)
        except (sqlite3.Error, OSError) as err:
            log.warning("%s %s not written: %s", self.label, self.path, err)

    def count(self, table: str, column: str, value: str | None) -> int:
        """Rows of ``table`` (those whose ``column`` is ``value``, or all); 0 without a file."""
        if not self.path.exists():
            return 0
        with self.connect() as db:
            if value is None:
                (n,) = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
            else:
                sql = f"SELECT COUNT(*) FROM {table} WHERE {column} = ?"
                (n,) = db.execute(sql, [value]).fetchone()
        return int(n)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection: cheap, and safe to use from any thread. Raises what SQLite and
        the file system raise (the folder is created)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=30.0)) as db:
            self._prepare(db)
            yield db

    def _prepare(self, db: sqlite3.Connection) -> None:
        with self._lock:
            if self._ready:
                return
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(self.schema)
            db.commit()
            self._ready = True
