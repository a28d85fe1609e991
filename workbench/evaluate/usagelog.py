"""serve's usage log (``holo-tune serve --usage-log FILE``): its records, and cases learned from it.

The log is JSON Lines, one record per ``search_tools`` answer and per tool call (docs/serve.md,
"The usage log"). :func:`search_record` and :func:`call_record` build them (serve writes them);
:func:`read_logs` reads them back from the files a user hands ``holo-tune cases from-log``
(rotated files included, in any order: each log's rotated files are read oldest first, and
the records put in time order), checking every field:
a bad line is one :class:`~workbench.errors.InputError` naming its file, line and field.

:func:`learn` turns the records into labelled cases: a tool called after a search that returned
it labels that search's query, the search being the latest of the same client session that
returned the tool, else (no session known on one side) the latest within ``window`` seconds
before the call. The same query searched again (whitespace collapsed) is one case with a
``count``; its expected tools are every tool that labelled it, the most called first. What could
not be attributed is counted in :class:`Learned` for one summary. :func:`usage_counts` gives the
calls per tool that ran (ok or error), the usage file of a warm runtime (``--usage``).
"""

from __future__ import annotations

import math
import os
import stat
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from workbench.catalog.models import Catalog
from workbench.errors import InputError
from workbench.limits import json_loads

#: The format's version, ``"v"`` of every record (a reader refuses a newer one).
VERSION = 1
SEARCH = "search"
CALL = "call"
#: A call's outcome: the tool answered, answered with an error result (``isError``), or serve
#: refused the call (unknown tool, arguments that break the schema, server down, snapshot).
OUTCOMES = ("ok", "error", "refused")
#: Seconds a call may follow a search it is attributed to when no client session pairs them.
DEFAULT_WINDOW = 60.0
#: The longest line read (bytes): a record is small; a query is at most 64 KiB.
MAX_LINE_BYTES = 1024 * 1024
#: The longest ``ms`` a record may say (a week: longer than any call serve waits for).
MAX_MS = 7 * 24 * 3600 * 1000


def now_text(seconds_ago: float = 0.0) -> str:
    """The time ``seconds_ago`` before now, as a record's ``time`` (UTC, microseconds: a call
    made on a search's answer within its millisecond still sorts after the search)."""
    moment = datetime.now(UTC) - timedelta(seconds=seconds_ago)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def search_record(
    *,
    time: str,
    session: str | None,
    query: str | None,
    tools: Sequence[tuple[str, float]],
    refused: bool,
    ms: float,
    select: bool = False,
    error: str | None = None,
) -> dict[str, Any]:
    """One ``search_tools`` answer: the tools returned (best first) with their scores."""
    record: dict[str, Any] = {"v": VERSION, "event": SEARCH, "time": time, "session": session}
    record["query"] = query
    record["tools"] = [{"name": name, "score": _finite(score)} for name, score in tools]
    record["refused"] = refused
    if select:
        record["select"] = True
    if error is not None:
        record["error"] = error
    record["ms"] = round(ms, 3)
    return record


def call_record(
    *,
    time: str,
    session: str | None,
    tool: str,
    upstream: str | None,
    outcome: str,
    ms: float,
    arguments: Any = None,
) -> dict[str, Any]:
    """One tool call (``arguments``: only when the writer logs them, ``--log-arguments``)."""
    record: dict[str, Any] = {"v": VERSION, "event": CALL, "time": time, "session": session}
    record.update(tool=tool, upstream=upstream, outcome=outcome, ms=round(ms, 3))
    if arguments is not None:
        record["arguments"] = arguments
    return record


def _finite(score: float) -> float:
    value = float(score)
    return round(value, 6) if math.isfinite(value) else 0.0


# --------------------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Search:
    """A search read back: when it answered, its client session, query and tools returned."""

    at: datetime
    ended: datetime
    session: str | None
    query: str | None
    tools: tuple[str, ...]
    refused: bool
    select: bool
    error: bool
    where: str


@dataclass(frozen=True, slots=True)
class Call:
    """A call read back."""

    at: datetime
    session: str | None
    tool: str
    outcome: str
    where: str


Event = Search | Call


def read_logs(paths: Iterable[str | Path]) -> list[Event]:
    """Every record of the files, in time order (a search at its end, a call at its start: a
    call made on a search's answer comes after it; records of one time keep their files'
    order). A bad line: :class:`InputError` ``FILE:LINE: FIELD: cause``."""
    events: list[Event] = []
    for path in rotation_order([Path(p) for p in paths]):
        events.extend(_read_file(path))
    events.sort(key=lambda e: e.ended if isinstance(e, Search) else e.at)
    return events


