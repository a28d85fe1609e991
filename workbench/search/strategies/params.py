"""``KEY=VALUE`` text (``eval --engine NAME --param KEY=VALUE``) as an engine's parameters.

Values are read by the field's type in the engine's parameter dataclass:

* numbers and text as written; booleans as ``true``/``false`` (also ``yes``/``no``, ``1``/``0``);
* a list of names (``keep_tools``, ``base_tools``) comma-separated: ``keep_tools=a,b``;
* a per-name switch (``defer_loading``, ``server_defer``, ``tool_defer``) as
  ``name:true,other:false``;
* keywords per toolkit as ``server:word word,other:word``.

Fields that hold structures (``toolkits``) are for the library only. Out-of-range values are the
dataclass's own checks (:class:`~workbench.errors.InputError` naming the parameter).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import InputError
from workbench.search.strategies.registry import get_engine

FLAG = "--param"
_TRUE = frozenset({"true", "yes", "1", "on"})
_FALSE = frozenset({"false", "no", "0", "off"})


def parse_params(engine: str, items: Sequence[str]) -> Any:
    """The parameters of ``engine`` with each ``KEY=VALUE`` of ``items`` over its defaults."""
    cls = get_engine(engine, flag="--engine").params
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    changes: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InputError(f"{item!r}: expected KEY=VALUE", field=FLAG)
        if key not in names:
            raise InputError(
                f"{engine} has no parameter {key!r} (it has: {', '.join(names)})", field=FLAG
            )
        changes[key] = _value(hints[key], text.strip(), f"{FLAG} {key}")
    try:
        return cls(**changes)
    except InputError as err:
        if err.field in names:  # the dataclass names its field: say it as the flag is typed
            raise InputError(err.message, field=f"{FLAG} {err.field}") from None
        raise
    except (TypeError, ValueError) as err:
        raise InputError(str(err), field=FLAG) from None


def _value(hint: Any, text: str, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:  # X | None: "none"
        if text.lower() in ("none", "null", ""):
            return None
        return _value(next(a for a in args if a is not type(None)), text, where)
    if hint is bool:
        return _bool(text, where)
    if hint is int:
        return _number(int, text, where)
    if hint is float:
        return _number(float, text, where)
    if hint is str:
        return text
    if origin is typing.Literal:
        if text not in args:
            raise InputError(f"must be one of {', '.join(map(str, args))}", field=where)
        return text
    if origin is tuple and args[-1] is Ellipsis and args[0] is str:
        return tuple(part.strip() for part in text.split(",") if part.strip())
    if origin in (Mapping, dict) or (isinstance(origin, type) and issubclass(origin, Mapping)):
        return _mapping(args[1], text, where)
    raise InputError("is set in code, not on the command line", field=where)


def _mapping(value_hint: Any, text: str, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = entry.partition(":")
        if not sep or not name.strip():
            raise InputError(f"{entry!r}: expected NAME:VALUE", field=where)
        if value_hint is bool:
            out[name.strip()] = _bool(value.strip(), where)
        else:  # keywords: words separated by spaces
            out[name.strip()] = tuple(value.split())
    return out


def _bool(text: str, where: str) -> bool:
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InputError(f"{text!r} is not true or false", field=where)


def _number(kind: type[int] | type[float], text: str, where: str) -> int | float:
    try:
        return kind(text.replace("_", ""))
    except ValueError:
        name = "a whole number" if kind is int else "a number"
        raise InputError(f"{text!r} is not {name}", field=where) from None
