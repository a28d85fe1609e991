"""The agent's cases file as a store of labels: the dashboard saves a label at once, and
``holo-tune cases generate`` adds its cases to it.

- :func:`set_expected` gives a query its expected tools: the file (``<agent stem>.cases.yaml``
  by default, :func:`workbench.evaluate.casesource.default_cases_path`) is created on the first
  label with a short header comment; a query labelled again updates its case (queries match
  after whitespace is collapsed); an empty list removes the case.
- Writes are round-trip (ruamel.yaml: comments, key order, other cases and hand edits survive;
  a JSON Lines file keeps every other line byte for byte) and atomic (a temporary file beside
  it, then a rename): a crash leaves the old file or the new one, never half of one.
- :func:`load_expected` reads the file back as ``{query: expected names}`` (fast: the C YAML
  loader), for markers in the dashboard.

No textual here: the TUI calls these functions (from a worker or directly: a write is a few
milliseconds).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError as RuamelError

from workbench.config.writeback.files import NEW_FILE_MODE, atomic_write
from workbench.errors import CasesError
from workbench.evaluate.cases import YAML_SUFFIXES
from workbench.limits import read_input

#: ``source:`` of a case labelled by hand (the dashboard) and of one a model wrote.
LABELLED = "labelled"
GENERATED = "generated"

#: The comment a new cases file starts with.
HEADER = (
    "# Labelled queries for {agent}: each case is a user message and the tools it needs.\n"
    "# holo-tune saves here what you mark in the dashboard (space on a tool) and what\n"
    "# 'holo-tune cases generate' writes; eval, tune, compare and check read it by default.\n"
    "# Edit freely: comments and hand edits are kept. Names: <server>-<tool> or a bare tool name.\n"
)


def query_key(query: str) -> str:
    """The form queries are matched in: whitespace collapsed (``"a  b "`` is ``"a b"``)."""
    return " ".join(query.split())


# ------------------------------------------------------------------------------------- reading


def load_expected(path: str | Path) -> dict[str, tuple[str, ...]]:
    """``{query_key(query): expected names}`` of every case in the file (``{}`` when the file
    does not exist). Malformed: :class:`CasesError` naming the file."""
    path = Path(path)
    text = _read_text(path)
    if text is None:
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for item in _items_fast(text, path):
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            continue
        names = _names(item.get("expected"))
        key = query_key(item["query"])
        if names and key and key not in out:
            out[key] = names
    return out


def load_sources(path: str | Path) -> dict[str, str | None]:
    """``{query_key(query): source}`` of every case in the file (None: no ``source:`` key)."""
    path = Path(path)
    text = _read_text(path)
    if text is None:
        return {}
    out: dict[str, str | None] = {}
    for item in _items_fast(text, path):
        if isinstance(item, dict) and isinstance(item.get("query"), str):
            source = item.get("source")
            out.setdefault(query_key(item["query"]), source if isinstance(source, str) else None)
    return out


def _items_fast(text: str, path: Path) -> list[Any]:
    if path.suffix.lower() not in YAML_SUFFIXES:
        rows: list[Any] = []
        for number, row in enumerate(text.splitlines(), start=1):
            if row.strip():
                try:
                    rows.append(json.loads(row))
                except json.JSONDecodeError as err:
                    raise CasesError(f"not JSON: {err.msg}", file=path, line=number) from None
        return rows
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)  # a safe loader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = mark.line + 1 if mark is not None else None
        raise CasesError("bad YAML", file=path, line=at) from None
    items: Any = data.get("cases") if isinstance(data, dict) else data
    return items if isinstance(items, list) else []


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    names: list[str] = []
    for entry in value:
        name = entry.get("name") if isinstance(entry, dict) else entry
        if isinstance(name, str) and name.strip() and name.strip() not in names:
            names.append(name.strip())
    return tuple(names)


# ------------------------------------------------------------------------------------- writing


def set_expected(
    path: str | Path,
    query: str,
    tools: Sequence[str],
    *,
    source: str = LABELLED,
    agent_name: str | None = None,
) -> tuple[str, ...]:
    """Give ``query`` the expected ``tools`` in the cases file at ``path`` and return them.

    Creates the file (with :data:`HEADER`) when it does not exist; updates the query's case when
    there is one (a ``generated`` case becomes ``labelled`` once a person labels it); an empty
    ``tools`` removes the case. Raises :class:`CasesError` if the file does not load (then it is
    left untouched) or the query is empty.
    """
    return set_many(path, [(query, tools)], source=source, agent_name=agent_name)[0]


def toggle_expected(
    path: str | Path, query: str, tool: str, *, agent_name: str | None = None
) -> tuple[str, ...]:
    """Mark ``tool`` as expected for ``query``, or unmark it if it is; the expected tools after."""
    current = list(load_expected(path).get(query_key(query), ()))
    if tool in current:
        current.remove(tool)
    else:
        current.append(tool)
    return set_expected(path, query, current, agent_name=agent_name)


def set_many(
    path: str | Path,
    cases: Iterable[tuple[str, Sequence[str]]],
    *,
    source: str = LABELLED,
    agent_name: str | None = None,
    drop_source: str | None = None,
    fields: Sequence[Mapping[str, Any]] | None = None,
) -> list[tuple[str, ...]]:
    """:func:`set_expected` for several queries in one write (one read, one rename).

    With ``drop_source``, cases marked with that source are removed first (a new run of
    ``cases generate`` replaces the cases of the last one; hand labels stay). ``fields``, one
    mapping per case, adds keys of its own to each case added (``count``: ``cases from-log``).
    """
    path = Path(path)
    wanted = [(_query(query, path), _clean(tools)) for query, tools in cases]
    extra = [dict(f) for f in fields] if fields is not None else [{} for _ in wanted]
    if len(extra) != len(wanted):
        raise ValueError("one mapping of fields per case")
    if path.suffix.lower() in YAML_SUFFIXES:
        _write_yaml(path, wanted, source, agent_name or _agent_of(path), drop_source, extra)
    else:
        _write_jsonl(path, wanted, source, drop_source, extra)
    return [tools for _, tools in wanted]


def _agent_of(path: Path) -> str:
    """``research-agent.yaml`` for ``research-agent.cases.yaml`` (the header names it)."""
    suffix = ".cases.yaml"
    if path.name.endswith(suffix) and len(path.name) > len(suffix):
        return path.name[: -len(suffix)] + ".yaml"
    return path.name


def _query(query: str, path: Path) -> str:
    if not isinstance(query, str) or not query.strip():
        raise CasesError("a case needs a non-empty query", file=path, field="query")
    return query


def _clean(tools: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for tool in tools:
        name = str(tool).strip()
        if name and name not in out:
            out.append(name)
    return tuple(out)


def _yaml() -> YAML:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096  # a long query stays on one line
    rt.indent(mapping=2, sequence=4, offset=2)
    return rt


def _write_yaml(
    path: Path,
    wanted: list[tuple[str, tuple[str, ...]]],
    source: str,
    agent_name: str,
    drop_source: str | None,
    extra: list[dict[str, Any]],
) -> None:
    rt = _yaml()
    text = _read_text(path)
    if text is None:
        text = HEADER.format(agent=agent_name) + "cases: []\n"
    try:
        data = rt.load(text) if text.strip() else None
    except RuamelError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise CasesError("bad YAML: not changed", file=path, line=line) from None
    if data is None:
        data = CommentedMap()
    if isinstance(data, CommentedMap):
        items = data.get("cases")
        if items is None:
            items = data["cases"] = CommentedSeq()
    else:
        items = data
    if not isinstance(items, list):
        raise CasesError("expected a 'cases:' list: not changed", file=path, field="cases")
    if drop_source is not None:
        for i in reversed(range(len(items))):
            item = items[i]
            if isinstance(item, dict) and item.get("source") == drop_source:
                del items[i]
    present = _keys(items)
    for (query, tools), more in zip(wanted, extra, strict=True):
        key = query_key(query)
        if key in present:
            _apply(items, query, tools, source, more)
        elif tools:  # a new query: appended, with no scan of the file's cases
            _apply([], query, tools, source, more, into=items)
            present.add(key)
    if isinstance(items, CommentedSeq) and items and items.fa.flow_style():
        items.fa.set_block_style()  # "cases: []" grows into a block list
    buffer = io.StringIO()
    rt.dump(data, buffer)
    _atomic_write(path, buffer.getvalue())


def _keys(items: Iterable[Any]) -> set[str]:
    """The query keys of the cases in ``items``."""
    return {
        query_key(item["query"])
        for item in items
        if isinstance(item, dict) and isinstance(item.get("query"), str)
    }


def _apply(
    items: list[Any],
    query: str,
    tools: tuple[str, ...],
    source: str,
    extra: Mapping[str, Any] | None = None,
    *,
    into: list[Any] | None = None,
) -> None:
    """Give ``query`` its ``tools`` among ``items`` (a new case goes to ``into``, else to
    ``items``)."""
    key = query_key(query)
    found = [
        i
        for i, item in enumerate(items)
        if isinstance(item, dict)
        and isinstance(item.get("query"), str)
        and query_key(item["query"]) == key
    ]
    for i in reversed(found[1:]):  # a query is one case
        del items[i]
    if not tools:
        if found:
            del items[found[0]]
        return
    if found:
        case = items[found[0]]
        old = case.get("expected")
        if isinstance(old, CommentedSeq):
            old[:] = list(tools)
        else:
            case["expected"] = _flow(tools)
        if case.get("source") not in (None, LABELLED):  # a person's label outranks a model's
            case["source"] = source
        return
    case = CommentedMap()
    case["query"] = query
    case["expected"] = _flow(tools)
    case["source"] = source
    case.update(extra or {})
    (items if into is None else into).append(case)


def _flow(tools: Sequence[str]) -> CommentedSeq:
    seq = CommentedSeq(list(tools))
    seq.fa.set_flow_style()
    return seq


def _write_jsonl(
    path: Path,
    wanted: list[tuple[str, tuple[str, ...]]],
    source: str,
    drop_source: str | None,
    extra: list[dict[str, Any]],
) -> None:
    text = _read_text(path, encoding="utf-8")
    lines = text.splitlines(keepends=True) if text is not None else []
    parsed: list[Any] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            parsed.append(None)
            continue
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise CasesError(f"not JSON: {err.msg}: not changed", file=path, line=number) from None
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    keep = [
        (line, obj)
        for line, obj in zip(lines, parsed, strict=True)
        if not (drop_source and isinstance(obj, dict) and obj.get("source") == drop_source)
    ]
    present = _keys(obj for _, obj in keep)
    for (query, tools), more in zip(wanted, extra, strict=True):
        key = query_key(query)
        if key not in present:  # a new query: appended, with no scan of the file's cases
            if tools:
                obj = {"query": query, "expected": list(tools), "source": source, **more}
                keep.append((json.dumps(obj, ensure_ascii=False) + "\n", obj))
                present.add(key)
            continue
        at = [
            i
            for i, (_, obj) in enumerate(keep)
            if isinstance(obj, dict)
            and isinstance(obj.get("query"), str)
            and query_key(obj["query"]) == key
        ]
        for i in reversed(at[1:]):
            del keep[i]
        if not tools:
            if at:
                del keep[at[0]]
            continue
        if at:
            obj = dict(keep[at[0]][1])
            obj["expected"] = list(tools)
            if obj.get("source") not in (None, LABELLED):
                obj["source"] = source
            keep[at[0]] = (json.dumps(obj, ensure_ascii=False) + "\n", obj)
        else:
            obj = {"query": query, "expected": list(tools), "source": source, **more}
            keep.append((json.dumps(obj, ensure_ascii=False) + "\n", obj))
    _atomic_write(path, "".join(line for line, _ in keep))


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` atomically, through a symbolic link to its target (it keeps
    its permissions; a new file gets the umask's, as every writer's:
    :mod:`workbench.config.writeback.files`). No backup: a label is saved on every keystroke."""
    path = path.resolve()  # a symbolic link stays one: the file it points to is written
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    atomic_write(path, text.encode("utf-8"), mode=mode)


def _read_text(path: Path, encoding: str = "utf-8-sig") -> str | None:
    """The cases file's text; None when there is none yet (a label starts it). Under the limits
    of every file users hand holo-tune (a regular file, not too large): a FIFO, a folder or a
    file that is not UTF-8 is a one-line CasesError."""
    if not os.path.exists(path):  # (a dangling link too: no file yet)
        return None
    raw = read_input(path, CasesError, "cases file")
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise CasesError(f"not UTF-8 text (byte {err.start})", file=path, line=line) from None