def rotation_order(paths: Sequence[Path]) -> list[Path]:
    """``paths`` with each log's rotated files oldest first (``u.jsonl.2``, ``u.jsonl.1``,
    ``u.jsonl``), the logs in the order given: records of one time keep the order written."""
    groups: dict[Path, list[tuple[int, Path]]] = {}
    for path in dict.fromkeys(paths):
        stem, dot, number = path.name.rpartition(".")
        rotated = bool(dot) and number.isdigit() and bool(stem)
        base = path.with_name(stem) if rotated else path
        groups.setdefault(base, []).append((int(number) if rotated else 0, path))
    return [path for group in groups.values() for _, path in sorted(group, reverse=True)]


def _read_file(path: Path) -> list[Event]:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", file=path) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError("is a directory, not a usage log", file=path)
    if not stat.S_ISREG(info.st_mode):
        raise InputError("not a regular file (a pipe or a device?); give a usage log", file=path)
    events: list[Event] = []
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if len(raw) > MAX_LINE_BYTES:
                    raise InputError(
                        f"line longer than {MAX_LINE_BYTES:,} bytes: not a usage log record",
                        file=path,
                        line=number,
                    )
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise InputError(
                        f"not UTF-8 text (byte {err.start})", file=path, line=number
                    ) from None
                events.append(parse_record(text, path, number))
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", file=path) from None
    return events


def parse_record(text: str, path: str | Path, line: int) -> Event:
    """One line of a usage log, every field checked (:class:`InputError` naming the field)."""
    data = json_loads(text, error=InputError, file=path, line=line)

    def bad(key: str, cause: str) -> InputError:
        return InputError(cause, file=path, line=line, field=key)

    if not isinstance(data, dict):
        raise InputError("a record must be a JSON object", file=path, line=line)
    version = data.get("v", VERSION)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise bad("v", "must be a whole number >= 1")
    if version > VERSION:
        raise bad("v", f"format {version} is newer than this holo-tune reads ({VERSION})")
    event = data.get("event")
    if event not in (SEARCH, CALL):
        raise bad("event", f"must be {SEARCH!r} or {CALL!r}")
    at = _time(data.get("time"), bad)
    session = data.get("session")
    if session is not None and not isinstance(session, str):
        raise bad("session", "must be a string or null")
    ms = data.get("ms")
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not 0 <= ms <= MAX_MS:
        raise bad("ms", f"must be a number of milliseconds from 0 to {MAX_MS:g}")
    where = f"{path}:{line}"
    if event == CALL:
        tool = data.get("tool")
        if not isinstance(tool, str) or not tool:
            raise bad("tool", "must be a non-empty string")
        upstream = data.get("upstream")
        if upstream is not None and not isinstance(upstream, str):
            raise bad("upstream", "must be a string or null")
        outcome = data.get("outcome")
        if outcome not in OUTCOMES:
            raise bad("outcome", f"must be one of {', '.join(OUTCOMES)}")
        return Call(at, session or None, tool, str(outcome), where)
    query = data.get("query")
    if query is not None and not isinstance(query, str):
        raise bad("query", "must be a string or null")
    raw_tools = data.get("tools")
    if not isinstance(raw_tools, list):
        raise bad("tools", "must be a list of {name, score}")
    names: list[str] = []
    for i, entry in enumerate(raw_tools):
        if not isinstance(entry, dict):
            raise bad(f"tools[{i}]", "must be an object {name, score}")
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise bad(f"tools[{i}].name", "must be a non-empty string")
        score = entry.get("score")
        if (
            isinstance(score, bool)
            or not isinstance(score, int | float)
            or not math.isfinite(score)
        ):
            raise bad(f"tools[{i}].score", "must be a finite number")
        names.append(name)
    flags = {}
    for key in ("refused", "select"):
        value = data.get(key, False)
        if not isinstance(value, bool):
            raise bad(key, "must be true or false")
        flags[key] = value
    error = data.get("error")
    if error is not None and not isinstance(error, str):
        raise bad("error", "must be a string")
    try:
        ended = at + timedelta(milliseconds=float(ms))
    except OverflowError:
        raise bad("time", f"out of range: {data['time'][:40]!r} plus {ms} ms") from None
    return Search(
        at=at,
        ended=ended,
        session=session or None,
        query=query,
        tools=tuple(names),
        refused=flags["refused"],
        select=flags["select"],
        error=error is not None,
        where=where,
    )


def _time(value: Any, bad: Any) -> datetime:
    if not isinstance(value, str):
        raise bad("time", "must be an ISO 8601 time with its zone, e.g. 2026-07-28T09:00:00Z")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise bad("time", f"not an ISO 8601 time: {value[:40]!r}") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise bad("time", "the time has no zone (serve writes UTC: ...Z)")
    return moment


# -------------------------------------------------------------------------------------- learning


@dataclass(frozen=True, slots=True)
class LearnedCase:
    """A query learned from the log: the tools called on its answers, the most called first,
    and how many of its searches were followed by a call of a tool they returned."""

    query: str
    expected: tuple[str, ...]
    count: int


