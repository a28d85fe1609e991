"""``${VAR}`` substitution over the raw agent text, and the ``.env`` files HoloDeck reads.

HoloDeck substitutes before it parses: every ``${NAME}`` in the file's text (comments included) is
replaced by the variable's value, and a missing variable is fatal. Its CLI first loads ``.env``
files with python-dotenv's ``override=False``, so a variable already in the process environment
always wins over a ``.env`` file, and the first ``.env`` file that sets a name wins over later ones.

Substitution here is done line by line so every line of the result still knows which line of the
file it came from (a value may hold newlines); the YAML errors and key lines are reported in the
file's own line numbers.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from workbench.errors import ConfigError

#: HoloDeck's pattern (``holodeck.config.env_loader``): ``${`` NAME ``}`` and nothing else;
#: ``$VAR``, ``${VAR:-default}`` and ``$${VAR}`` are left as text.
VAR_PATTERN = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_K = TypeVar("_K")

#: What stands in for a missing variable when the caller asked for warnings, not errors.
PLACEHOLDER = "holo-tune-unset-{name}"

#: Where HoloDeck's user-level defaults live, relative to the home directory.
USER_DOTENV = Path(".holodeck") / ".env"


class UnsetVariable(ConfigError):
    """A ``${NAME}`` whose variable is not set: the file, line and column where it is used."""

    def __init__(
        self, name: str, *, file: str | Path, line: int, column: int, field: str | None = None
    ) -> None:
        super().__init__(
            f"environment variable '{name}' is not set (set it, or add {name}=... to a .env "
            "file beside the agent file)",
            file=file,
            line=line,
            field=field,
        )
        self.name = name
        self.column = column


@dataclass(frozen=True)
class Substituted:
    """Text after substitution and, for each of its lines, the file line it came from."""

    text: str
    line_map: tuple[int, ...] | None
    """``line_map[i]`` is the 1-based file line of the result's 0-based line ``i``; ``None`` when
    nothing was substituted (each line is the file's own)."""

    @functools.cached_property
    def _line_count(self) -> int:
        if self.line_map is not None:
            return len(self.line_map)
        return len(self.text.splitlines())

    def source_line(self, line0: int) -> int:
        """The file's 1-based line for the result's 0-based ``line0`` (clamped to the file)."""
        count = self._line_count
        if not count:
            return 1
        line0 = min(max(line0, 0), count - 1)
        return line0 + 1 if self.line_map is None else self.line_map[line0]

    def source_lines(self, lines0: Mapping[_K, int]) -> dict[_K, int]:
        """:meth:`source_line` of every value of ``lines0`` (by key)."""
        if self.line_map is None:
            last = self._line_count - 1
            if all(0 <= line0 <= last for line0 in lines0.values()):
                return {key: line0 + 1 for key, line0 in lines0.items()}
        return {key: self.source_line(line0) for key, line0 in lines0.items()}


def substitute(
    text: str,
    env: Mapping[str, str],
    *,
    file: str | Path,
    missing: dict[str, int] | None = None,
) -> Substituted:
    """Replace every ``${NAME}`` as HoloDeck does.

    A missing variable raises :class:`UnsetVariable` naming it and its line, unless ``missing`` is
    given: then :data:`PLACEHOLDER` stands in and the name is recorded there (name -> first line),
    for a caller that prefers a warning (listing tools needs no API key). The placeholder is a
    plain YAML string in any context, so the file still parses and a server still starts.
    """
    if "${" not in text:  # nothing to substitute: the text and its lines stay as they are
        return Substituted(text, None)
    same_lines = _substitute_in_place(text, env, file=file, missing=missing)
    if same_lines is not None:
        return same_lines
    return _substitute_by_line(text, env, file=file, missing=missing)


#: Characters ``str.splitlines`` breaks at besides ``\n`` and ``\r\n``.
_OTHER_BREAKS = re.compile(r"\r(?!\n)|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _substitute_in_place(
    text: str,
    env: Mapping[str, str],
    *,
    file: str | Path,
    missing: dict[str, int] | None,
) -> Substituted | None:
    """:func:`substitute` in one pass over the whole text, when every line stays one line: the
    file breaks lines only at ``\n`` (or ``\r\n``) and no value put in has a line break.
    None otherwise (the caller goes line by line)."""
    if _OTHER_BREAKS.search(text):
        return None
    found: dict[str, int] | None = None if missing is None else {}
    out: list[str] = []
    done = line = 0
    counted = 0  # ``line`` is the 0-based line of this offset
    for match in VAR_PATTERN.finditer(text):
        start = match.start()
        line += text.count("\n", counted, start)
        counted = start
        column = start - (text.rfind("\n", 0, start) + 1)
        value = _value(match, env=env, file=file, line=line + 1, missing=found, column=column)
        if "\n" in value or _OTHER_BREAKS.search(value):
            return None
        out.append(text[done:start])
        out.append(value)
        done = match.end()
    out.append(text[done:])
    if missing is not None and found:
        for name, first in found.items():
            missing.setdefault(name, first)
    return Substituted("".join(out), None)


def _substitute_by_line(
    text: str,
    env: Mapping[str, str],
    *,
    file: str | Path,
    missing: dict[str, int] | None,
) -> Substituted:
    """:func:`substitute` line by line, keeping which file line each result line came from."""
    out: list[str] = []
    line_map: list[int] = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        lookup = functools.partial(_value, env=env, file=file, line=number, missing=missing)
        replaced = VAR_PATTERN.sub(lookup, line)
        pieces = replaced.splitlines(keepends=True) or [replaced]
        out.extend(pieces)
        line_map.extend([number] * len(pieces))
    return Substituted("".join(out), tuple(line_map))


def _value(
    match: re.Match[str],
    *,
    env: Mapping[str, str],
    file: str | Path,
    line: int,
    missing: dict[str, int] | None,
    column: int | None = None,
) -> str:
    name = match.group(1)
    if name in env:
        return env[name]
    if missing is not None:
        missing.setdefault(name, line)
        return PLACEHOLDER.format(name=name)
    where = match.start() if column is None else column
    raise UnsetVariable(name, file=file, line=line, column=where)


def references(text: str) -> list[tuple[str, int]]:
    """Every ``${NAME}`` in ``text`` with its 1-based line, in file order."""
    found: list[tuple[str, int]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found.extend((m.group(1), number) for m in VAR_PATTERN.finditer(line))
    return found


def default_dotenv_files(agent_dir: Path, home: Path | None = None) -> list[Path]:
    """The ``.env`` files read for an agent, highest priority first.

    HoloDeck reads ``.env`` in the working directory (where one runs ``holodeck`` for an agent:
    its directory) and then ``~/.holodeck/.env``; holo-tune takes the one beside the agent file so
    the result does not depend on where it is started.
    """
    home = Path.home() if home is None else home
    return [agent_dir / ".env", home / USER_DOTENV]


def merged_environ(
    environ: Mapping[str, str], dotenv_files: Iterable[Path]
) -> tuple[dict[str, str], list[Path]]:
    """The environment the runtime would see, and the ``.env`` files that were read.

    ``override=False`` semantics: the process environment wins, then each file in turn fills only
    names still unset.
    """
    env = dict(environ)
    read: list[Path] = []
    for path in dotenv_files:
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"cannot read .env file: {err}", file=path) from None
        read.append(path)
        for key, value in parse_dotenv(text, env).items():
            env.setdefault(key, value)
    return env, read


# --- .env parsing (python-dotenv's dialect, which HoloDeck's CLI uses) -------------------------

_ASSIGN = re.compile(r"[ \t]*(?:export[ \t]+)?([^=#\s]+)[ \t]*(?:(=)([ \t]*))?")
_INTERP = re.compile(r"\$\{([^}:]+)(?::-([^}]*))?\}")
_DOUBLE_ESCAPES = re.compile(r"\\[\\'\"abfnrtv]")
_SINGLE_ESCAPES = re.compile(r"\\[\\']")


def parse_dotenv(text: str, outer: Mapping[str, str] | None = None) -> dict[str, str]:
    """``KEY=VALUE`` lines as python-dotenv reads them (what ``load_dotenv`` would set).

    Supports ``export``, quotes (both may span lines; double quotes take escapes), inline
    ``# comments`` after values, and ``${NAME}`` / ``${NAME:-default}`` expansion of every value
    (python-dotenv expands inside single quotes too), looked up in ``outer`` first
    (``override=False``), then in the names set earlier in the file. Lines it cannot read are
    skipped, as python-dotenv does.
    """
    outer = {} if outer is None else outer
    values: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        end = _line_end(text, pos)
        match = _ASSIGN.match(text, pos, end)
        stripped = text[pos:end].strip()
        if not stripped or stripped.startswith("#") or match is None or match.group(2) is None:
            pos = _next_line(text, end)
            continue
        key = match.group(1)
        if match.group(3) and text.startswith("#", match.end()):
            # ``KEY= # comment``: an empty value (``KEY=#x`` is the value "#x").
            values[key] = ""
            pos = _next_line(text, end)
            continue
        value, expand, pos = _read_value(text, match.end())
        if value is None:
            continue
        if expand:
            value = _expand(value, outer, values)
        values[key] = value
    return values


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def _next_line(text: str, end: int) -> int:
    return end + 1 if end < len(text) else end


def _read_value(text: str, pos: int) -> tuple[str | None, bool, int]:
    """The value starting at ``pos``, whether to expand it, and where the next line starts."""
    quote = text[pos : pos + 1]
    if quote in ("'", '"'):
        body = re.compile(r"((?:\\.|[^\\" + quote + r"])*)" + quote, re.S).match(text, pos + 1)
        if body is None:
            return None, False, _next_line(text, _line_end(text, pos))
        rest_end = _line_end(text, body.end())
        rest = text[body.end() : rest_end].strip()
        if rest and not rest.startswith("#"):
            return None, False, _next_line(text, rest_end)
        raw = body.group(1)
        pattern = _DOUBLE_ESCAPES if quote == '"' else _SINGLE_ESCAPES
        value = pattern.sub(lambda m: codecs.decode(m.group(0), "unicode-escape"), raw)
        return value, True, _next_line(text, rest_end)
    end = _line_end(text, pos)
    raw = re.split(r"[ \t]+#", text[pos:end], maxsplit=1)[0].strip()
    return raw, True, _next_line(text, end)


def _expand(value: str, outer: Mapping[str, str], inner: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = outer.get(name, inner.get(name))
        return (default or "") if found is None else found

    return _INTERP.sub(one, value)
