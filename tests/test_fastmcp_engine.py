"""The ``fastmcp`` engine on hand-made catalogs: FastMCP's BM25 worked by hand, its tokens, its
documents, the proxy's names and order, the regex variant, the bill and the CLI.
(tests/test_fastmcp_oracle.py holds it to the fastmcp package on every data set.)"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_eval_cli import _args, world  # noqa: F401  (the fixture)

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.cli import main
from workbench.errors import InputError
from workbench.search.strategies import FastMCPParams, FastMCPStrategy, build_strategy
from workbench.search.strategies.base import definitions_tokens, text_tokens
from workbench.search.strategies.fastmcp import (
    META_TOOLS,
    bm25_index,
    bm25_scores,
    proxied_tools,
    regex_matches,
    result_text,
    searchable_text,
    tokenize,
)
from workbench.search.strategies.params import parse_params
from workbench.tokens import TokenTable, token_table


def raw(
    name: str, description: str | None, props: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "inputSchema": {"type": "object", "properties": props or {}},
    }
    if description is not None:
        out["description"] = description
    return out


def listed_catalog(listings: Mapping[str, Sequence[dict[str, Any]]], *local: Tool) -> Catalog:
    """A catalog as holo-tune builds it: each server's tools sorted by name (HoloDeck's order),
    the listings kept in the servers' own order, local tools after."""
    tools = [*local]
    for server, listing in listings.items():
        for d in sorted(listing, key=lambda d: d["name"]):
            tools.append(
                Tool(
                    full_name=f"{server}-{d['name']}",
                    plugin=server,
                    name=d["name"],
                    description=d.get("description") or "",
                    parameters=tuple(d["inputSchema"]["properties"]),
                    kind="mcp",
                    definition=d,
                )
            )
    statuses = [ServerStatus(name, "stdio", "ok") for name in listings]
    if local:
        statuses.insert(0, ServerStatus("vectorstore", "local", "local"))
    return Catalog(
        tools=tools, servers=statuses, listings={k: list(v) for k, v in listings.items()}
    )


def table(cat: Catalog) -> TokenTable:
    return token_table(cat, "openai", "gpt-4o")


WEATHER = raw(
    "get_weather", "Weather for a city", {"city": {"type": "string", "description": "City name"}}
)
TIME = raw("get_time", "Current time")
MAIL = raw("send_mail", "Send an email", {"to": {"type": "string"}})


def test_bm25_worked_by_hand() -> None:
    """Documents (``a`` and the name's ``_`` drop out):
    get_weather: get weather weather for city city city name (8 tokens)
    get_time:    get time current time (4)
    send_mail:   send mail send an email to (6); mean length 6.

    "weather in the city": weather and city are in one document each, idf = ln(2.5/1.5 + 1)
    = 0.980829; get_weather scores idf*2*2.5/(2 + 1.5*(0.25 + 0.75*8/6)) = 1.265586 for weather
    (tf 2) + idf*3*2.5/(3 + 1.875) = 1.508968 for city (tf 3) = 2.774554; the others 0.
    "get": in two documents, idf = ln(1.5/2.5 + 1) = 0.470004; get_time, the shorter, scores
    idf*2.5/(1 + 1.5*(0.25 + 0.75*4/6)) = 0.552945 before get_weather's idf*2.5/2.875 = 0.408699.
    """
    texts = [searchable_text(d["name"], d) for d in (WEATHER, TIME, MAIL)]
    assert texts[0] == "get_weather Weather for a city city City name"
    index = bm25_index([tokenize(t) for t in texts])
    assert bm25_scores(index, tokenize("weather in the city")).tolist() == pytest.approx(
        [2.774554, 0.0, 0.0], abs=1e-6
    )
    assert bm25_scores(index, tokenize("get")).tolist() == pytest.approx(
        [0.408699, 0.552945, 0.0], abs=1e-6
    )
    doubled = bm25_scores(index, tokenize("get GET"))  # a repeated query token counts twice
    assert doubled.tolist() == pytest.approx([2 * 0.408699, 2 * 0.552945, 0.0], abs=1e-6)

    cat = listed_catalog({"s": [WEATHER, TIME, MAIL]})
    engine = FastMCPStrategy(cat, table(cat))
    assert engine.found_names("get") == ["get_time", "get_weather"]
    assert engine.found_names("weather in the city") == ["get_weather"]
    assert engine.found_names("nothing here") == []