@dataclass(slots=True)
class Learned:
    """The cases learned and what could not be attributed (for one summary)."""

    cases: list[LearnedCase] = field(default_factory=list)
    searches: int = 0
    calls: int = 0
    #: Calls no search that returned their tool came before (same session, or the window).
    unattributed_calls: Counter[str] = field(default_factory=Counter)
    #: Searches with an answer that no call of a tool they returned followed.
    unfollowed: int = 0
    #: Searches that found no tool (below the threshold) and refused or failed searches.
    refused: int = 0
    failed: int = 0
    #: ``select:`` searches (named tools, no query to learn).
    selects: int = 0
    #: Calls of a tool a ``select:`` search named last (as any search is paired: the session,
    #: else the window): the select claims them (by tool).
    after_select: Counter[str] = field(default_factory=Counter)
    #: Called tools the agent's catalog lacks (by name: how many calls).
    not_in_catalog: Counter[str] = field(default_factory=Counter)


def learn(events: Sequence[Event], catalog: Catalog, window: float = DEFAULT_WINDOW) -> Learned:
    """The cases ``events`` (time order, :func:`read_logs`) label, and what they leave out."""
    learned = Learned()
    searches: list[Search] = []
    # The indices of select: searches: they asked for their tools by name, so a call that
    # follows answers them and labels no query (not an earlier search that returned the tool).
    selected: set[int] = set()
    latest = _Latest()
    labels: dict[int, Counter[str]] = {}
    for event in events:
        if isinstance(event, Search):
            learned.searches += 1
            if event.error:
                learned.failed += 1
            elif event.select:
                learned.selects += 1
                selected.add(len(searches))  # a call of a tool it named is the select's
                latest.add(len(searches), event)
                searches.append(event)
            elif event.refused or not event.tools or not (event.query or "").strip():
                learned.refused += 1
            else:
                latest.add(len(searches), event)
                searches.append(event)
            continue
        learned.calls += 1
        if catalog.get(event.tool) is None:
            learned.not_in_catalog[event.tool] += 1
            continue
        found = latest.attributed(event, searches, window)
        if found in selected:
            learned.after_select[event.tool] += 1
            continue
        if found is None:
            learned.unattributed_calls[event.tool] += 1
            continue
        labels.setdefault(found, Counter())[event.tool] += 1
    learned.unfollowed = len(searches) - len(selected) - len(labels)
    learned.cases = _cases(searches, labels)
    return learned


@dataclass(slots=True)
class _Latest:
    """For each tool, the latest search that returned it: in each session, among the searches
    with no session, and among all (each lookup one step, however long the log)."""

    in_session: dict[tuple[str, str], int] = field(default_factory=dict)
    no_session: dict[str, int] = field(default_factory=dict)
    anywhere: dict[str, int] = field(default_factory=dict)

    def add(self, index: int, search: Search) -> None:
        for tool in search.tools:
            self.anywhere[tool] = index
            if search.session is None:
                self.no_session[tool] = index
            else:
                self.in_session[(search.session, tool)] = index

    def attributed(self, call: Call, searches: Sequence[Search], window: float) -> int | None:
        """The search ``call`` labels: the latest of its session that returned its tool, else
        the latest within ``window`` seconds before it of those whose session (or the call's)
        is unknown."""
        if call.session is not None:
            found = self.in_session.get((call.session, call.tool))
            if found is not None:
                return found
            found = self.no_session.get(call.tool)
        else:
            found = self.anywhere.get(call.tool)
        if found is None:
            return None
        try:
            since = call.at - timedelta(seconds=window)
        except OverflowError:  # a window longer than the calendar: every search is in it
            return found
        return found if searches[found].ended >= since else None


def _cases(searches: list[Search], labels: Mapping[int, Counter[str]]) -> list[LearnedCase]:
    """One case per query (whitespace collapsed), in the order first labelled."""
    tools: dict[str, Counter[str]] = {}
    counts: Counter[str] = Counter()
    written: dict[str, str] = {}
    for index in sorted(labels):
        query = searches[index].query or ""
        key = " ".join(query.split())
        written.setdefault(key, query.strip())
        tools.setdefault(key, Counter()).update(labels[index])
        counts[key] += 1
    out = []
    for key, called in tools.items():
        first = list(called)  # first-called order breaks ties
        expected = sorted(called, key=lambda name: (-called[name], first.index(name)))
        out.append(LearnedCase(written[key], tuple(expected), counts[key]))
    return out


def usage_counts(events: Iterable[Event], catalog: Catalog) -> dict[str, int]:
    """Calls per catalog tool that ran (ok or an error result; a refused call did not), the most
    called first: a warm runtime's usage file (``--usage``)."""
    counts: Counter[str] = Counter()
    for event in events:
        if not isinstance(event, Call) or event.outcome == "refused":
            continue
        if catalog.get(event.tool) is not None:
            counts[event.tool] += 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
