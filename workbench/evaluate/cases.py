"""Labelled queries: load them, and resolve their expected tool names against a catalog.

Sources (docs/design.md, Files; docs/cases.md):

- a YAML file ``cases: [{query, expected: [...], category?}]``;
- a JSON Lines file, one ``{"query", "expected", "category"?}`` object a line;
- the agent's own HoloDeck ``test_cases`` (``input`` + ``expected_tools``; multi-turn cases give
  one case per turn that names tools, since the runtime filters on the last user message alone).

An empty ``expected: []`` (files only) says that no tool answers the query: such a case is kept
apart (:attr:`CaseSet.no_answer`), left out of every figure but the no-answer threshold of
holo-tune's own engine (:mod:`workbench.evaluate.holo_fit`).

Name matching. In a cases file an expected name is a full name ``<server>-<tool>`` or a bare tool
name, which matches that tool on any server; a name as the server lists it also matches the tool
the runtime renamed (``a/b`` is registered as ``a-b``). HoloDeck's own test runner matches
``expected_tools`` as *substrings* of the called tool's full name (``search`` passes when
``vectorstore-search`` is called), so for ``test_cases`` an entry that matches no name falls back
to every tool whose full name contains it. Each expected entry becomes a *group* of catalog
indices: the entry counts as sent when any tool of its group is sent. Names that match nothing are
reported with ``file:line``; a case left with no resolvable name is skipped (and counted), never
scored 0.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol

import yaml

from workbench.catalog.models import Catalog, Tool
from workbench.errors import CasesError
from workbench.limits import MAX_DEPTH, StructureError, check_yaml, json_loads, read_input

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True)
class Case:
    """One labelled query as written: the user message and the names of the tools it needs."""

    query: str
    expected: tuple[str, ...]
    category: str | None = None
    #: Where it was written (``file:line``), for messages.
    source: str = ""
    #: HoloDeck test_cases semantics: a name may match as a substring of a full name.
    substring: bool = False
    #: Where each expected name was written (``file:line``), parallel to ``expected`` (empty:
    #: ``source``), so that an unknown name is reported at its own line.
    expected_at: tuple[str, ...] = ()
    #: Who wrote it, from the case's ``source:`` key: ``labelled`` (by hand, in the dashboard),
    #: ``generated`` (by a model: ``holo-tune cases generate``), or None (not said: by hand).
    origin: str | None = None

    def where_expected(self, name: str) -> str:
        """``file:line`` of an expected name (the case's own when not known)."""
        if name in self.expected and len(self.expected_at) == len(self.expected):
            return self.expected_at[self.expected.index(name)]
        return self.source


@dataclass(frozen=True, slots=True)
class ResolvedCase:
    """A case whose expected names are catalog indices.

    ``groups[i]`` holds the catalog indices that satisfy ``names[i]`` (one for a full name, several
    for a bare name found on several servers or a substring), in catalog order.
    """

    case: Case
    names: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]

    @property
    def query(self) -> str:
        return self.case.query

    @property
    def category(self) -> str | None:
        return self.case.category


@dataclass(frozen=True, slots=True)
class UnknownName:
    """An expected name that matches no catalog tool, where it was written, and the catalog's
    closest name (full or bare) when one is close (:func:`close_name`)."""

    name: str
    source: str
    suggestion: str | None = None

    def line(self) -> str:
        """``FILE:LINE: unknown expected tool 'x' (did you mean 'y'?)``."""
        hint = f" (did you mean {self.suggestion!r}?)" if self.suggestion else ""
        return f"{self.source}: unknown expected tool {self.name!r}{hint}"


#: Where a run's cases come from (:mod:`workbench.evaluate.casesource` says which, in order).
Kind = Literal["flag", "agent", "beside", "dataset"]


@dataclass(frozen=True, slots=True)
class CasesSource:
    """Where a run's cases come from (``path``: the file; for ``agent``, the file holding the
    test_cases: the agent or its ``test_cases_file``)."""

    kind: Kind
    path: Path

    def describe(self) -> str:
        """One short phrase: ``research-agent.cases.yaml (beside the agent)``."""
        if self.kind == "flag":
            return f"{self.path} (--cases)"
        if self.kind == "agent":
            return f"the agent's test_cases ({self.path})"
        return f"{self.path} (beside the agent)"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": str(self.path)}


