"""One YAML file read as HoloDeck reads it (UTF-8, ``${VAR}`` substituted), with its key lines.

Shared by the agent file and the files it refers to (``test_cases_file``, the project and user
``config.yaml``), so each error names its own file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.config.envsubst import Substituted, UnsetVariable, substitute
from workbench.config.notices import ConfigWarning
from workbench.config.validation import Problem, format_path
from workbench.config.yamltree import (
    KeyPath,
    YamlLimitError,
    YamlSyntaxError,
    YamlTree,
    YamlValueError,
    parse,
    refusal_by_pure_pyyaml,
)
from workbench.errors import ConfigError
from workbench.limits import read_input


@dataclass(frozen=True)
class Where:
    """Turns a :class:`Problem` (a key path) into ``FILE:LINE: FIELD: cause``."""

    path: Path
    lines: Mapping[KeyPath, int]

    def line_for(self, key: KeyPath) -> int | None:
        """The key's line, else its nearest ancestor's (a missing key: the entry that lacks it)."""
        for end in range(len(key), -1, -1):
            line = self.lines.get(key[:end])
            if line is not None:
                return line
        return None

    def sort_key(self, problem: Problem) -> int:
        return self.line_for(problem.path) or 0

    def line(self, problem: Problem) -> str:
        return self.exception(problem).one_line()

    def warning(self, problem: Problem) -> ConfigWarning:
        """The problem as a loader warning: its line, with its kind, place and evidence."""
        err = self.exception(problem)
        return ConfigWarning(
            err.one_line(),
            kind=problem.kind,
            file=err.file,
            line=err.line,
            field=err.field,
            evidence=dict(problem.evidence),
        )

    def exception(self, problem: Problem, more: int = 0) -> ConfigError:
        message = problem.message
        if more:
            message += f" (and {more} more {'problem' if more == 1 else 'problems'})"
        return ConfigError(
            message,
            file=self.path,
            line=self.line_for(problem.path),
            field=format_path(problem.path) or None,
        )

    def error(self, found: list[Problem]) -> ConfigError:
        """The first problem in file order, saying how many more there are."""
        first = min(found, key=self.sort_key)
        return self.exception(first, more=len(found) - 1)


#: Files up to this size are also read as HoloDeck reads them (PyYAML's pure-Python loader, about
#: 1 s per MB) to find what it refuses and libyaml accepts; real agent files are a few KB.
PURE_CHECK_BYTES = 256 * 1024


@dataclass(frozen=True)
class YamlSource:
    """A file's bytes, its text, the substituted text, the parsed tree and the key lines."""

    path: Path
    raw: bytes
    text: str
    subst: Substituted
    tree: YamlTree
    lines: dict[KeyPath, int]

    @property
    def data(self) -> Any:
        return self.tree.data

    @property
    def where(self) -> Where:
        return Where(self.path, self.lines)

    def reader_warning(self) -> ConfigWarning | None:
        """A warning when HoloDeck's YAML reader (PyYAML's pure-Python loader) refuses the text
        libyaml read here; files over :data:`PURE_CHECK_BYTES` are not read a second time."""
        if len(self.subst.text) > PURE_CHECK_BYTES:
            return None
        refusal = refusal_by_pure_pyyaml(self.subst.text)
        if refusal is None:
            return None
        line = self.subst.source_line(refusal.line0) if refusal.line0 is not None else None
        fix = "; replace the tab with spaces" if "'\\t'" in refusal.cause else ""
        err = ConfigError(
            "HoloDeck's YAML reader (PyYAML's pure-Python safe_load) refuses the file, which "
            f"libyaml (holo-tune's reader) accepts: {refusal.cause}{fix}",
            file=self.path,
            line=line,
        )
        return ConfigWarning(
            err.one_line(), kind="yaml-reader", refused=True, file=err.file, line=err.line
        )

    def duplicate_lines(self) -> list[int]:
        """The file line of each duplicate key's first occurrence (``tree.duplicates`` order)."""
        return [self.subst.source_line(d.first_line0) for d in self.tree.duplicates]


@dataclass(frozen=True)
class Unset:
    """A variable that was not set, where it is first used (when missing ones are tolerated)."""

    file: Path
    name: str
    line: int


def read_source(path: Path, env: Mapping[str, str], unset: list[Unset] | None = None) -> YamlSource:
    """Read, substitute and parse ``path``; every failure is a one-line :class:`ConfigError`.

    With ``unset`` (a list to append to), a missing variable is tolerated and recorded there.
    """
    raw = _read(path)
    text = _decode(raw, path)
    missing: dict[str, int] | None = None if unset is None else {}
    try:
        subst = substitute(text, env, file=path, missing=missing)
    except UnsetVariable as err:
        raise _with_field(err, text) from None
    if unset is not None and missing:
        unset.extend(Unset(path, name, line) for name, line in missing.items())
    tree = _parse(subst, path)
    lines = subst.source_lines(tree.lines0)
    return YamlSource(path, raw, text, subst, tree, lines)


def _read(path: Path) -> bytes:
    return read_input(path, ConfigError, "YAML file")


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x}); HoloDeck reads YAML files as UTF-8",
            file=path,
            line=line,
        ) from None


def _parse(subst: Substituted, path: Path) -> YamlTree:
    try:
        return parse(subst.text)
    except YamlSyntaxError as err:
        line = subst.source_line(err.line0) if err.line0 is not None else None
        if isinstance(err, YamlLimitError):
            raise ConfigError(err.cause, file=path, line=line) from None
        if isinstance(err, YamlValueError):
            field = format_path(err.path) or None
            raise ConfigError(err.cause, file=path, line=line, field=field) from None
        cause = err.cause + _tab_hint(subst.text, err.line0)
        raise ConfigError(f"invalid YAML: {cause}", file=path, line=line) from None


def _tab_hint(text: str, line0: int | None) -> str:
    """YAML refuses tabs in indentation with a cryptic cause; name the likely culprit."""
    lines = text.splitlines()
    if line0 is not None and 0 <= line0 < len(lines) and "\t" in lines[line0]:
        return " (a tab? YAML indents with spaces)"
    return ""


def _with_field(err: UnsetVariable, text: str) -> UnsetVariable:
    """A missing-variable error, with the key it sits under when the raw text parses.

    The key is the last one written on the variable's line left of it (or the line's item).
    """
    try:
        tree = parse(text)
    except YamlSyntaxError:
        return err
    on_line = [
        (tree.columns0.get(key, 0), len(key), key)
        for key, line0 in tree.lines0.items()
        if key and line0 + 1 == err.line and tree.columns0.get(key, 0) <= err.column
    ]
    if not on_line:
        return err
    key = max(on_line)[2]
    file = err.file or ""
    return UnsetVariable(
        err.name, file=file, line=err.line or 0, column=err.column, field=format_path(key)
    )