def test_tokens_are_nfkc_casefolded_unicode_runs_of_two() -> None:
    text = "Straße ＡＰＩ get_weather 天气预报 a1 x é-mail v2.0"
    assert tokenize(text) == ["strasse", "api", "get", "weather", "天气预报", "a1", "mail", "v2"]


def test_document_is_name_description_then_each_property() -> None:
    props = {
        "path": {"type": "string", "description": "Where"},
        "mode": {"type": "string"},
        "n": {"description": 3},  # not text: left out
        "deep": "not a schema",
    }
    assert (
        searchable_text("fs_read", raw("read", "Read it", props))
        == "fs_read Read it path Where mode n deep"
    )
    assert searchable_text("x", raw("x", "")) == "x"
    assert searchable_text("x", {"name": "x", "inputSchema": {"type": "object"}}) == "x"


def test_ties_keep_the_proxy_listing_order_not_the_catalogs() -> None:
    """The server lists zeta before alpha; HoloDeck's catalog sorts them: FastMCP keeps the
    listing order for equal scores."""
    zeta, alpha = raw("zeta", "Counts widgets"), raw("alpha", "Counts widgets")
    cat = listed_catalog({"s": [zeta, alpha]})
    assert [t.name for t in cat.tools] == ["alpha", "zeta"]
    result = FastMCPStrategy(cat, table(cat)).run("widgets")
    assert result.scores[0] == result.scores[1] > 0
    assert result.order.tolist() == [1, 0]  # catalog indices: zeta, then alpha


def test_proxy_names_namespaced_only_with_several_servers() -> None:
    one = listed_catalog({"office": [WEATHER]})
    assert [t.name for t in proxied_tools(one)] == ["get_weather"]
    two = listed_catalog({"office": [WEATHER, TIME], "mail": [MAIL]})
    assert [t.name for t in proxied_tools(two)] == [
        "office_get_weather",
        "office_get_time",
        "mail_send_mail",
    ]
    # a server that failed to list still counts: the proxy's config has it
    failed = listed_catalog({"office": [WEATHER]})
    failed.servers.append(ServerStatus("down", "stdio", "error", error="no such command"))
    assert [t.name for t in proxied_tools(failed)] == ["office_get_weather"]
    # the name is in the document, so it moves the scores: "office" finds every office tool
    assert FastMCPStrategy(two, table(two)).found_names("office") == [
        "office_get_time",
        "office_get_weather",
    ]


def test_result_pins_bill_and_local_tools() -> None:
    """Local tools stay outside the proxy (sent, never searched); pinned tools are listed and
    never found; found tools come back as text and are called through call_tool."""
    local = Tool(
        "vectorstore-kb",
        "vectorstore",
        "kb",
        "Search the weather archive",
        ("query",),
        "vectorstore",
    )
    cat = listed_catalog({"office": [WEATHER, TIME], "mail": [MAIL]}, local)
    bill = table(cat)
    params = FastMCPParams(max_results=2, always_visible=("office-get_time",))
    engine = FastMCPStrategy(cat, bill, params)
    assert [t.name for t in engine.pinned] == ["office_get_time"]
    result = engine.run("get the weather or the time")
    weather, get_time = cat.position("office-get_weather"), cat.position("office-get_time")
    assert result.order.tolist() == [weather]  # the pinned tool is not searched
    assert result.sent == (0, get_time, weather)
    found_text = result_text([t for t in engine.proxied if t.name == "office_get_weather"])
    assert json.loads(found_text)[0]["name"] == "office_get_weather"
    meta = definitions_tokens(bill, list(META_TOOLS["bm25"])) + text_tokens(bill, found_text)
    assert result.meta_tokens == meta
    assert result.tokens == int(bill.per_tool[[0, get_time]].sum()) + meta + bill.overhead
    for setting, graded in zip(engine.grid(), engine.run_grid("weather"), strict=True):
        alone = FastMCPStrategy(cat, bill, setting).run("weather")
        assert (graded.sent, graded.tokens) == (alone.sent, alone.tokens)
        assert graded.order.tolist() == alone.order.tolist()


