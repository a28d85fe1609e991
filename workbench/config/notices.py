"""The loader's warnings, each a one-line string with a structured kind.

A :class:`ConfigWarning` *is* its line (``FILE:LINE: FIELD: cause``), so printing it or comparing
it with a string works as before; ``kind`` and ``refused`` let a caller classify it without
parsing the text: ``holo-tune check`` makes every warning HoloDeck would refuse the file for an
error, while ``tools``, ``eval`` and the rest go on with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

WarningKind = Literal[
    "holodeck-rejects",
    "too-many",
    "command-rejected",
    "transport-unsupported",
    "duplicate-key",
    "unset-variable",
    "global-server",
    "yaml-reader",
    "other",
]

#: Kinds for which HoloDeck refuses to load or start the agent (``check`` reports them as errors).
REFUSED_KINDS: frozenset[WarningKind] = frozenset(
    {"holodeck-rejects", "too-many", "command-rejected", "unset-variable", "yaml-reader"}
)


class ConfigWarning(str):
    """One loader warning: the line itself, plus its kind, place and evidence."""

    kind: WarningKind
    refused: bool
    file: str | None
    line: int | None
    field: str | None
    evidence: dict[str, Any]

    def __new__(
        cls,
        text: str,
        *,
        kind: WarningKind = "other",
        refused: bool | None = None,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> ConfigWarning:
        self = super().__new__(cls, text)
        self.kind = kind
        self.refused = kind in REFUSED_KINDS if refused is None else refused
        self.file = file
        self.line = line
        self.field = field
        self.evidence = dict(evidence or {})
        return self

    def where(self) -> dict[str, Any]:
        """``{"file": ..., "line": ..., "field": ...}`` with the known parts."""
        found = {"file": self.file, "line": self.line, "field": self.field}
        return {key: value for key, value in found.items() if value is not None}


def for_servers_only(warning: str, data: Any) -> bool:
    """Whether ``warning`` is an unset ``${VAR}`` that only the agent's MCP entries use (its
    placeholder stands nowhere else in ``data``, the loaded agent): a server's key or argument,
    which nothing reads when no server is started (``--catalog``)."""
    if getattr(warning, "kind", None) != "unset-variable":
        return False
    from workbench.config.envsubst import PLACEHOLDER

    name = getattr(warning, "evidence", {}).get("variable")
    if not isinstance(name, str) or not isinstance(data, Mapping):
        return False
    placeholder = PLACEHOLDER.format(name=name)
    tools = data.get("tools")
    places = 0
    todo: list[tuple[Any, bool]] = [(value, False) for key, value in data.items() if key != "tools"]
    if isinstance(tools, list):
        for entry in tools:
            is_server = isinstance(entry, Mapping) and entry.get("type") == "mcp"
            todo.append((entry, is_server))
    while todo:  # iterative: a deep document is no recursion
        value, in_server = todo.pop()
        if isinstance(value, str):
            if placeholder in value:
                if not in_server:
                    return False
                places += 1
        elif isinstance(value, Mapping):
            todo += [(key, in_server) for key in value if isinstance(key, str)]
            todo += [(item, in_server) for item in value.values()]
        elif isinstance(value, list):
            todo += [(item, in_server) for item in value]
    return places > 0


def warnings_to_say(warnings: Sequence[str], data: Any, *, servers_start: bool) -> list[str]:
    """The loader's ``warnings`` a command or the dashboard says: all of them, but when no
    server is started (``--catalog``) none about a variable only the servers read
    (:func:`for_servers_only`)."""
    if servers_start:
        return list(warnings)
    return [w for w in warnings if not for_servers_only(w, data)]
