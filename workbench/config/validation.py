"""Pydantic validation errors turned into one line each: ``FIELD: cause``, with the key path.

Pydantic's locations include union tags (``tools.2.mcp.request_timeout``); the model is walked
alongside the location so tags are dropped and the path is the one the user wrote:
``tools[2].request_timeout``. Messages say what was expected and what was found, in YAML terms.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from workbench.config.envsubst import PLACEHOLDER
from workbench.config.models import FIELD_ERROR, TOOL_TYPES
from workbench.config.notices import WarningKind
from workbench.config.yamltree import KeyPath


@dataclass(frozen=True)
class Problem:
    """One validation error: where (key path in the file) and what (one line)."""

    path: KeyPath
    message: str
    #: What kind of rule it is, when it becomes a loader warning (:mod:`workbench.config.notices`).
    kind: WarningKind = "other"
    #: Facts a caller can show without parsing the message (``(("command", "python"),)``).
    evidence: tuple[tuple[str, Any], ...] = ()


def format_path(path: KeyPath) -> str:
    """``("tools", 2, "request_timeout")`` -> ``tools[2].request_timeout``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def problems(model: type[BaseModel], errors: list[ErrorDetails]) -> list[Problem]:
    """Each pydantic error as a :class:`Problem` against ``model``'s input.

    When a value fits no member of a union (``str | ExpectedTool``), pydantic reports one error
    per member; the "wrong type" ones are dropped when a member that did take the value's shape
    says what is actually wrong with it.
    """
    located = [(_user_path(model, error["loc"]), error) for error in errors]
    informative = {
        union_at for (_, _, union_at), error in located if not _is_type_error(error["type"])
    }
    return [
        _problem(path, owner, error)
        for (path, owner, union_at), error in located
        if not (union_at is not None and union_at in informative and _is_type_error(error["type"]))
    ]


def _is_type_error(kind: str) -> bool:
    return kind.endswith("_type") or kind == "model_attributes_type"


def _problem(path: KeyPath, owner: Any, error: ErrorDetails) -> Problem:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == FIELD_ERROR:
        return Problem((*path, *ctx["path"]), str(ctx["message"]))
    if kind == "extra_forbidden":
        return Problem(path, _unknown_key(str(path[-1]) if path else "?", owner))
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = str(ctx.get("expected_tags", "")) or ", ".join(f"'{t}'" for t in TOOL_TYPES)
        if kind == "union_tag_invalid":
            cause = f"unknown type {_show(ctx.get('tag'))} (expected one of {tags})"
        else:
            cause = f"type is missing (one of {tags})"
        return Problem((*path, "type"), cause)
    return Problem(path, _describe(kind, error["msg"], ctx, error.get("input")))


def _user_path(
    model: type[BaseModel], loc: tuple[str | int, ...]
) -> tuple[KeyPath, Any, KeyPath | None]:
    """The location without union tags, the model owning the last key, and the last union's path."""
    path: list[str | int] = []
    tp: Any = model
    owner: Any = model
    union_at: KeyPath | None = None
    parts = list(loc)
    while parts:
        tp = _unwrap(tp)
        members = _union_members(tp)
        if members is not None:
            tag = parts.pop(0)
            tp, tagged = _member_for(members, tag)
            if not tagged:  # a smart union: pydantic reports every member's error
                union_at = tuple(path)
            continue
        part = parts.pop(0)
        path.append(part)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            owner = tp
            info = tp.model_fields.get(str(part))
            tp = info.annotation if info is not None else None
        elif typing.get_origin(tp) in (list, tuple):
            tp = (typing.get_args(tp) or (None,))[0]
        elif typing.get_origin(tp) is dict:
            tp = (typing.get_args(tp) or (None, None))[-1]
        else:
            tp = None
    if isinstance(_unwrap(tp), type) and issubclass(_unwrap(tp), BaseModel):
        owner = _unwrap(tp)
    return tuple(path), owner, union_at


def _unwrap(tp: Any) -> Any:
    """Strip ``Annotated`` and ``None`` from a type (``X | None`` -> ``X``)."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if _is_union(tp):
        members = [m for m in typing.get_args(tp) if m is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return tp


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _union_members(tp: Any) -> list[Any] | None:
    """The members of a union that pydantic tags in locations (more than one non-None member)."""
    if not _is_union(tp):
        return None
    members = [m for m in typing.get_args(tp) if m is not type(None)]
    return members if len(members) > 1 else None


def _member_for(members: list[Any], tag: str | int) -> tuple[Any, bool]:
    """The union member pydantic names ``tag``, and whether ``tag`` is a discriminator value.

    A discriminated union's tag is the member's ``type`` literal; a smart union's is the member's
    class or type name.
    """
    for member in members:
        inner = _unwrap(member)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            field = inner.model_fields.get("type")
            if field is not None and field.default == tag:
                return inner, True
        name = getattr(typing.get_origin(inner) or inner, "__name__", None)
        if name == tag:
            return inner, False
    return None, False


def _unknown_key(key: str, owner: Any) -> str:
    allowed: list[str] = []
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        allowed = list(owner.model_fields)
    cause = "unknown key"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.7)
    if close:
        cause += f" (did you mean '{close[0]}'?)"
    if allowed:
        cause += f"; allowed: {', '.join(allowed)}"
    return cause


_EXPECTED = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "list": "a list",
    "tuple": "a list",
    "dict": "a mapping",
    "model": "a mapping",
    "model_attributes": "a mapping",
}


_UNSET = re.compile("^" + re.escape(PLACEHOLDER).replace(re.escape("{name}"), "(\\w+)") + "$")


def _unset_name(value: Any) -> str | None:
    """The variable a missing ``${VAR}``'s placeholder stands for, if ``value`` is one."""
    found = _UNSET.match(value) if isinstance(value, str) else None
    return found.group(1) if found else None


def _describe(kind: str, msg: str, ctx: dict[str, Any], value: Any) -> str:
    if kind == "missing":
        return "required key is missing"
    unset = _unset_name(value)
    if unset is not None:  # the stand-in of a missing ${VAR} is no value to argue about
        return f"${{{unset}}} is not set, and this field needs a value from it"
    stem = kind.rsplit("_", 1)[0] if kind.endswith(("_type", "_parsing")) else ""
    if kind == "int_from_float":
        stem = "int"
    if stem in _EXPECTED:
        cause = f"expected {_EXPECTED[stem]}, got {_show(value)}"
        if stem == "string" and isinstance(value, int | float | bool):
            cause += " (quote it to make it a string)"
        return cause
    bounds = {
        "greater_than_equal": (">=", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("<=", "le"),
        "less_than": ("<", "lt"),
    }
    if kind in bounds:
        op, key = bounds[kind]
        return f"must be {op} {ctx.get(key)}, got {_show(value)}"
    if kind in ("literal_error", "enum"):
        return f"must be {ctx.get('expected')}, got {_show(value)}"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')} (letters, digits, underscores), got {_show(value)}"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} entries allowed, got {ctx.get('actual_length')}"
    if kind in ("value_error", "assertion_error"):
        return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"{msg[:1].lower()}{msg[1:]}, got {_show(value)}"


def _show(value: Any) -> str:
    """A value as the user wrote it in YAML (short)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return repr(text)
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__