def test_regex_variant() -> None:
    cat = listed_catalog({"s": [WEATHER, TIME, MAIL]})
    engine = build_strategy(
        "fastmcp", cat, table(cat), FastMCPParams(variant="regex", max_results=2)
    )
    assert engine.run("GET_").order.tolist() == [1, 0]  # catalog indices, in listing order
    texts = [searchable_text(d["name"], d) for d in (WEATHER, TIME, MAIL)]
    assert regex_matches("e", texts).tolist() == [0, 1, 2]
    assert FastMCPStrategy(cat, table(cat), FastMCPParams("regex", 2)).found_names("e") == [
        "get_weather",
        "get_time",
    ]
    assert regex_matches("city name$", texts).tolist() == [0]
    for refused in ("(?<=get)_time", r"(t)\1", "(", "e" * 1001):
        assert regex_matches(refused, texts).size == 0
    assert regex_matches("e" * 1000, texts).size == 0  # long is fine; it just matches nothing


def test_params() -> None:
    assert parse_params("fastmcp", ["variant=regex", "max_results=3", "always_visible=a_b,c"]) == (
        FastMCPParams(variant="regex", max_results=3, always_visible=("a_b", "c"))
    )
    with pytest.raises(InputError, match="max_results"):
        parse_params("fastmcp", ["max_results=0"])
    with pytest.raises(InputError, match="bm25, regex"):
        parse_params("fastmcp", ["variant=tfidf"])


def test_eval_engine_fastmcp(
    world: dict[str, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    more = ("--engine", "fastmcp", "--param", "max_results=1", "--json")
    assert main(_args(world, "eval", *more)) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "fastmcp" and data["setting"]["max_results"] == 1
    assert all(len(case["selected"]) <= 1 for case in data["per_case"])
    assert np.mean([bool(case["selected"]) for case in data["per_case"]]) > 0


def test_a_search_dearer_than_every_tool_says_so_plainly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """FastMCP's search_tools answers with each found tool's list_tools JSON, outputSchema
    included: on the sample agent's brave tools that outweighs every definition at once (one
    tool is 17,300 tokens as JSON). The bill stands; the figures say "more", never a negative
    saving, and compare's row says why."""
    from workbench.commands.compare import table as compare_table
    from workbench.evaluate.compare import CompareReport, CompareRow, over_all, params_json
    from workbench.evaluate.metrics import Metrics

    huge = {
        **WEATHER,
        "outputSchema": {
            "type": "object",
            "properties": {
                f"field_{i}": {"type": "string", "description": "x " * 20} for i in range(40)
            },
        },
    }
    cat = listed_catalog({"office": [huge, TIME], "mail": [MAIL]})
    bill = table(cat)
    engine = FastMCPStrategy(cat, bill, FastMCPParams(max_results=1))
    result = engine.run("weather for a city")
    assert result.sent == (cat.position("office-get_weather"),)
    assert result.tokens > bill.all  # the found tool's JSON outweighs every definition
    metrics = Metrics(1, 1.0, 1.0, 1.0, 1.0, float(result.tokens), int(bill.all))
    assert metrics.token_reduction < 0
    more = f"{-metrics.token_reduction:.1%} more"
    assert metrics.saved_text() == more
    params = params_json(engine.params)
    row = over_all(CompareRow("fastmcp", "default", params, metrics), int(bill.all), engine)
    assert row.note is not None
    assert f"{result.tokens:,} tokens per request, {more} than all {bill.all:,}" in row.note
    assert "list_tools JSON text" in row.note
    cheap = Metrics(1, 1.0, 1.0, 1.0, 1.0, 1.0, int(bill.all))
    cheap_row = CompareRow("fastmcp", "best", params, cheap)
    assert over_all(cheap_row, int(bill.all), engine).note is None

    class Parts:
        agent = type("A", (), {"name": "office"})()
        catalog = cat

    report = CompareReport(1, int(bill.all), bill.encoding, bill.exact, [row])
    text = compare_table(report, Parts())  # type: ignore[arg-type]
    assert f"  {more}\n" in text and "-" + f"{-metrics.token_reduction:.1%}" not in text
    assert f"fastmcp default: {row.note}" in text


def test_eval_says_more_than_all_on_the_sample_agent(capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_configs"
    args = [
        "eval",
        str(sample / "research-agent.yaml"),
        "--catalog",
        str(sample / "research-agent.catalog.json"),
        "--embedder",
        "none",
        "--engine",
        "fastmcp",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "tokens 13,406 / 8,369 (60.2% more than all)" in out and "-60.2%" not in out
