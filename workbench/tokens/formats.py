"""Tool definitions as the model is billed for them: the OpenAI cookbook's counting method.

OpenAI renders the ``tools`` of a chat request into the prompt in its own text form and bills the
tokens of that text. The OpenAI cookbook "How to count tokens with tiktoken" (section "Counting
tokens for chat completions with tool calls", ``num_tokens_for_tools``) models that text as

* per function: ``func_init`` + tokens of ``"<name>:<description>"`` (one trailing period dropped);
* when the parameters have properties: ``prop_init`` once, then per property ``prop_key`` +
  tokens of ``"<key>:<type>:<description>"`` (one trailing period dropped), and for a property
  with an ``enum``: ``enum_init`` + per item ``enum_item`` + the item's tokens;
* ``func_end`` once per request that carries at least one function.

For flat schemas this module computes exactly that. The cookbook stops at the top-level
properties; real MCP schemas nest, so this module extends it with these rules (ours, stated so the
numbers can be checked):

* object-typed property (or array items) with ``properties``: ``prop_init`` + each nested key
  costed like a top-level key, recursively;
* ``items`` of an array: the tokens of the items' type text, plus the items' own nested costs
  (their enum, properties, ...);
* ``anyOf``/``oneOf``: the type text is the alternatives' types joined by ``" | "``; each
  alternative's nested costs are added;
* type text: ``type`` as given (a list joined by ``" | "``); with no ``type``: the alternatives
  above, else ``object``/``array`` when ``properties``/``items`` say so, else ``any``;
* ``default``: the tokens of ``"default:<value as JSON>"`` (OpenAI shows defaults to the model);
* a missing description counts as empty; non-string enum items count as their JSON text;
* not counted: ``required`` (the cookbook's constants already absorb it: its example has
  ``required`` and matches the API), ``title``, ``format``, numeric and length bounds,
  ``pattern``, ``additionalProperties``, ``$schema``, ``$ref`` targets.

Counting is split in two so a whole catalog can be tokenized in one batch: :func:`function_cost`
turns a definition into a :class:`Cost` (a constant plus the strings whose tokens to add), and the
caller encodes each distinct string once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Nesting deeper than this is not followed (real schemas stay far below it).
MAX_DEPTH = 32


@dataclass(frozen=True, slots=True)
class ToolFormat:
    """The cookbook's per-model constants for function-calling framing tokens."""

    family: str
    func_init: int
    prop_init: int
    prop_key: int
    enum_init: int
    enum_item: int
    func_end: int


#: gpt-4o and gpt-4o-mini in the cookbook; used for every o200k_base model and for estimates.
GPT_4O = ToolFormat("gpt-4o", 7, 3, 3, -3, 3, 12)
#: gpt-3.5-turbo and gpt-4 in the cookbook; used for every cl100k_base OpenAI model.
GPT_4 = ToolFormat("gpt-4", 10, 3, 3, -3, 3, 12)

FORMATS: dict[str, ToolFormat] = {fmt.family: fmt for fmt in (GPT_4O, GPT_4)}


@dataclass(slots=True)
class Cost:
    """A token count before encoding: ``constant`` plus the tokens of each string in ``texts``."""

    constant: int = 0
    texts: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class FunctionDef:
    """One function as it is sent: name, description, JSON Schema of its parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]


def function_cost(function: FunctionDef, fmt: ToolFormat) -> Cost:
    """The cost of one function definition, without the per-request ``func_end``."""
    cost = Cost(fmt.func_init, [f"{function.name}:{_strip_period(function.description)}"])
    _add_properties(cost, function.parameters, fmt, depth=0)
    return cost


def as_function(definition: Mapping[str, Any]) -> FunctionDef:
    """A tool definition in any common shape as a :class:`FunctionDef`.

    Accepts the OpenAI chat form ``{"type": "function", "function": {...}}``, the flat form
    ``{"name", "description", "parameters"}`` (Responses API) and the MCP form with
    ``inputSchema``. Raises ValueError when there is no name.
    """
    inner = definition.get("function")
    body: Mapping[str, Any] = inner if isinstance(inner, Mapping) else definition
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool definition has no name: {_preview(definition)}")
    schema = body.get("parameters")
    if not isinstance(schema, Mapping):
        schema = body.get("inputSchema", body.get("input_schema"))
    return FunctionDef(
        name=name,
        description=_text(body.get("description")),
        parameters=schema if isinstance(schema, Mapping) else {},
    )


def _add_properties(cost: Cost, schema: Mapping[str, Any], fmt: ToolFormat, depth: int) -> None:
    """``prop_init`` + every property of an object schema (nothing if it has none)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties or depth > MAX_DEPTH:
        return
    cost.constant += fmt.prop_init
    for key, prop in properties.items():
        prop_schema: Mapping[str, Any] = prop if isinstance(prop, Mapping) else {}
        cost.constant += fmt.prop_key
        description = _strip_period(_text(prop_schema.get("description")))
        cost.texts.append(f"{key}:{type_text(prop_schema)}:{description}")
        _add_details(cost, prop_schema, fmt, depth + 1)


def _add_details(cost: Cost, schema: Mapping[str, Any], fmt: ToolFormat, depth: int) -> None:
    """What a property adds beyond its line: enum, default, nested properties, items, variants."""
    if depth > MAX_DEPTH:
        return
    enum = schema.get("enum")
    if isinstance(enum, list):
        cost.constant += fmt.enum_init
        for item in enum:
            cost.constant += fmt.enum_item
            cost.texts.append(_text(item) if isinstance(item, str) else _json(item))
    if "default" in schema:
        cost.texts.append(f"default:{_json(schema['default'])}")
    _add_properties(cost, schema, fmt, depth)
    items = schema.get("items")
    if isinstance(items, Mapping):
        cost.texts.append(type_text(items))
        _add_details(cost, items, fmt, depth + 1)
    for variant in _variants(schema):
        _add_details(cost, variant, fmt, depth + 1)


def type_text(schema: Mapping[str, Any]) -> str:
    """The type a property line shows (see the module docstring for the rule)."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list) and declared:
        return " | ".join(_text(t) for t in declared)
    variants = _variants(schema)
    if variants:
        return " | ".join(dict.fromkeys(type_text(v) for v in variants))
    if isinstance(schema.get("properties"), Mapping):
        return "object"
    if isinstance(schema.get("items"), Mapping):
        return "array"
    return "any"


def _variants(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            found.extend(o for o in options if isinstance(o, Mapping))
    return found


def _strip_period(text: str) -> str:
    """The cookbook drops one trailing period from descriptions."""
    return text[:-1] if text.endswith(".") else text


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _preview(value: object, limit: int = 80) -> str:
    text = _json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def all_texts(costs: Iterable[Cost]) -> list[str]:
    """The distinct strings of many costs, in first-seen order (what to encode, once each)."""
    return list(dict.fromkeys(text for cost in costs for text in cost.texts))
