"""serve runs holo-tune's own engine from a settings file, and says so the same everywhere.

- the real ``holo-tune serve --settings FILE`` over stdio answers every query exactly as
  ``holo-tune search --runtime serve --settings FILE --json`` (one function behind both), with
  the research sample's catalog snapshot; the flags override the file;
- a query whose confidence is below the threshold answers "no tool fits" and no tool;
  ``select:A,B`` returns exactly those tools; "find symbol" finds ``find_symbol`` first;
- ``search --json`` lists the tools best first with each signal's share (they add up to the
  score) and the confidence; ``eval --runtime serve --settings FILE`` measures those settings;
- a bad settings file is one line naming the file, line and key, exit 2 (serve starts nothing),
  and any bytes read as settings give settings or that error, never another exception.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from json_values import VALUES
from provided import LOCAL_EXTRA
from serve_client import REPO, Expected, serve_argv, serve_env, serve_stdio, text_of

from workbench.cli import main
from workbench.errors import InputError
from workbench.search.holo.settings import HoloSettings, read_settings
from workbench.search.serving import META_TOOLS, NO_TOOL_FITS, result_text
from workbench.search.strategies.base import definitions_tokens

needs_fastmcp = pytest.mark.provided("the serve extra (fastmcp)", modules=["fastmcp"])

SAMPLE = REPO / "sample_configs"
AGENT = SAMPLE / "research-agent.yaml"
CATALOG = SAMPLE / "research-agent.catalog.json"
CASES = SAMPLE / "research-agent.cases.yaml"
SNAPSHOT = ["--catalog", str(CATALOG)]
LOCAL = "local:all-MiniLM-L6-v2"
#: No word of it is in any tool of the research agent.
NOTHING = "bake a chocolate cake for grandma"
ENV = {"BRAVE_API_KEY": "placeholder-not-a-real-key"}


def case_queries(count: int) -> list[str]:
    cases = yaml.safe_load(CASES.read_text(encoding="utf-8"))["cases"]
    step = max(1, len(cases) // count)
    return [case["query"] for case in cases[::step][:count]]


def write_settings(path: Path, report: bool = False, **values: Any) -> Path:
    """A settings file; ``report``: as a whole ``tune --json`` report holds them."""
    doc = {"runtime": {"name": "serve"}, "settings": values} if report else values
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path


async def answers(session: Any, queries: list[str]) -> list[tuple[list[str], bool]]:
    """Each query's tools in search_tools' order, and whether it said no tool fits."""
    found = []
    for query in queries:
        result = await session.call_tool("search_tools", {"query": query})
        assert not result.is_error, text_of(result)
        if text_of(result).startswith(NO_TOOL_FITS):
            assert result.structured_content == {"result": []}
            found.append(([], True))
        else:
            found.append(([tool["name"] for tool in json.loads(text_of(result))], False))
    return found


@needs_fastmcp
def test_serve_over_stdio_answers_as_search_with_the_settings_file(tmp_path: Path) -> None:
    file = write_settings(
        tmp_path / "tuned.json",
        report=True,
        top_k=3,
        threshold=0.5,
        weights={"lexical": 1.0, "name": 0.5, "server": 0.3},
        pins=["search_papers"],
    )
    flags = ["--settings", str(file), "--embedder", "none", "--top-k", "4"]  # --top-k wins
    queries = [*case_queries(8), NOTHING, "select:brave_news_search,memory-read_graph"]
    expected = Expected(AGENT, *SNAPSHOT, *flags)

    async def ask() -> tuple[list[str], list[tuple[list[str], bool]]]:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio([str(AGENT), *SNAPSHOT, *flags], errlog, **ENV) as session:
                listing = [tool.name for tool in (await session.list_tools()).tools]
                return listing, await answers(session, queries)

    listing, found = anyio.run(ask)
    assert listing == ["vectorstore-search_papers", "search_tools", "call_tool"]
    wanted = [(expected(q), bool(expected.json(q)["refused"])) for q in queries]
    assert found == wanted
    assert all(len(names) == 4 for names, refused in found[:-2] if not refused)
    assert found[-2] == ([], True)  # no tool fits
    assert found[-1] == (["brave_search-brave_news_search", "memory-read_graph"], False)


@needs_fastmcp
def test_serve_lists_what_it_bills_and_answers_compact_json(tmp_path: Path) -> None:
    """What serve really lists for its own two tools is the definitions the serve runtime bills
    (the same text, so the same tokens), and search_tools' text is :func:`result_text` of the
    tools it found: JSON with no space between items, the structured result's definitions."""
    args = [str(AGENT), *SNAPSHOT, "--embedder", "none", "--top-k", "3"]
    expected = Expected(AGENT, *SNAPSHOT, "--embedder", "none", "--top-k", "3")
    queries = [query for query in case_queries(6) if expected(query)][:3]  # each finds tools
    by_name = {tool.full_name: tool for tool in expected.workspace.catalog.tools}

    async def ask() -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio(args, errlog, **ENV) as session:
                listing = (await session.list_tools()).tools
                keys = ("name", "description", "inputSchema")
                listed = [
                    {k: v for k, v in t.model_dump(by_alias=True).items() if k in keys}
                    for t in listing
                ]
                said = []
                for query in queries:
                    result = await session.call_tool("search_tools", {"query": query})
                    said.append((text_of(result), result.structured_content))
                return listed, said

    listed, said = anyio.run(ask)
    assert len(said) == 3
    assert listed == [dict(tool) for tool in META_TOOLS]
    bill = expected.workspace.tokens
    assert definitions_tokens(bill, listed) == definitions_tokens(bill, list(META_TOOLS))
    for query, (text, structured) in zip(queries, said, strict=True):
        names = expected(query)
        assert text == result_text([by_name[name] for name in names])
        assert json.loads(text) == structured["result"]  # the same definitions
        assert text == json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
        assert '", "' not in text and '": ' not in text