@dataclass(slots=True)
class CaseSet:
    """Resolved cases plus what could not be resolved."""

    cases: list[ResolvedCase]
    unknown: list[UnknownName] = field(default_factory=list)
    skipped: list[Case] = field(default_factory=list)
    #: Where the cases were read from (:mod:`workbench.evaluate.casesource`), when known.
    source: CasesSource | None = None
    #: Cases that expect no tool (``expected: []``): only the no-answer threshold of holo-tune's
    #: engine is fitted on them (:mod:`workbench.evaluate.holo_fit`); every other figure leaves
    #: them out.
    no_answer: list[Case] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.cases)

    def warnings(self) -> list[str]:
        """One line per problem, ready to print on stderr: each unknown name (with the closest
        catalog name), then how many cases remain (:meth:`kept_line`)."""
        lines = [u.line() for u in self.unknown]
        kept = self.kept_line()
        lines = [*lines, kept] if kept else lines
        if self.no_answer:
            n = len(self.no_answer)
            lines.append(
                f"{n} case{'s' if n != 1 else ''} expect{'s' if n == 1 else ''} no tool "
                "(expected: []): left out of hit and recall"
            )
        return lines

    def kept_line(self) -> str:
        """What remains when names are unknown: ``16 of 17 cases kept; 1 dropped: ...`` (empty
        when every name resolved)."""
        if not self.unknown and not self.skipped:
            return ""
        total = len(self.cases) + len(self.skipped)
        head = f"{len(self.cases)} of {total} cases kept"
        if not self.skipped:
            return f"{head}; the unknown names are left out of their cases' recall"
        shown = ", ".join(case.source for case in self.skipped[:3] if case.source)
        more = f" and {len(self.skipped) - 3} more" if len(self.skipped) > 3 else ""
        where = f" ({shown}{more})" if shown else ""
        return (
            f"{head}; {len(self.skipped)} dropped: none of their expected tools is in the "
            f"catalog{where}"
        )

    def subset(self, indices: Iterable[int]) -> CaseSet:
        """The cases at ``indices`` (for folds and samples); problems are kept."""
        return CaseSet(
            [self.cases[i] for i in indices],
            list(self.unknown),
            list(self.skipped),
            no_answer=list(self.no_answer),
            source=self.source,
        )


# --------------------------------------------------------------------------------------- loading


def load_cases(path: str | Path) -> list[Case]:
    """Read a cases file: YAML by suffix (``.yaml``/``.yml``), JSON Lines otherwise."""
    path = Path(path)
    raw = read_input(path, CasesError, "cases file")
    try:
        text = raw.decode("utf-8-sig")  # a BOM is not part of line 1
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise CasesError(f"not UTF-8 text (byte {err.start})", file=path, line=line) from None
    if path.suffix.lower() in YAML_SUFFIXES:
        return _cases_from_yaml(text, path)
    return _cases_from_jsonl(text, path)


def _cases_from_jsonl(text: str, path: Path) -> list[Case]:
    cases: list[Case] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        obj = json_loads(line, error=CasesError, file=path, line=number)
        cases.append(_case(obj, path, number, query_key="query", expected_key="expected"))
    if not cases:
        raise CasesError("no cases", file=path)
    return cases


def _cases_from_yaml(text: str, path: Path) -> list[Case]:
    # Imported here: serve reads its cases from JSON Lines (from-log's), and ruamel.yaml's
    # import is time a replica's start does not need.
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:  # holo-tune's limits first, on libyaml's event stream (no tree built, no recursion)
        check_yaml(text)
    except StructureError as err:
        line = err.line0 + 1 if err.line0 is not None else None
        raise CasesError(err.cause, file=path, line=line) from None
    except yaml.YAMLError:
        pass  # YAML 1.1 and 1.2 differ a little: ruamel.yaml below has the last word on syntax
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else None
        raise CasesError(f"bad YAML: {err.problem or err.context}", file=path, line=line) from None
    except YAMLError as err:
        raise CasesError(f"bad YAML: {err}".splitlines()[0], file=path) from None
    except RecursionError:
        raise CasesError(f"nested deeper than {MAX_DEPTH} levels", file=path) from None
    items = data.get("cases") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise CasesError("expected a 'cases:' list", file=path, line=1, field="cases")
    if not items:
        raise CasesError("no cases", file=path, field="cases")
    return [
        _case(
            item,
            path,
            _item_line(items, i),
            query_key="query",
            expected_key="expected",
            entry_line=partial(_yaml_entry_line, item, "expected"),
        )
        for i, item in enumerate(items)
    ]


def _yaml_entry_line(obj: Any, key: str, index: int | None) -> int | None:
    """1-based line of entry ``index`` of ``obj[key]`` (None: of ``obj[key]`` itself)."""
    try:
        if index is not None and isinstance(obj[key], list):
            return _item_line(obj[key], index)
        return int(obj.lc.value(key)[0]) + 1
    except (AttributeError, KeyError, IndexError, TypeError):
        return None


