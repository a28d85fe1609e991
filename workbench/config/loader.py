"""Load a HoloDeck agent.yaml as HoloDeck 0.6 does, keeping what a tuner and a write-back need.

The steps are HoloDeck's (``holodeck.config.loader.ConfigLoader.load_agent_yaml``): read the text,
substitute ``${VAR}`` (process environment first, then ``.env`` files), parse the YAML, merge the
user and project ``config.yaml``, read ``test_cases_file``, validate. On top of that every key
keeps its line, so each error is one line ``FILE:LINE: FIELD: cause`` naming the file it is in,
and the exact bytes are kept (with their digest) for the write-back to refuse a changed file.
``tests/test_config_oracle.py`` runs HoloDeck 0.6.40's own loader on the same files.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from workbench.config import checks, globalcfg
from workbench.config.casesfile import KEY, CasesFile, read_cases_file
from workbench.config.envsubst import PLACEHOLDER, default_dotenv_files, merged_environ
from workbench.config.filtering import ToolFiltering
from workbench.config.models import KNOWN_TOP_LEVEL, Agent, MCPTool, TestCase, Tool
from workbench.config.notices import ConfigWarning
from workbench.config.source import Unset, YamlSource, read_source
from workbench.config.validation import Problem, problems
from workbench.config.yamltree import KeyPath
from workbench.errors import ConfigError
from workbench.limits import no_gc

Generation = Literal["0.4-0.6", "0.7+"]
GENERATION_0_6: Generation = "0.4-0.6"
GENERATION_0_7: Generation = "0.7+"


@dataclass
class AgentConfig:
    """One loaded agent file: its bytes, its parsed data, its validated model and its lines."""

    path: Path
    text: str = field(repr=False)
    """The file as read, before substitution, line ends kept."""
    raw: bytes = field(repr=False)
    """The exact bytes (the write-back edits these and refuses if the file changed)."""
    digest: str
    """sha256 hex digest of :attr:`raw`."""
    data: dict[str, Any] = field(repr=False)
    """The parsed document, after substitution (secrets included: never print it whole); keys
    the schema does not model are here too. Global configs and ``test_cases_file`` are not."""
    agent: Agent = field(repr=False)
    filtering: ToolFiltering | None
    """The ``tool_filtering`` block as the file holds it (``None`` when absent)."""
    generation: Generation
    """``"0.7+"`` when the file has an ``openai:`` block (a HoloDeck 0.7+ config), else 0.4-0.6."""
    warnings: list[ConfigWarning] = field(default_factory=list)
    """Rules HoloDeck enforces that a tuner can live with, each ``FILE:LINE: FIELD: cause`` (a
    string with a ``kind``; ``refused`` ones are those HoloDeck would refuse the file for)."""
    env: dict[str, str] = field(default_factory=dict, repr=False)
    """The environment ``${VAR}`` resolves against: the process's, then the ``.env`` files' (as
    HoloDeck's CLI loads them into its own). HoloDeck's MCP factory substitutes an entry's ``env``
    values against it again; a stdio server itself gets only the mcp client's small default
    environment plus that ``env``."""
    env_files: list[Path] = field(default_factory=list)
    """The ``.env`` files that were read, highest priority first."""
    lines: dict[KeyPath, int] = field(default_factory=dict, repr=False)
    """1-based file line of every key and list item, by key path."""
    cases_file: CasesFile | None = None
    """The file ``test_cases_file`` names, when the agent has one (its cases are ``test_cases``)."""
    global_configs: list[Path] = field(default_factory=list)
    """The user/project ``config.yaml`` files merged in (``agent`` has them, ``data`` does not)."""

    def line_of(self, *keys: str | int) -> int | None:
        """The file line of a key or list item (``line_of("tools", 2, "url")``), None if absent."""
        return self.lines.get(tuple(keys))

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def tools(self) -> list[Tool]:
        """Every tool entry, in config order (global MCP servers after the agent's own)."""
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
    global_configs: Sequence[Path] | None = None,
) -> AgentConfig:
    """Load and validate an agent file; :class:`ConfigError` (one line) if it does not load.

    ``environ`` defaults to ``os.environ``; ``dotenv_files`` to the ``.env`` beside the agent file
    and ``~/.holodeck/.env`` (filling only names the environment lacks, as HoloDeck's CLI does).
    With ``missing_env="warn"`` a missing variable becomes a placeholder and a warning instead of
    HoloDeck's error (to list tools with no API key at hand). ``global_configs`` defaults to the
    user and project ``config.yaml`` HoloDeck merges in (see :mod:`workbench.config.globalcfg`).
    """
    with no_gc():  # the tree, the data and the models of a large file are built at once
        return _load(Path(path), environ, dotenv_files, missing_env, global_configs)


def _load(
    path: Path,
    environ: Mapping[str, str] | None,
    dotenv_files: Sequence[Path] | None,
    missing_env: Literal["error", "warn"],
    global_configs: Sequence[Path] | None,
) -> AgentConfig:
    env, env_read = merged_environ(
        os.environ if environ is None else environ,
        default_dotenv_files(path.parent) if dotenv_files is None else dotenv_files,
    )
    unset: list[Unset] | None = [] if missing_env == "warn" else None
    source = read_source(path, env, unset)
    data = _mapping(source)

    cleaned, soft = checks.soften(data, fallback_name=path.stem)
    files = globalcfg.config_files(path.parent) if global_configs is None else global_configs
    merged = globalcfg.load_global(list(files), env, unset)
    added: list[str] = []
    if merged is not None:
        cleaned, added = globalcfg.merge_into(cleaned, merged)
    cases_file = read_cases_file(data, source.where, env, unset)
    if cases_file is not None:
        cleaned.pop(KEY)
        cleaned["test_cases"] = cases_file.cases
    unknown = checks.unknown_top_level(data)
    try:
        agent = Agent.model_validate(cleaned)
    except ValidationError as err:
        found = [_misspelled(p, data) for p in problems(Agent, err.errors())]
        named = {p.path for p in found}
        raise source.where.error([*found, *(p for p in unknown if p.path not in named)]) from None
    if unknown:
        raise source.where.error(unknown)

    own, global_rules = _split_global(checks.runtime_rules(agent), agent, added)
    found = [
        *soft,
        *checks.duplicate_keys(source.tree.duplicates, source.duplicate_lines()),
        *own,
    ]
    warnings = [source.where.warning(p) for p in sorted(found, key=source.where.sort_key)]
    read_by_holodeck = [source.reader_warning(), cases_file.reader_warning if cases_file else None]
    warnings += [warning for warning in read_by_holodeck if warning is not None]
    warnings += [_unset_warning(u) for u in unset or []]
    if merged is not None:
        warnings += globalcfg.merge_notes(merged, added)
        warnings += [merged.problem_line(name, problem) for name, problem in global_rules]
    return AgentConfig(
        path=path,
        text=source.text,
        raw=source.raw,
        digest=hashlib.sha256(source.raw).hexdigest(),
        data=data,
        agent=agent,
        filtering=agent.tool_filtering,
        generation=GENERATION_0_7 if "openai" in data else GENERATION_0_6,
        warnings=warnings,
        env=env,
        env_files=env_read,
        lines=source.lines,
        cases_file=cases_file,
        global_configs=merged.files if merged is not None else [],
    )


def _split_global(
    found: list[Problem], agent: Agent, added: list[str]
) -> tuple[list[Problem], list[tuple[str, Problem]]]:
    """Problems of the agent's own entries, and those of global MCP servers (by server name).

    A global server's problem is reported against its config file: ``mcp_servers[i].command``.
    """
    tools = agent.tools or []
    first_global = len(tools) - len(added)
    own: list[Problem] = []
    global_rules: list[tuple[str, Problem]] = []
    for problem in found:
        path = problem.path
        if path[:1] == ("tools",) and len(path) > 1 and isinstance(path[1], int):
            index = path[1]
            if index >= first_global:
                name = tools[index].name
                global_rules.append((name, Problem(path[2:], problem.message)))
                continue
        own.append(problem)
    return own, global_rules


def _misspelled(problem: Problem, data: Mapping[str, Any]) -> Problem:
    """A missing top-level key said at the unknown key of the file that looks like it (``modle``
    for ``model``): the agent model keeps unknown keys, so nothing else would name it."""
    if len(problem.path) != 1 or problem.message != "required key is missing":
        return problem
    unknown = [str(key) for key in data if key not in KNOWN_TOP_LEVEL]
    key = str(problem.path[0])
    close = difflib.get_close_matches(key, unknown, n=1, cutoff=0.7)
    if not close:
        return problem
    return dataclasses.replace(
        problem, path=(close[0],), message=f"is this {key}, misspelled? {key} is required"
    )


def _unset_warning(unset: Unset) -> ConfigWarning:
    return ConfigWarning(
        f"{unset.file}:{unset.line}: environment variable '{unset.name}' is not set; "
        f"'{PLACEHOLDER.format(name=unset.name)}' stands in (HoloDeck would refuse the file)",
        kind="unset-variable",
        file=str(unset.file),
        line=unset.line,
        evidence={"variable": unset.name},
    )


def _mapping(source: YamlSource) -> dict[str, Any]:
    """The document as a mapping with string keys, as HoloDeck's ``Agent(**data)`` needs it."""
    data = source.data
    if data is None:
        lines = source.text.splitlines()
        if all(not line.strip() or line.lstrip().startswith("#") for line in lines):
            raise ConfigError(
                "the file is empty (an agent needs at least model and instructions)",
                file=source.path,
            )
        return {}
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a {type(data).__name__}"
        raise ConfigError(
            f"an agent file is a mapping of keys, not {kind}", file=source.path, line=1
        )
    for key in data:
        if not isinstance(key, str):  # HoloDeck's Agent(**data) fails on it with a TypeError
            raise source.where.exception(Problem((str(key),), "a top-level key must be a string"))
    return data
