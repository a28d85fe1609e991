"""serve answers a plain ``search_tools`` call before FastMCP's dispatch
(:func:`~workbench.serve.server.answer_searches_first`): with the very answer FastMCP's path
gives, and every other shape of call, and any failure, still FastMCP's."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fastmcp import Client
from provided import LOCAL_EXTRA
from serve_client import DATASETS, sample_queries

from workbench.cli import parse_args
from workbench.commands.serve import served_from_args, snapshot_index
from workbench.serve.calls import Router
from workbench.serve.server import ServeProvider, build_server

BFCL = DATASETS / "bfcl"


def served(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[str]]:
    """bfcl's server, and the names FastMCP's dispatch looked up (through serve's provider)."""
    argv = ["serve", str(BFCL / "agent.yaml"), "--catalog", str(BFCL / "catalog.json")]
    args = parse_args([*argv, "--embedder", "none"])
    index = snapshot_index(args, served_from_args(args))
    looked_up: list[str] = []
    get_tool = ServeProvider._get_tool

    async def counted(self: ServeProvider, name: str, version: Any = None) -> Any:
        looked_up.append(name)
        return await get_tool(self, name, version)

    monkeypatch.setattr(ServeProvider, "_get_tool", counted)
    return build_server(index, Router(index, None)), looked_up


def reply(result: Any) -> tuple[bool, list[str], Any]:
    return result.is_error, [c.text for c in result.content], result.structured_content


def test_a_plain_search_skips_fastmcps_dispatch_with_fastmcps_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each query asked plainly (answered first) and with ``_meta`` (which FastMCP answers):
    the same text and structured content; only the second reached FastMCP's tool lookup."""
    server, looked_up = served(monkeypatch)
    queries = [*sample_queries(BFCL, 12), "select:calculate_triangle_area", "zzzz qqqq"]

    async def ask() -> None:
        async with Client(server) as client:
            for query in queries:
                first = await client.call_tool_mcp("search_tools", {"query": query})
                assert looked_up == [], query
                dispatched = await client.call_tool_mcp(
                    "search_tools", {"query": query}, meta={"trace": "1"}
                )
                assert looked_up == ["search_tools"], query
                looked_up.clear()
                assert reply(first) == reply(dispatched), query
                assert not first.is_error

    anyio.run(ask)


def test_any_other_call_and_any_failure_are_fastmcps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Extra or missing arguments, a query that is not a string or is over the limit, another
    tool: FastMCP's dispatch and its words; a search that fails reaches FastMCP too, and reads
    as FastMCP words a failing tool."""
    server, looked_up = served(monkeypatch)
    odd = [
        {"query": "weather", "extra": 1},
        {},
        {"query": 42},
        {"query": "x" * (64 * 1024 + 1)},
    ]

    async def ask() -> None:
        async with Client(server) as client:
            for arguments in odd:
                result = await client.call_tool_mcp("search_tools", arguments)
                assert result.is_error, arguments
                assert looked_up == ["search_tools"], arguments
                looked_up.clear()
            other = await client.call_tool_mcp("call_tool", {"name": "search_tools"})
            assert other.is_error and looked_up == ["call_tool"]

    anyio.run(ask)

    provider = next(p for p in server.providers if isinstance(p, ServeProvider))

    searched: list[str] = []

    def broken(query: str) -> Any:
        searched.append(query)
        raise RuntimeError("the index is gone")

    monkeypatch.setattr(provider.index, "search", broken)
    looked_up.clear()

    async def fail() -> tuple[Any, Any]:
        async with Client(server) as client:
            plain = await client.call_tool_mcp("search_tools", {"query": "weather"})
            dispatched = await client.call_tool_mcp(
                "search_tools", {"query": "weather"}, meta={"trace": "1"}
            )
            return plain, dispatched

    plain, dispatched = anyio.run(fail)
    assert plain.is_error and reply(plain) == reply(dispatched)
    assert "the index is gone" in plain.content[0].text
    assert looked_up == ["search_tools", "search_tools"]
    assert searched == ["weather", "weather"]  # once a call: the failure is not searched again


@pytest.mark.parametrize(("inline", "in_place"), [(True, True), (True, False), (False, True)])
def test_over_stdio_a_search_runs_on_the_loops_thread_over_http_in_a_worker(
    inline: bool, in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``inline`` (serve over stdio): a search that is only computation on the event loop's
    thread, one that may wait (an embedding API, a model loading) in a worker thread; without it
    (HTTP) every search in a worker thread, so that concurrent searches embed side by side. The
    same answer either way."""
    import threading

    argv = ["serve", str(BFCL / "agent.yaml"), "--catalog", str(BFCL / "catalog.json")]
    args = parse_args([*argv, "--embedder", "none"])
    index = snapshot_index(args, served_from_args(args))
    ran_on: list[threading.Thread] = []
    search = index.search

    def recorded(query: str) -> Any:
        ran_on.append(threading.current_thread())
        return search(query)

    monkeypatch.setattr(index, "search", recorded)
    monkeypatch.setattr(type(index), "searches_in_place", property(lambda _: in_place))
    server = build_server(index, Router(index, None), inline=inline)

    async def ask() -> tuple[Any, threading.Thread]:
        async with Client(server) as client:
            result = await client.call_tool_mcp("search_tools", {"query": "triangle area"})
            return result, threading.current_thread()

    result, loop_thread = anyio.run(ask)
    assert not result.is_error and "calculate_triangle_area" in result.content[0].text
    assert (ran_on == [loop_thread]) is (inline and in_place)


@LOCAL_EXTRA
def test_a_search_is_in_place_without_embeddings_or_with_a_loaded_local_model() -> None:
    from workbench.search.embedders import LocalEmbedder
    from workbench.serve.index import ServeIndex

    argv = ["serve", str(BFCL / "agent.yaml"), "--catalog", str(BFCL / "catalog.json")]
    args = parse_args([*argv, "--embedder", "none"])
    assert snapshot_index(args, served_from_args(args)).searches_in_place
    index = snapshot_index(args, served_from_args(args))
    minilm = LocalEmbedder("all-MiniLM-L6-v2")
    index.engine.embedder = minilm  # as the dense signal's embedder, not loaded yet
    assert isinstance(index, ServeIndex) and not index.searches_in_place
    minilm.load()
    assert index.searches_in_place
    torch_backed = LocalEmbedder("all-MiniLM-L6-v2", backend="sentence-transformers")
    torch_backed._model = object()  # loaded, as far as the question goes
    index.engine.embedder = torch_backed
    assert not index.searches_in_place
