"""The limits every file a user hands holo-tune is held to, checked before any expensive work.

Agent YAML, the ``config.yaml`` files merged into it, ``test_cases_file``, cases files (YAML and
JSON Lines), catalog snapshots and ``--usage`` files all come from users, so a hostile or broken
one must end in one line naming the file (and line, when known) with exit code 2: never a hang, a
traceback or a crashed interpreter. docs/limits.md lists the same numbers.

* Only a regular file is read (a FIFO or a device would block or never end), at most
  :data:`MAX_FILE_BYTES` of it.
* YAML is walked as an event stream (libyaml's parser keeps no recursion) before any node tree is
  built: nesting deeper than :data:`MAX_DEPTH` is refused (libyaml's composer recurses in C and
  crashes the interpreter a few ten thousand levels down; Python walks stop at ~1,000), and so are
  aliases that expand the document beyond :data:`MAX_ALIAS_NODES` nodes (the "billion laughs"
  bomb: nine lines that stand for 10^9 values) and aliases that refer to their own ancestor.
* JSON is parsed by the standard library (its recursion is guarded), then refused when nested
  deeper than :data:`MAX_DEPTH`; an integer with more than :data:`MAX_INT_DIGITS` digits is
  refused as Python itself refuses it.
"""

from __future__ import annotations

import gc
import json
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from workbench.errors import InputError

