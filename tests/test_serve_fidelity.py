"""Fidelity: ``search_tools`` answers with exactly what ``holo-tune search --runtime serve --json``
returns, in its order, on every data set (served from its snapshot with ``--catalog``).

The serving side is built as the command builds it (``served_from_args`` and
``snapshot_index`` from the parsed command line) and reached through FastMCP's in-memory client;
the expected side is the ``search`` command's own functions on a workspace of its own. One run
goes through the real command over stdio.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from serve_client import DATASETS, Expected, sample_queries, search_names, serve_stdio, text_of

from workbench.cli import parse_args
from workbench.commands.serve import served_from_args, snapshot_index
from workbench.serve.calls import Router
from workbench.serve.server import build_server

SETS = sorted(p.name for p in DATASETS.iterdir() if (p / "agent.yaml").is_file())
#: Queries per data set (spread over its cases): enough to cross every kind of case.
PER_SET = 25
#: The YAML's block as it is, and one far from HoloDeck's defaults.
SETTINGS = {
    "yaml": [],
    "flags": ["--method", "hybrid", "--top-k", "8", "--threshold", "0.1", "--top-n-used", "2"],
}


def served_names(dataset: Path, flags: list[str], queries: list[str]) -> list[list[str]]:
    agent_file, catalog = str(dataset / "agent.yaml"), str(dataset / "catalog.json")
    args = parse_args(["serve", agent_file, "--catalog", catalog, "--embedder", "none", *flags])
    index = snapshot_index(args, served_from_args(args))
    server = build_server(index, Router(index, None))

    async def ask() -> list[list[str]]:
        async with Client(server) as client:
            session = client.session
            return [await search_names(session, query) for query in queries]

    return anyio.run(ask)


def test_the_data_sets_are_there() -> None:
    assert SETS == ["azure_mcp", "bfcl", "livemcpbench", "metatool", "stackone"]


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("name", SETS)
def test_search_tools_is_the_search_commands_selection(name: str, setting: str) -> None:
    dataset = DATASETS / name
    flags = SETTINGS[setting]
    queries = sample_queries(dataset, PER_SET)
    expected = Expected(
        dataset / "agent.yaml", "--catalog", str(dataset / "catalog.json"), "--embedder", "none"
    )
    expected_with_flags = Expected(
        dataset / "agent.yaml",
        "--catalog",
        str(dataset / "catalog.json"),
        "--embedder",
        "none",
        *flags,
    )
    found = served_names(dataset, flags, queries)
    assert found == [expected_with_flags(q) for q in queries]
    assert any(found), "no query found a tool: the comparison would prove nothing"
    if flags:  # the flags change the answer: the setting really reaches the search
        assert found != [expected(q) for q in queries]


def test_the_real_command_over_stdio_answers_the_same(tmp_path: Path) -> None:
    dataset = DATASETS / "bfcl"
    queries = sample_queries(dataset, 8)
    flags = ["--top-k", "6", "--always-include", "calculate_triangle_area"]
    expected = Expected(
        dataset / "agent.yaml",
        "--catalog",
        str(dataset / "catalog.json"),
        "--embedder",
        "none",
        *flags,
    )
    args = [str(dataset / "agent.yaml"), "--catalog", str(dataset / "catalog.json")]
    pins = tmp_path / "pins.txt"  # a long list travels as a file (one name a line)
    pins.write_text("# pinned\nmath.gcd\n")
    args += ["--embedder", "none", *flags, "--pin", "math.factorial", "--pin-file", str(pins)]

    async def ask() -> tuple[list[str], list[list[str]], str]:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio(args, errlog) as session:
                listing = [tool.name for tool in (await session.list_tools()).tools]
                found = [await search_names(session, q) for q in queries]
                call = await session.call_tool(
                    "call_tool", {"name": "bfcl-math.factorial", "arguments": {"number": 5}}
                )
                assert call.is_error
                return listing, found, text_of(call)

    listing, found, refusal = anyio.run(ask)
    # --always-include (an older .mcp.json's) pins, after --pin and before --pin-file
    pinned = ["bfcl-math.factorial", "bfcl-calculate_triangle_area", "bfcl-math.gcd"]
    assert listing == [*pinned, "search_tools", "call_tool"]
    assert found == [expected(q) for q in queries]
    assert all(len(names) == 6 for names in found)
    assert refusal.startswith("served from a snapshot: calls need the live servers")