def _item_line(seq: Any, index: int) -> int | None:
    """1-based line of item ``index`` of a ruamel sequence (None when unknown)."""
    try:
        return int(seq.lc.item(index)[0]) + 1
    except (AttributeError, KeyError, IndexError, TypeError):
        return None


def _case(
    obj: Any,
    path: Path,
    line: int | None,
    *,
    query_key: str,
    expected_key: str,
    substring: bool = False,
    entry_line: Callable[[int | None], int | None] | None = None,
) -> Case:
    if not isinstance(obj, Mapping):
        raise CasesError("a case must be an object", file=path, line=line)
    query = obj.get(query_key)
    if not isinstance(query, str) or not query.strip():
        cause = "must be a non-empty string" + _misspelled(obj, query_key)
        raise CasesError(cause, file=path, line=line, field=query_key)
    raw = obj.get(expected_key)
    if raw is None and (hint := _misspelled(obj, expected_key)):
        raise CasesError(f"required key is missing{hint}", file=path, line=line, field=expected_key)
    expected, positions = _expected_names(raw, path, line, expected_key)
    category = obj.get("category")
    if category is not None and not isinstance(category, str | int):
        raise CasesError("must be a string", file=path, line=line, field="category")
    origin = None if substring else obj.get("source")
    if origin is not None and (not isinstance(origin, str) or not origin.strip()):
        raise CasesError("must be labelled or generated", file=path, line=line, field="source")
    return Case(
        query=query,
        expected=expected,
        category=None if category is None else str(category),
        source=f"{path}:{line}" if line is not None else str(path),
        substring=substring,
        origin=None if origin is None else origin.strip(),
        expected_at=tuple(
            _at(path, (entry_line(p) if entry_line is not None else None) or line)
            for p in positions
        ),
    )


def _misspelled(obj: Mapping[Any, Any], key: str) -> str:
    """When ``key`` is missing, a hint naming a key of the case that looks like it misspelled."""
    if key in obj:
        return ""
    close = difflib.get_close_matches(key, [str(k) for k in obj], n=1, cutoff=0.7)
    return f" (is '{close[0]}' it, misspelled?)" if close else ""


