"""Tool tokens: the OpenAI cookbook's published totals, and our rules for nested schemas."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from workbench.catalog.models import Catalog
from workbench.tokens import token_table
from workbench.tokens.count import count_functions
from workbench.tokens.encodings import get_encoding
from workbench.tokens.formats import (
    GPT_4,
    GPT_4O,
    FunctionDef,
    ToolFormat,
    as_function,
    type_text,
)

# The example of the cookbook "How to count tokens with tiktoken", section on tool calls.
WEATHER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "The city and state, e.g. San Francisco, CA",
                    },
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]
WEATHER_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful assistant that can answer to questions about the weather.",
    },
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]
# The cookbook's messages-only example (its section on chat completions).
JARGON_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on "
        "opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client "
        "deliverable.",
    },
]


def message_tokens(messages: list[dict[str, str]], encoding_name: str) -> int:
    """The cookbook's message count: 3 per message, 1 per name, 3 to prime the reply."""
    encoding = get_encoding(encoding_name)
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(encoding.encode(value))
            if key == "name":
                total += 1
    return total


# Published in the cookbook: prompt tokens reported by the API and by its functions.
@pytest.mark.parametrize(
    ("model", "messages_only", "with_tools"),
    [
        ("gpt-3.5-turbo", 129, 105),
        ("gpt-4", 129, 105),
        ("gpt-4o", 124, 101),
        ("gpt-4o-mini", 124, 101),
    ],
)
def test_cookbook_published_totals(model: str, messages_only: int, with_tools: int) -> None:
    table = token_table(Catalog(tools=[], servers=[]), "openai", model)
    assert table.exact is True
    assert message_tokens(JARGON_MESSAGES, table.encoding) == messages_only
    tool_tokens = table.count_definitions(WEATHER_TOOLS)
    assert message_tokens(WEATHER_MESSAGES, table.encoding) + tool_tokens == with_tools


def n(text: str, encoding: str = "o200k_base") -> int:
    return len(get_encoding(encoding).encode(text))


def cost(parameters: Mapping[str, Any], fmt: ToolFormat = GPT_4O, description: str = "D") -> int:
    """One function's count (func_end excluded) under the gpt-4o constants."""
    function = FunctionDef("f", description, parameters)
    return int(count_functions([function], get_encoding("o200k_base"), fmt)[0])


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


BASE = 7 + n("f:D")  # func_init + the function line


def test_function_line_and_trailing_period() -> None:
    assert cost({}) == BASE
    assert cost({"type": "object", "properties": {}}) == BASE
    assert cost({}, description="D.") == BASE  # one trailing period dropped
    assert cost({}, description="D..") == 7 + n("f:D.")  # only one
    assert cost({}, fmt=GPT_4) == 10 + n("f:D")


def test_flat_property_and_enum_follow_the_cookbook() -> None:
    flat = obj(q={"type": "string", "description": "The query."})
    assert cost(flat) == BASE + 3 + 3 + n("q:string:The query")
    with_enum = obj(u={"type": "string", "description": "Unit", "enum": ["a", "bb"]})
    assert cost(with_enum) == BASE + 3 + 3 + n("u:string:Unit") - 3 + (3 + n("a")) + (3 + n("bb"))


def test_required_does_not_change_the_count() -> None:
    schema = obj(q={"type": "string", "description": "Q"})
    assert cost({**schema, "required": ["q"]}) == cost(schema)


def test_nested_object_properties_cost_like_top_level_keys() -> None:
    address = {
        "type": "object",
        "description": "Where",
        "properties": {
            "city": {"type": "string", "description": "City name."},
            "zip": {"type": "string", "description": "Postal code"},
        },
    }
    expected = (
        BASE
        + 3  # prop_init (top level)
        + 3
        + n("address:object:Where")
        + 3  # prop_init (nested)
        + 3
        + n("city:string:City name")
        + 3
        + n("zip:string:Postal code")
    )
    assert cost(obj(address=address)) == expected


