"""Token counts on disk: a text counted once is never encoded again, in any process.

Building an encoding (gunzip, sha256 check and parse of 200k ranks) is most of what counting a
catalog costs at a command's start; the counts themselves are a dictionary lookup away. The cache
is one SQLite file (``workbench.cachefile``) under ``$XDG_CACHE_HOME/holo-tune/tokens``, rows
keyed by (encoding identity, sha256 of the text). The identity holds everything a count depends
on (the encoding's name, its rank file's sha256, its split pattern, tiktoken's version and
:data:`COUNT_RULE`), so a changed encoding never reads a stale count. It is only an optimisation:
a file that cannot be read or written is a miss (a warning logged), and a row that is not a count
is ignored.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path

import tiktoken

from workbench.cachefile import CacheFile, cache_home, text_key
from workbench.tokens.encodings import encoding_spec, get_encoding

#: What a count is: ``len(encoding.encode_ordinary(text))``. Bump it when that changes, and every
#: count stored before is ignored.
COUNT_RULE = 1

#: Single texts a process counts through the disk cache (a one-shot command counts its answer from
#: the disk; a tuner, which counts thousands, counts them in memory after these). Few: a text not
#: on the disk costs a write of its own (10-20 ms here: the file is synced when its connection
#: closes).
TEXT_READS = 8
_text_reads = itertools.count()

#: The counts this process has read or stored, per cache file and encoding identity (text hash
#: -> tokens): a count never changes for its identity, so what was read once is not read again.
#: An engine counts its meta tools each time it is built (hundreds in a sweep): 0.8 ms a time
#: through SQLite, a dictionary lookup here.
_MEMORY: dict[tuple[Path, str], dict[str, int]] = {}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS counts (
    encoding TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (encoding, text_sha256)
) WITHOUT ROWID
"""


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/holo-tune/tokens`` (``~/.cache`` when XDG_CACHE_HOME is unset)."""
    return cache_home(environ) / "tokens"


def forget() -> None:
    """Forget the counts this process has seen (the next reads go to the files, as a new
    process's do)."""
    _MEMORY.clear()


def encoding_identity(name: str) -> str:
    """What a count of encoding ``name`` depends on, as one string (the cache's key).

    Raises :class:`~workbench.tokens.encodings.EncodingError` for an unknown name.
    """
    spec = encoding_spec(name)
    pattern = hashlib.sha256(spec.pat_str.encode("utf-8")).hexdigest()[:16]
    return (
        f"{spec.name} ranks={spec.sha256} pattern={pattern} "
        f"tiktoken={tiktoken.__version__} rule={COUNT_RULE}"
    )


class TokenCountCache:
    """Token counts on disk, keyed by (encoding identity, text hash); safe for concurrent
    processes."""

    FILENAME = "token-counts.sqlite3"

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / self.FILENAME
        self._file = CacheFile(self.path, _SCHEMA, "token count cache")

    @classmethod
    def default(cls, environ: Mapping[str, str] | None = None) -> TokenCountCache:
        """The user's cache under XDG_CACHE_HOME."""
        return cls(default_cache_dir(environ))

    def get(self, identity: str, keys: Sequence[str]) -> dict[str, int]:
        """The cached counts among ``keys`` (text hashes): those this process has seen from
        memory, the others from the file; an unreadable file holds none, and a row whose count
        is not a whole number of tokens is not one."""
        memory = _MEMORY.setdefault((self.path, identity), {})
        found = {key: memory[key] for key in keys if key in memory}
        unseen = [key for key in keys if key not in found]
        if not unseen:
            return found
        rows = self._file.select(
            "SELECT text_sha256, tokens FROM counts "
            "WHERE encoding = ? AND text_sha256 IN ({marks})",
            [identity],
            unseen,
        )
        read = {
            key: tokens
            for key, tokens in rows
            if isinstance(key, str) and type(tokens) is int and tokens >= 0
        }
        memory.update(read)
        found.update(read)
        return found

    def put(self, identity: str, counts: Mapping[str, int]) -> None:
        """Store ``counts`` (text hash -> tokens) in one transaction; errors are only logged."""
        if not counts:
            return
        _MEMORY.setdefault((self.path, identity), {}).update(counts)
        self._file.write(
            "INSERT OR REPLACE INTO counts (encoding, text_sha256, tokens) VALUES (?, ?, ?)",
            [(identity, key, int(tokens)) for key, tokens in counts.items()],
        )

    def count(self, identity: str | None = None) -> int:
        """Rows stored (for one encoding identity, or all)."""
        return self._file.count("counts", "encoding", identity)


def encoded_lengths(texts: Sequence[str], encoding: tiktoken.Encoding) -> dict[str, int]:
    """Token count of each string with a built encoding (special-token text counts as ordinary
    text, never raises).

    One plain call per distinct string: tool texts are short, and for them tiktoken's
    ``encode_ordinary_batch`` (a thread pool) measured 4-6x slower than this loop on the bfcl
    catalog (5,936 strings: ~0.25 s against ~0.05 s on two cores).
    """
    return {text: len(encoding.encode_ordinary(text)) for text in texts}


def cached_lengths(
    texts: Sequence[str], encoding: str, cache: TokenCountCache | None = None
) -> dict[str, int]:
    """Token count of each string in encoding ``encoding`` (by name), read from ``cache`` (the
    user's by default) when counted before: the encoding is built only when a text is missing,
    and the texts it counts are stored."""
    store = cache if cache is not None else TokenCountCache.default()
    identity = encoding_identity(encoding)
    keys = {text: text_key(text) for text in texts}
    found = store.get(identity, list(dict.fromkeys(keys.values())))
    missing = [text for text, key in keys.items() if key not in found]
    if missing:
        fresh = encoded_lengths(missing, get_encoding(encoding))
        counted = {keys[text]: tokens for text, tokens in fresh.items()}
        store.put(identity, counted)
        found.update(counted)
    return {text: found[key] for text, key in keys.items()}


def text_count(text: str, encoding: str, cache: TokenCountCache | None = None) -> int:
    """Tokens of one text in encoding ``encoding`` (by name). A process's first
    :data:`TEXT_READS` texts go through the disk cache (read, or counted and stored), so a
    one-shot command counts its answer from the disk; the next ones are counted in memory."""
    if next(_text_reads) < TEXT_READS:
        return cached_lengths([text], encoding, cache)[text]
    return len(get_encoding(encoding).encode_ordinary(text))