def _at(path: Path, line: int | None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def _expected_names(
    value: Any, path: Path, line: int | None, key: str
) -> tuple[tuple[str, ...], list[int | None]]:
    """Expected names: strings, or objects with ``name`` (HoloDeck's ExpectedTool form); and
    each name's position in the list (None for a lone string)."""
    if isinstance(value, str):
        return _expected_names([value], path, line, key)[0], [None]
    if isinstance(value, list) and not value:
        return (), []  # ``expected: []``: a query no tool answers
    if not isinstance(value, list):
        raise CasesError(
            "must be a list of tool names ([]: no tool fits)", file=path, line=line, field=key
        )
    names: list[str] = []
    positions: list[int | None] = []
    for position, entry in enumerate(value):
        name = entry.get("name") if isinstance(entry, Mapping) else entry
        if not isinstance(name, str) or not name.strip():
            raise CasesError(
                "entries must be tool names or objects with a 'name'",
                file=path,
                line=line,
                field=key,
            )
        if name.strip() not in names:
            names.append(name.strip())
            positions.append(position)
    return tuple(names), positions


class AgentCases(Protocol):
    """What reading test_cases needs of a loaded agent (``workbench.config.AgentConfig``)."""

    path: Path
    data: dict[str, Any]

    def line_of(self, *keys: str | int) -> int | None: ...


class _CasesFile(Protocol):
    """What is read of ``workbench.config.CasesFile`` (the file ``test_cases_file`` names)."""

    path: Path
    cases: list[Any]
    lines: dict[tuple[str | int, ...], int]


def _source(agent: AgentCases) -> tuple[Path, Any, Callable[..., int | None]]:
    """Where the test cases are: the agent file, or the file its ``test_cases_file`` names."""
    cases_file: _CasesFile | None = getattr(agent, "cases_file", None)
    if cases_file is None:
        return agent.path, agent.data.get("test_cases"), agent.line_of
    lines = cases_file.lines

    def line_of(*keys: str | int) -> int | None:
        return lines.get(tuple(keys))

    return cases_file.path, cases_file.cases, line_of


def cases_from_agent(agent: AgentCases) -> list[Case]:
    """The agent's own HoloDeck ``test_cases`` that name tools, as cases (substring matching).

    A test case (or turn) without ``expected_tools`` measures nothing here and is left out.
    """
    path, items, line_of = _source(agent)
    if items is None:
        return []
    if not isinstance(items, list):
        raise CasesError("must be a list", file=path, line=line_of("test_cases"))
    cases: list[Case] = []
    for i, item in enumerate(items):
        line = line_of("test_cases", i)
        if not isinstance(item, Mapping):
            raise CasesError("a test case must be a mapping", file=path, line=line)
        turns = item.get("turns")
        if isinstance(turns, list):
            for j, turn in enumerate(turns):
                if isinstance(turn, Mapping) and turn.get("expected_tools"):
                    where = line_of("test_cases", i, "turns", j) or line
                    keys: tuple[str | int, ...] = ("test_cases", i, "turns", j, "expected_tools")
                    cases.append(_test_case(turn, path, where, partial(_entry, line_of, keys)))
        elif item.get("expected_tools"):
            keys = ("test_cases", i, "expected_tools")
            cases.append(_test_case(item, path, line, partial(_entry, line_of, keys)))
    return cases


def _entry(
    line_of: Callable[..., int | None], keys: tuple[str | int, ...], index: int | None
) -> int | None:
    return line_of(*keys, index) if index is not None else line_of(*keys)


def _test_case(
    obj: Mapping[str, Any],
    path: Path,
    line: int | None,
    entry_line: Callable[[int | None], int | None] | None = None,
) -> Case:
    return _case(
        obj,
        path,
        line,
        query_key="input",
        expected_key="expected_tools",
        substring=True,
        entry_line=entry_line,
    )


# ------------------------------------------------------------------------------------ resolution


def resolve_name(name: str, catalog: Catalog, *, substring: bool = False) -> tuple[int, ...]:
    """Catalog indices that satisfy an expected name (empty when none).

    Full name first; else a bare tool name on any server; else the name as the server lists it
    (``PDF&URL`` for the runtime's ``PDF-URL``); else, with ``substring`` (HoloDeck test_cases),
    every tool whose full name contains it.
    """
    try:
        return (catalog.position(name),)
    except KeyError:
        pass
    bare = tuple(i for i, tool in enumerate(catalog.tools) if tool.name == name)
    if bare:
        return bare
    listed = tuple(i for i, tool in enumerate(catalog.tools) if _listed_as(tool, name))
    if listed or not substring:
        return listed
    return tuple(i for i, tool in enumerate(catalog.tools) if name in tool.full_name)


def _listed_as(tool: Tool, name: str) -> bool:
    """The tool's name as its server lists it (before the runtime's ``A-Za-z0-9_.-`` rewrite),
    bare or after ``<server>-``. A listed tool the runtime skipped (a name collision) is absent
    from the catalog, so it stays unknown rather than matching the tool that took its name."""
    raw = tool.definition.get("name")
    if not isinstance(raw, str) or raw == tool.name:
        return False
    return name in (raw, f"{tool.plugin}-{raw}")


#: Distinct unknown names given a "did you mean" (difflib over every catalog name is not free).
SUGGESTED = 50


def close_name(name: str, candidates: Sequence[str]) -> str | None:
    """The catalog name closest to a misspelled one (difflib, cutoff 0.75), or None."""
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    return close[0] if close else None


def resolve_cases(cases: Sequence[Case], catalog: Catalog) -> CaseSet:
    """Resolve every case against ``catalog``; unknown names (each with the closest catalog
    name, full or bare) and empty cases are reported. A case that expects no tool (``expected:
    []``) is kept apart, in :attr:`CaseSet.no_answer`."""
    resolved: list[ResolvedCase] = []
    unknown: list[UnknownName] = []
    skipped: list[Case] = []
    suggestions: dict[str, str | None] = {}
    candidates: list[str] = []

    def suggest(name: str) -> str | None:
        if name not in suggestions and len(suggestions) < SUGGESTED:
            if not candidates:
                names = [t.full_name for t in catalog.tools] + [t.name for t in catalog.tools]
                candidates.extend(dict.fromkeys(names))
            suggestions[name] = close_name(name, candidates)
        return suggestions.get(name)

    no_answer: list[Case] = []
    for case in cases:
        if not case.expected:
            no_answer.append(case)
            continue
        names: list[str] = []
        groups: list[tuple[int, ...]] = []
        for name in case.expected:
            group = resolve_name(name, catalog, substring=case.substring)
            if not group:
                unknown.append(UnknownName(name, case.where_expected(name), suggest(name)))
            elif group not in groups:
                names.append(name)
                groups.append(group)
        if groups:
            resolved.append(ResolvedCase(case, tuple(names), tuple(groups)))
        else:
            skipped.append(case)
    return CaseSet(resolved, unknown, skipped, no_answer=no_answer)