def test_deeper_nesting_adds_up_level_by_level() -> None:
    inner = {"type": "object", "description": "I", "properties": {"x": {"type": "integer"}}}
    outer = {"type": "object", "description": "O", "properties": {"inner": inner}}
    one_level = cost(obj(inner=inner))
    two_levels = cost(obj(outer=outer))
    assert two_levels == one_level + 3 + 3 + n("outer:object:O")


def test_array_items_count_their_type_and_their_own_properties() -> None:
    tags = {"type": "array", "description": "Tags", "items": {"type": "string"}}
    assert cost(obj(tags=tags)) == BASE + 3 + 3 + n("tags:array:Tags") + n("string")
    rows = {
        "type": "array",
        "description": "Rows",
        "items": {"type": "object", "properties": {"id": {"type": "integer", "description": "Id"}}},
    }
    expected = BASE + 3 + 3 + n("rows:array:Rows") + n("object") + 3 + 3 + n("id:integer:Id")
    assert cost(obj(rows=rows)) == expected
    enum_items = {"type": "array", "description": "E", "items": {"type": "string", "enum": ["x"]}}
    expected_enum = BASE + 3 + 3 + n("e:array:E") + n("string") - 3 + 3 + n("x")
    assert cost(obj(e=enum_items)) == expected_enum


def test_default_counts_its_json_text() -> None:
    schema = obj(k={"type": "integer", "description": "K", "default": 10})
    assert cost(schema) == BASE + 3 + 3 + n("k:integer:K") + n("default:10")
    text_default = obj(k={"type": "string", "description": "K", "default": "x y"})
    assert cost(text_default) == BASE + 3 + 3 + n("k:string:K") + n('default:"x y"')


def test_type_text_of_unions_and_untyped_schemas() -> None:
    assert type_text({"type": ["integer", "null"]}) == "integer | null"
    assert type_text({"anyOf": [{"type": "string"}, {"type": "null"}]}) == "string | null"
    assert type_text({"anyOf": [{"type": "string"}, {"type": "string", "format": "x"}]}) == "string"
    assert type_text({"properties": {}}) == "object"
    assert type_text({"items": {}}) == "array"
    assert type_text({}) == "any"


def test_any_of_alternatives_add_their_nested_costs() -> None:
    choice = {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}], "description": "C"}
    expected = BASE + 3 + 3 + n("c:string | null:C") - 3 + 3 + n("a")
    assert cost(obj(c=choice)) == expected


def test_odd_values_do_not_break_counting() -> None:
    odd = obj(
        a={"type": "integer", "enum": [1, 2]},  # non-string enum items: their JSON text
        b={"type": "string", "description": None},  # null description: empty
        c="not a schema",  # ignored shape: counted as an untyped property
    )
    expected = (
        BASE
        + 3
        + (3 + n("a:integer:") - 3 + 3 + n("1") + 3 + n("2"))
        + (3 + n("b:string:"))
        + (3 + n("c:any:"))
    )
    assert cost(odd) == expected


def test_pathological_depth_is_bounded() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        schema = {"type": "object", "properties": {"k": schema}}
    assert cost(schema) > BASE


def test_definition_shapes_are_equivalent() -> None:
    function = WEATHER_TOOLS[0]["function"]
    mcp = {
        "name": function["name"],
        "description": function["description"],
        "inputSchema": function["parameters"],
    }
    assert as_function(WEATHER_TOOLS[0]) == as_function(function) == as_function(mcp)
    with pytest.raises(ValueError, match="no name"):
        as_function({"description": "nameless"})


def test_counting_does_not_mutate_the_definition() -> None:
    before = copy.deepcopy(WEATHER_TOOLS)
    token_table(Catalog(tools=[], servers=[]), "openai", "gpt-4o").count_definitions(WEATHER_TOOLS)
    assert before == WEATHER_TOOLS
