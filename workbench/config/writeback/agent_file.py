"""The agent file as the text writers read it (the block, 0.7's allowlists, serve's entry): its
bytes under the limits of every file users hand holo-tune, and its top-level mapping under YAML
1.2, with one line naming the file and line when it is not one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.config.yamltree import YamlSyntaxError, parse
from workbench.errors import ConfigError
from workbench.limits import read_input


def read_agent_bytes(path: Path) -> bytes:
    """The file's bytes, under the limits of every file users hand holo-tune (a regular file,
    not too large: a FIFO would block the plan)."""
    return read_input(path, ConfigError, "YAML agent file")


def agent_mapping(text: str, name: str) -> dict[str, Any]:
    """The agent's top-level mapping (YAML 1.2, as the writers' read-back checks it)."""
    try:
        data = parse(text).data
    except YamlSyntaxError as err:
        line = err.line0 + 1 if err.line0 is not None else None
        raise ConfigError(f"not valid YAML: {err.cause}", file=name, line=line) from None
    if not isinstance(data, dict):
        raise ConfigError("not an agent config: the top level is not a mapping", file=name)
    return data
