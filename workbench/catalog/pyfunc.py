"""A function tool's parameters, read from its source with ``ast`` (user code is never run).

HoloDeck imports the file and Semantic Kernel reads ``inspect.signature`` of the function; the
names (and an ``Annotated[T, "description"]`` description, which SK keeps and the filter indexes
as ``name: description``) are all the catalog needs, and the syntax tree has them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.limits import read_text

#: JSON Schema types of the annotations Semantic Kernel maps (others: no ``type``).
_JSON_TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "List": "array",
    "tuple": "array",
    "dict": "object",
    "Dict": "object",
}


@dataclass(frozen=True, slots=True)
class PyParam:
    name: str
    description: str | None
    schema: dict[str, Any]
    required: bool

    @property
    def search_text(self) -> str:
        """How HoloDeck's index lists the parameter: ``name`` or ``name: description``."""
        return f"{self.name}: {self.description}" if self.description else self.name


class FunctionNotFound(LookupError):
    """The file parses but has no top-level function of that name."""


def _annotation_parts(node: ast.expr | None) -> tuple[str | None, str | None]:
    """(type name, Annotated description) of an annotation node, as far as it is plain."""
    if node is None:
        return None, None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None, None
    if isinstance(node, ast.Subscript):
        base = _dotted(node.value)
        if base is not None and base.split(".")[-1] == "Annotated":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            type_name, _ = _annotation_parts(elts[0])
            texts = [e.value for e in elts[1:] if isinstance(e, ast.Constant)]
            desc = next((t for t in texts if isinstance(t, str)), None)
            return type_name, desc
        return base, None
    return _dotted(node), None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _param(arg: ast.arg, has_default: bool) -> PyParam:
    type_name, description = _annotation_parts(arg.annotation)
    json_type = _JSON_TYPES.get((type_name or "").split(".")[-1])
    schema: dict[str, Any] = {"type": json_type} if json_type else {}
    if description:
        schema["description"] = description
    return PyParam(arg.arg, description, schema, required=not has_default)


def function_params(source: str, function: str) -> list[PyParam]:
    """The parameters of top-level ``def function`` in ``source``, in signature order.

    ``*args``/``**kwargs`` and a leading ``self``/``cls`` are left out: Semantic Kernel builds no
    schema property for them. Raises SyntaxError or FunctionNotFound.
    """
    tree = ast.parse(source)
    node = next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function
        ),
        None,
    )
    if node is None:
        raise FunctionNotFound(function)
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    params = [_param(a, i >= first_default) for i, a in enumerate(positional)]
    params += [
        _param(a, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    return params


def read_function_params(path: Path, function: str) -> list[PyParam]:
    """``function_params`` of a file.

    Raises OSError, UnicodeDecodeError, SyntaxError or FunctionNotFound.
    """
    return function_params(read_text(path), function)
