"""``test_cases_file:``: HoloDeck's loader reads the agent's test cases from another YAML file.

Its rules (``holodeck.config.loader._resolve_test_cases_file``): a non-empty path, relative to the
agent's directory; not together with ``test_cases``; the file holds a list of cases or a mapping
with a ``test_cases`` list (empty file: no cases); ``${VAR}`` substituted like the agent file.
Errors in the cases name the cases file and their line there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from workbench.config.models import TestCase
from workbench.config.notices import ConfigWarning
from workbench.config.source import Unset, Where, read_source
from workbench.config.validation import Problem, problems
from workbench.config.yamltree import KeyPath

KEY = "test_cases_file"


class _Cases(BaseModel):
    test_cases: list[TestCase]


@dataclass(frozen=True)
class CasesFile:
    """The referenced file, its cases (validated) and the line of every key in it."""

    path: Path
    cases: list[Any]
    lines: dict[KeyPath, int]
    """Keyed like the agent's own: ``("test_cases", i, ...)``."""
    reader_warning: ConfigWarning | None = None
    """HoloDeck's YAML reader refuses the file (see ``YamlSource.reader_warning``)."""


def read_cases_file(
    data: Mapping[str, Any],
    agent: Where,
    env: Mapping[str, str],
    unset: list[Unset] | None = None,
) -> CasesFile | None:
    """The cases ``test_cases_file`` names, or None when the agent has no such key."""
    ref = data.get(KEY)
    if ref is None:
        return None
    if data.get("test_cases") is not None:
        raise agent.exception(Problem((KEY,), "give test_cases or test_cases_file, not both"))
    if not isinstance(ref, str) or not ref.strip():
        raise agent.exception(Problem((KEY,), "must be a non-empty path"))
    path = Path(ref)
    if not path.is_absolute():
        path = agent.path.parent / path
    if not path.is_file():
        raise agent.exception(Problem((KEY,), f"no such file: {path}"))
    source = read_source(path, env, unset)
    payload = source.data
    lines = dict(source.lines)
    if isinstance(payload, dict) and "test_cases" in payload:
        payload = payload["test_cases"]
    elif isinstance(payload, list):
        lines = {("test_cases", *key): line for key, line in lines.items()}
    if payload is None:
        payload = []
    where = Where(path, lines)
    if not isinstance(payload, list):
        raise where.exception(
            Problem(("test_cases",), "a cases file holds a list of test cases (or test_cases:)")
        )
    try:
        _Cases.model_validate({"test_cases": payload})
    except ValidationError as err:
        raise where.error(problems(_Cases, err.errors())) from None
    return CasesFile(path, payload, lines, source.reader_warning())
