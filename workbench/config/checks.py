"""Rules HoloDeck enforces that a tuner can live with: they become warnings, not errors.

A tuner only needs the model, the tools and the ``tool_filtering`` block to be right. The agent's
name, its instructions, the stdio command allow-list, the 50-tool cap and the transports HoloDeck
0.6 cannot start do not change which tools a query selects, so the file still opens, and each
rule is reported with its line so the user knows the runtime will refuse or skip it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from workbench.config.models import (
    ALLOWED_COMMANDS,
    KNOWN_TOP_LEVEL,
    MAX_TEST_CASES,
    MAX_TOOLS,
    Agent,
    Instructions,
    MCPTool,
)
from workbench.config.notices import WarningKind
from workbench.config.validation import Problem, problems
from workbench.config.yamltree import Duplicate

#: OpenAI's limit on a function name (the runtime sends ``<plugin>-<function>``).
MAX_FUNCTION_NAME = 64
#: The kind of the rules whose breach makes HoloDeck refuse the file.
_REJECTS: WarningKind = "holodeck-rejects"
#: Lenient top-level fields: checked here by HoloDeck's rules, then left out of strict validation.
_OPTIONAL_TEXT = ("description", "author")


def soften(data: dict[str, Any], fallback_name: str) -> tuple[dict[str, Any], list[Problem]]:
    """The input for strict validation, with the lenient top-level fields checked apart.

    A missing or bad ``name`` becomes ``fallback_name``; a bad ``description``/``author`` or
    ``instructions`` is dropped; each with a warning.
    """
    cleaned = dict(data)
    found: list[Problem] = []
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        cause = "required key is missing" if name is None else "must be a non-empty string"
        found.append(Problem(("name",), f"{cause} (HoloDeck rejects the file)", _REJECTS))
        cleaned["name"] = fallback_name
    for key in _OPTIONAL_TEXT:
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            found.append(
                Problem((key,), "must be a non-empty string (HoloDeck rejects the file)", _REJECTS)
            )
            cleaned.pop(key)
    found.extend(_instructions(data, cleaned))
    return cleaned, found


def unknown_top_level(data: Mapping[str, Any]) -> list[Problem]:
    """Top-level keys HoloDeck's ``Agent`` does not have: it forbids them, so HoloDeck refuses
    the file (``openai``, the 0.7+ block, is read as such). A misspelled ``tool_filtering``
    would otherwise tune HoloDeck's defaults instead of the block the user wrote."""
    found = []
    for key in data:
        if key not in KNOWN_TOP_LEVEL and key != "openai":
            close = difflib.get_close_matches(key, sorted(KNOWN_TOP_LEVEL), n=1, cutoff=0.8)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            cause = f"unknown key{hint}; HoloDeck refuses a file with a key its agent schema lacks"
            found.append(Problem((key,), cause, _REJECTS))
    return found


def _instructions(data: dict[str, Any], cleaned: dict[str, Any]) -> Iterator[Problem]:
    value = data.get("instructions")
    if value is None:
        yield Problem(
            ("instructions",), "required key is missing (HoloDeck rejects the file)", _REJECTS
        )
        return
    try:
        Instructions.model_validate(value)
    except ValidationError as err:
        cleaned.pop("instructions")
        for problem in problems(Instructions, err.errors()):
            path = ("instructions", *problem.path)
            yield Problem(path, f"{problem.message} (HoloDeck rejects the file)", _REJECTS)


def runtime_rules(agent: Agent) -> list[Problem]:
    """What HoloDeck 0.6 would refuse or skip at run time in a file that validated here."""
    found: list[Problem] = []
    tools = agent.tools or []
    if len(tools) > MAX_TOOLS:
        found.append(
            Problem(
                ("tools",),
                f"{len(tools)} tools; HoloDeck allows at most {MAX_TOOLS}",
                "too-many",
                (("tools", len(tools)), ("max", MAX_TOOLS)),
            )
        )
    if len(agent.test_cases or []) > MAX_TEST_CASES:
        found.append(
            Problem(
                ("test_cases",),
                f"more than {MAX_TEST_CASES} test cases; HoloDeck refuses",
                "too-many",
                (("max", MAX_TEST_CASES),),
            )
        )
    for index, tool in enumerate(tools):
        if len(tool.name) > MAX_FUNCTION_NAME:
            found.append(
                Problem(
                    ("tools", index, "name"),
                    f"{len(tool.name):,} characters; OpenAI refuses function names longer than "
                    f"{MAX_FUNCTION_NAME}, so the runtime's requests with this tool would fail",
                    "other",
                    (("length", len(tool.name)), ("max", MAX_FUNCTION_NAME)),
                )
            )
        if isinstance(tool, MCPTool):
            found.extend(_mcp_rules(index, tool))
    return found


def _mcp_rules(index: int, tool: MCPTool) -> Iterator[Problem]:
    if tool.transport == "stdio" and tool.command not in ALLOWED_COMMANDS:
        yield Problem(
            ("tools", index, "command"),
            f"HoloDeck only starts {', '.join(ALLOWED_COMMANDS)}; it rejects "
            f"'{tool.command}' (holo-tune starts it anyway)",
            "command-rejected",
            (("command", tool.command), ("server", tool.name)),
        )
    if tool.transport != "stdio":
        yield Problem(
            ("tools", index, "transport"),
            f"HoloDeck 0.6 cannot start {tool.transport} MCP servers (its Semantic Kernel backend "
            "raises 'not yet implemented', its Claude backend skips them); "
            "holo-tune lists the tools anyway",
            "transport-unsupported",
            (("transport", tool.transport), ("server", tool.name)),
        )


def duplicate_keys(duplicates: list[Duplicate], first_line: list[int]) -> list[Problem]:
    """A key written twice: HoloDeck's loader (PyYAML ``safe_load``) keeps the last value
    silently; say so. The warning is on the last one (the value that counts).

    ``first_line[i]`` is the file line of ``duplicates[i]``'s first occurrence.
    """
    return [
        Problem(
            dup.path,
            f"appears twice (first on line {line}); HoloDeck's loader takes the last value",
            "duplicate-key",
            (("first_line", line),),
        )
        for dup, line in zip(duplicates, first_line, strict=True)
    ]