@needs_fastmcp
@LOCAL_EXTRA
@pytest.mark.slow
def test_with_minilm_serve_answers_as_search(tmp_path: Path) -> None:
    """The dense signal too: the same embedder (the settings' own) in serve and in search."""
    file = write_settings(tmp_path / "s.json", embedder=LOCAL, max_tokens=3000, threshold=0.2)
    queries = [*case_queries(6), NOTHING]
    expected = Expected(AGENT, *SNAPSHOT, "--settings", str(file))
    obj = expected.json(queries[0])
    assert obj["confidence_of"] == "dense" and "dense" in obj["ranking"][0]["shares"]

    async def ask() -> list[tuple[list[str], bool]]:
        with (tmp_path / "serve.err").open("w") as errlog:
            args = [str(AGENT), *SNAPSHOT, "--settings", str(file)]
            async with serve_stdio(args, errlog, **ENV) as session:
                return await answers(session, queries)

    found = anyio.run(ask)
    assert found == [(expected(q), bool(expected.json(q)["refused"])) for q in queries]
    assert found[-1] == ([], True)
    assert any(names for names, _ in found)


def test_search_json_lists_each_signals_share_and_the_confidence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["search", str(AGENT), "papers on diffusion models", *SNAPSHOT, "--runtime", "serve"]
    assert main([*argv, "--embedder", "none", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["order"] == "ranked" and obj["refused"] is False
    assert obj["confidence_of"] == "lexical" and 0.0 < obj["confidence"] <= 1.0
    scores = [row["score"] for row in obj["ranking"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 18
    for row in obj["ranking"]:
        assert set(row["shares"]) == {"lexical", "name"}  # no embedder: no dense signal
        assert sum(row["shares"].values()) == pytest.approx(row["score"], abs=1e-5)
    # the best tools that share a word with the query, up to top_k 5
    returned = len(obj["selected"])
    assert 1 <= returned <= 5 and obj["selected"][0] == "vectorstore-search_papers"
    assert obj["selected"] == [row["tool"] for row in obj["ranking"][:returned]]


def test_no_tool_fits_below_the_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["search", str(AGENT), NOTHING, *SNAPSHOT, "--runtime", "serve", "--embedder", "none"]
    assert main([*argv, "--threshold", "0.3", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["refused"] is True and obj["selected"] == [] and obj["confidence"] == 0.0
    assert obj["answer"].startswith(f"{NO_TOOL_FITS} this query")
    assert main([*argv, "--threshold", "0.3"]) == 0
    text = capsys.readouterr().out
    assert f"\n{NO_TOOL_FITS} this query" in text and "returned: 0" in text
    assert main([*argv, "--json"]) == 0  # no threshold: no tool shares a word with it
    obj = json.loads(capsys.readouterr().out)
    assert obj["refused"] is True and "no tool shares a word with it" in obj["answer"]
    query = "search the web for transformers"
    assert main([*argv[:2], query, *argv[3:], "--threshold", "0.3", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["refused"] is False and obj["answer"] is None and len(obj["selected"]) == 5


SYMBOLS = [
    ("search_for_pattern", "Search the code base for a regular expression pattern."),
    ("get_symbols_overview", "An overview of the top-level symbols defined in a file."),
    ("find_referencing_symbols", "Find the symbols that reference the given symbol."),
    ("find_symbol", "Retrieves information on all symbols/code entities matching a name path."),
    ("rename_symbol", "Renames a symbol throughout the code base."),
    ("find_file", "Finds files matching a file mask in a directory."),
]


def code_agent(tmp_path: Path) -> tuple[Path, Path]:
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: code-agent\nmodel:\n  provider: openai\n  name: gpt-4o\n"
        "instructions:\n  inline: test\n"
        "tools:\n  - name: code\n    type: mcp\n    description: code\n"
        "    command: holo-tune-not-started\n"
    )
    schema = {"type": "object", "properties": {"name_path": {"type": "string"}}}
    listing = [{"name": n, "description": d, "inputSchema": schema} for n, d in SYMBOLS]
    snapshot = tmp_path / "catalog.json"
    snapshot.write_text(
        json.dumps({"holo_tune_catalog": 1, "servers": {"code": {"tools": listing}}})
    )
    return agent, snapshot


@needs_fastmcp
def test_find_symbol_first_and_select_exactly_over_stdio(tmp_path: Path) -> None:
    agent, snapshot = code_agent(tmp_path)
    args = [str(agent), "--catalog", str(snapshot), "--embedder", "none"]
    queries = ["find symbol", "select:rename_symbol,code-find_file,nothing_of_that_name"]

    async def ask() -> list[tuple[list[str], bool]]:
        with (tmp_path / "serve.err").open("w") as errlog:
            async with serve_stdio([*args, "--threshold", "0.9"], errlog) as session:
                return await answers(session, queries)

    found, chosen = anyio.run(ask)
    assert found[0][0] == "code-find_symbol" and not found[1]
    assert chosen == (["code-rename_symbol", "code-find_file"], False)  # even above 0.9


def test_eval_measures_the_settings_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["eval", str(AGENT), *SNAPSHOT, "--runtime", "serve", "--cases", str(CASES)]
    base += ["--embedder", "none", "--json"]
    wide = write_settings(tmp_path / "wide.json", top_k=8, pins=["read_graph"])
    narrow = write_settings(tmp_path / "narrow.json", top_k=1)
    reports = {}
    for name, file in (("wide", wide), ("narrow", narrow)):
        assert main([*base, "--settings", str(file)]) == 0
        reports[name] = json.loads(capsys.readouterr().out)
    assert reports["wide"]["engine"] == "serve" and reports["wide"]["setting"]["top_k"] == 8
    assert reports["wide"]["metrics"]["recall"] > reports["narrow"]["metrics"]["recall"]
    expected = Expected(AGENT, *SNAPSHOT, "--embedder", "none", "--settings", str(wide))
    for row in reports["wide"]["per_case"]:  # what was sent: the pins and what search returns
        sent = {"memory-read_graph", *expected(row["query"])}
        assert row["selected"] == sorted(sent), row["query"]


def test_a_bad_settings_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{\n  "settings": {\n    "top_k": 5,\n    "weights": {"dense": "high"}\n  }\n}\n'
    )
    proc = subprocess.run(
        serve_argv([str(AGENT), *SNAPSHOT, "--settings", str(bad)]),
        env=serve_env(**ENV),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"holo-tune: error: {bad}:4: weights.dense: must be a number\n"
    for argv in (
        ["search", str(AGENT), "q", "--runtime", "serve", "--settings", str(bad)],
        ["eval", str(AGENT), "--runtime", "serve", "--settings", str(bad), "--cases", str(CASES)],
    ):
        assert main([*argv, *SNAPSHOT, "--embedder", "none"]) == 2
    assert main(["search", str(AGENT), "q", *SNAPSHOT, "--runtime", "serve", "--top-k", "0"]) == 2


FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
KEYS = ["weights", "fields", "top_k", "max_tokens", "threshold", "name_first", "pins", "cases"]


def _read(path: Path) -> None:
    try:
        assert isinstance(read_settings(path), HoloSettings)
    except InputError as err:
        assert str(err).startswith(str(path)) and "\n" not in str(err)


@FUZZ
@given(raw=st.binary(max_size=300))
def test_any_bytes_are_settings_or_one_input_error(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(raw)
    _read(path)


@FUZZ
@given(
    doc=st.dictionaries(
        st.sampled_from(KEYS) | st.text(max_size=4),
        VALUES | st.dictionaries(st.sampled_from(["dense", "lexical", "name", "x"]), VALUES),
        max_size=4,
    ),
    wrapped=st.booleans(),
)
def test_any_json_object_is_settings_or_one_input_error(
    tmp_path: Path, doc: dict[str, Any], wrapped: bool
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"settings": doc} if wrapped else doc), encoding="utf-8")
    _read(path)