#: The largest input file read (bytes). A 20 MB agent file loads in about 3 s; real ones are KB.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: The deepest nesting of mappings and lists (YAML and JSON). Real configs and JSON Schemas stay
#: under 30; HoloDeck's own loader fails near 1,000.
MAX_DEPTH = 100
#: How many nodes a YAML document may stand for once every alias is expanded, at least: the
#: document's own node count times :data:`ALIAS_RATIO` is allowed when that is larger.
MAX_ALIAS_NODES = 1_000_000
#: Aliases may make a document at most this many times the size it is written.
ALIAS_RATIO = 10
#: Python refuses to convert longer decimal integers (``sys.get_int_max_str_digits``).
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
#: The longest query (bytes of UTF-8) ``holo-tune search`` ranks, the dashboard's query box takes
#: and serve's ``search_tools`` answers. A query is the user's message: the data sets hold
#: messages up to 19 KB (livemcpbench; bfcl has one of 4.7 KB).
MAX_QUERY_BYTES = 64 * 1024


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def read_input(path: str | Path, error: type[InputError] = InputError, what: str = "file") -> bytes:
    """The bytes of ``path``: a regular file of at most :data:`MAX_FILE_BYTES`, else ``error``.

    The file is opened without blocking and checked with ``fstat`` before anything is read, so a
    FIFO (which would wait for a writer forever) or a device is refused at once.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise error("no such file", file=path) from None
    except IsADirectoryError:
        raise error(f"is a directory, not a {what}", file=path) from None
    except OSError as err:
        raise error(f"cannot read: {err.strerror or err}", file=path) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"is a directory, not a {what}", file=path)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"not a regular file (a pipe or a device?); give a {what}", file=path)
        if info.st_size > MAX_FILE_BYTES:
            raise error(
                f"too large: {_size(info.st_size)} (holo-tune reads at most "
                f"{_size(MAX_FILE_BYTES)})",
                file=path,
            )
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_FILE_BYTES:  # it grew while being read
                raise error(f"too large (more than {_size(MAX_FILE_BYTES)})", file=path)
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as err:
        raise error(f"cannot read: {err.strerror or err}", file=path) from None
    finally:
        os.close(fd)


def query_bytes(query: str) -> int:
    """The length of ``query`` in bytes of UTF-8, as :data:`MAX_QUERY_BYTES` counts it (a lone
    surrogate counts its 3 bytes instead of failing)."""
    return len(query) if query.isascii() else len(query.encode("utf-8", "surrogatepass"))


def query_too_long(query: str) -> str | None:
    """Why ``query`` is refused (one line that names its length, never quotes it), or None."""
    size = query_bytes(query)
    if size <= MAX_QUERY_BYTES:
        return None
    return (
        f"the query is {size:,} bytes long: holo-tune ranks queries of at most "
        f"{MAX_QUERY_BYTES:,} bytes (64 KiB)"
    )


def read_text(path: str | Path) -> str:
    """A regular file's UTF-8 text under the same limits, for callers that report a file they
    cannot read as a note rather than an error: OSError (or UnicodeDecodeError) otherwise."""
    try:
        raw = read_input(path)
    except InputError as err:
        raise OSError(err.message) from None
    return raw.decode("utf-8")


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large tree is built.

    Building millions of small objects makes CPython rerun its collector over all of them again
    and again (parsing 20 MB of YAML: 18 s with it, 3 s without); nothing built here is cyclic
    garbage, so nothing is lost by collecting afterwards instead.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class StructureError(Exception):
    """A document breaks a structural limit; ``line0`` is the 0-based line, ``cause`` one line."""

    def __init__(self, cause: str, line0: int | None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.line0 = line0


_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def check_yaml(text: str, loader: type[Any] = yaml.CSafeLoader) -> None:
    """Walk the YAML event stream of ``text``; :class:`StructureError` when a limit is broken.

    YAML syntax errors are raised as PyYAML raises them (the caller reports those). Counts, for
    each anchor, the nodes it stands for and how deep it goes, so an alias adds what it expands
    to: the whole document's expanded size and depth are known without building it.
    """
    written = 0
    expanded = 0
    # One frame per open collection: [expanded nodes inside, deepest expanded height inside,
    # anchor or None].
    frames: list[list[Any]] = []
    sizes: dict[str, tuple[int, int]] = {}
    open_anchors: set[str] = set()
    parser = loader(text)
    next_event = parser.get_event
    try:
        while True:
            event = next_event()
            kind = type(event)
            if kind is yaml.StreamEndEvent:
                break
            if kind in _OPEN:
                written += 1
                if len(frames) >= MAX_DEPTH:
                    raise StructureError(
                        f"nested deeper than {MAX_DEPTH} levels (holo-tune's limit)",
                        event.start_mark.line,
                    )
                anchor = event.anchor
                if anchor is not None:
                    open_anchors.add(anchor)
                frames.append([0, 0, anchor])
                continue
            if kind is yaml.ScalarEvent:  # the most frequent event first
                written += 1
                size, height = 1, 0
                if event.anchor is not None:
                    sizes[event.anchor] = (1, 0)
            elif kind in _CLOSE:
                count, height, anchor = frames.pop()
                size, height = count + 1, height + 1
                if anchor is not None:
                    open_anchors.discard(anchor)
                    sizes[anchor] = (size, height)
            elif kind is yaml.AliasEvent:
                if event.anchor in open_anchors:
                    raise StructureError(
                        f"the alias *{event.anchor} refers to a node that contains it "
                        "(a recursive structure)",
                        event.start_mark.line,
                    )
                size, height = sizes.get(event.anchor, (1, 0))
                if len(frames) + height > MAX_DEPTH:
                    raise StructureError(
                        f"the alias *{event.anchor} nests the document deeper than "
                        f"{MAX_DEPTH} levels (holo-tune's limit)",
                        event.start_mark.line,
                    )
            else:
                continue
            expanded += size
            if expanded > MAX_ALIAS_NODES and expanded > ALIAS_RATIO * written:
                allowed = max(MAX_ALIAS_NODES, ALIAS_RATIO * written)
                raise StructureError(
                    f"aliases expand the document past {allowed:,} values (an alias bomb?); "
                    f"holo-tune's limit is {ALIAS_RATIO}x the written size",
                    event.start_mark.line,
                )
            if frames:
                frame = frames[-1]
                frame[0] += size
                if height > frame[1]:
                    frame[1] = height
    except yaml.MarkedYAMLError as err:
        # libyaml 0.2.6 (PyYAML 6.0.4) stops at its own depth (1,000 flow levels) while scanning
        # ahead, before the events reach ours: the same limit, said the same way.
        if "maximum nesting depth" not in str(err.problem):
            raise
        mark = err.problem_mark or err.context_mark
        raise StructureError(
            f"nested deeper than {MAX_DEPTH} levels (holo-tune's limit)",
            mark.line if mark is not None else None,
        ) from None
    finally:
        parser.dispose()


def json_loads(
    text: str | bytes, *, error: type[InputError], file: str | Path, line: int | None = None
) -> Any:
    """``json.loads`` with every failure as one line: syntax, too deep, an over-long integer."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        where = line if line is not None else err.lineno
        column = f" (column {err.colno})"
        raise error(f"not JSON: {err.msg}{column}", file=file, line=where) from None
    except RecursionError:
        raise error(
            f"nested deeper than {MAX_DEPTH} levels (holo-tune's limit)", file=file, line=line
        ) from None
    except ValueError as err:  # int() refuses over-long integers (CVE-2020-10735)
        cause = "digits" if "digits" in str(err) else str(err)
        if cause == "digits":
            cause = (
                f"a number has more than {MAX_INT_DIGITS} digits (Python's limit for an integer)"
            )
        raise error(cause, file=file, line=line) from None
    if json_depth(data) > MAX_DEPTH:
        raise error(
            f"nested deeper than {MAX_DEPTH} levels (holo-tune's limit)", file=file, line=line
        )
    return data


def json_depth(data: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``data`` nests (a scalar: 0), walked without recursion; stops past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest
