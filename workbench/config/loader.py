"""Load a HoloDeck agent.yaml as HoloDeck 0.6 does, keeping what a tuner and a write-back need.

The steps are HoloDeck's (``holodeck.config.loader.ConfigLoader.load_agent_yaml``): read the text,
substitute ``${VAR}`` (process environment first, then ``.env`` files), parse the YAML, validate.
On top of that every key keeps its line, so each error is one line ``FILE:LINE: FIELD: cause``,
and the exact bytes are kept (with their digest) for the write-back to refuse a changed file.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from workbench.config import checks
from workbench.config.envsubst import (
    PLACEHOLDER,
    Substituted,
    default_dotenv_files,
    merged_environ,
    substitute,
)
from workbench.config.filtering import ToolFiltering
from workbench.config.models import Agent, MCPTool, TestCase, Tool
from workbench.config.validation import Problem, format_path, problems
from workbench.config.yamltree import KeyPath, YamlSyntaxError, YamlTree, parse
from workbench.errors import ConfigError

Generation = Literal["0.4-0.6", "0.7+"]
GENERATION_0_6: Generation = "0.4-0.6"
GENERATION_0_7: Generation = "0.7+"


@dataclass
class AgentConfig:
    """One loaded agent file: its bytes, its parsed data, its validated model and its lines."""

    path: Path
    text: str
    """The file as read, before substitution, line ends kept."""
    raw: bytes
    """The exact bytes (the write-back edits these and refuses if the file changed)."""
    digest: str
    """sha256 hex digest of :attr:`raw`."""
    data: dict[str, Any]
    """The parsed document, after substitution; keys the schema does not model are here too."""
    agent: Agent
    filtering: ToolFiltering | None
    """The ``tool_filtering`` block as the file holds it (``None`` when absent)."""
    generation: Generation
    """``"0.7+"`` when the file has an ``openai:`` block (a HoloDeck 0.7+ config), else 0.4-0.6."""
    warnings: list[str] = field(default_factory=list)
    """Rules HoloDeck enforces that a tuner can live with, each ``FILE:LINE: FIELD: cause``."""
    env: dict[str, str] = field(default_factory=dict)
    """The environment the runtime would run with: the process's, then the ``.env`` files'."""
    env_files: list[Path] = field(default_factory=list)
    """The ``.env`` files that were read, highest priority first."""
    lines: dict[KeyPath, int] = field(default_factory=dict, repr=False)
    """1-based file line of every key and list item, by key path."""

    def line_of(self, *keys: str | int) -> int | None:
        """The file line of a key or list item (``line_of("tools", 2, "url")``), None if absent."""
        return self.lines.get(tuple(keys))

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def tools(self) -> list[Tool]:
        """Every tool entry, in config order."""
        return list(self.agent.tools or [])

    def mcp_tools(self) -> list[MCPTool]:
        """The MCP entries, in config order (each is one plugin named after the entry)."""
        return [tool for tool in self.tools if isinstance(tool, MCPTool)]

    @property
    def test_cases(self) -> list[TestCase]:
        return list(self.agent.test_cases or [])

    def tool_index(self, name: str) -> int | None:
        """The position of the tool entry called ``name`` in ``tools`` (for :meth:`line_of`)."""
        for index, tool in enumerate(self.tools):
            if tool.name == name:
                return index
        return None


def load_agent(
    path: str | Path,
    *,
    environ: Mapping[str, str] | None = None,
    dotenv_files: Sequence[Path] | None = None,
    missing_env: Literal["error", "warn"] = "error",
) -> AgentConfig:
    """Load and validate an agent file; :class:`ConfigError` (one line) if it does not load.

    ``environ`` defaults to ``os.environ``; ``dotenv_files`` to the ``.env`` beside the agent file
    and ``~/.holodeck/.env`` (filling only names the environment lacks, as HoloDeck's CLI does).
    With ``missing_env="warn"`` a missing variable becomes a placeholder and a warning instead of
    HoloDeck's error (to list tools with no API key at hand).
    """
    path = Path(path)
    raw = _read(path)
    text = _decode(raw, path)
    env, env_read = merged_environ(
        os.environ if environ is None else environ,
        default_dotenv_files(path.parent) if dotenv_files is None else dotenv_files,
    )
    missing: dict[str, int] | None = {} if missing_env == "warn" else None
    try:
        subst = substitute(text, env, file=path, missing=missing)
    except ConfigError as err:
        raise _with_field(err, text) from None
    tree = _parse(subst, path)
    data = _mapping(tree, path)
    lines = {key: subst.source_line(line0) for key, line0 in tree.lines0.items()}
    where = _Where(path, lines)

    cleaned, soft = checks.soften(data, fallback_name=path.stem)
    try:
        agent = Agent.model_validate(cleaned)
    except ValidationError as err:
        raise where.error(problems(Agent, err.errors())) from None

    found = list(soft)
    found += checks.duplicate_keys(
        tree.duplicates, [subst.source_line(d.first_line0) for d in tree.duplicates]
    )
    found += checks.runtime_rules(agent, data)
    warnings = [where.line(problem) for problem in sorted(found, key=where.sort_key)]
    warnings += [
        f"{path}:{line}: environment variable '{name}' is not set; "
        f"'{PLACEHOLDER.format(name=name)}' stands in (HoloDeck would refuse the file)"
        for name, line in (missing or {}).items()
    ]
    warnings += [
        f"{cfg}: HoloDeck merges this project config (providers, mcp_servers, vectorstores) "
        "into the agent; holo-tune reads the agent file only"
        for cfg in checks.project_config_files(path.parent)
    ]
    return AgentConfig(
        path=path,
        text=text,
        raw=raw,
        digest=hashlib.sha256(raw).hexdigest(),
        data=data,
        agent=agent,
        filtering=agent.tool_filtering,
        generation=GENERATION_0_7 if "openai" in data else GENERATION_0_6,
        warnings=warnings,
        env=env,
        env_files=env_read,
        lines=lines,
    )


@dataclass(frozen=True)
class _Where:
    """Turns a :class:`Problem` (a key path) into ``FILE:LINE: FIELD: cause``."""

    path: Path
    lines: dict[KeyPath, int]

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


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError("no such file", file=path) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not an agent file", file=path) from None
    except OSError as err:
        raise ConfigError(f"cannot read: {err.strerror or err}", file=path) from None


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"not UTF-8 text (byte 0x{raw[err.start]:02x}); HoloDeck reads agent files as UTF-8",
            file=path,
            line=line,
        ) from None


def _parse(subst: Substituted, path: Path) -> YamlTree:
    try:
        return parse(subst.text)
    except YamlSyntaxError as err:
        line = subst.source_line(err.line0) if err.line0 is not None else None
        cause = err.cause + _tab_hint(subst.text, err.line0)
        raise ConfigError(f"invalid YAML: {cause}", file=path, line=line) from None


def _tab_hint(text: str, line0: int | None) -> str:
    """YAML refuses tabs in indentation with a cryptic cause; name the likely culprit."""
    lines = text.splitlines()
    if line0 is not None and 0 <= line0 < len(lines) and "\t" in lines[line0]:
        return " (a tab? YAML indents with spaces)"
    return ""


def _mapping(tree: YamlTree, path: Path) -> dict[str, Any]:
    if tree.data is None:
        return {}
    if not isinstance(tree.data, dict):
        kind = "a list" if isinstance(tree.data, list) else f"a {type(tree.data).__name__}"
        raise ConfigError(f"an agent file is a mapping of keys, not {kind}", file=path, line=1)
    return tree.data


def _with_field(err: ConfigError, text: str) -> ConfigError:
    """A missing-variable error, with the key it sits under when the raw text parses."""
    if err.line is None:
        return err
    try:
        tree = parse(text)
    except YamlSyntaxError:
        return err
    on_line = [key for key, line0 in tree.lines0.items() if line0 + 1 == err.line and key]
    if not on_line:
        return err
    deepest = max(on_line, key=len)
    return ConfigError(err.message, file=err.file, line=err.line, field=format_path(deepest))
