"""holo-tune's own engine (workbench/search/holo): each part alone, then the engine whole, with
BM25 only and with the real MiniLM model."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provided import LOCAL_EXTRA

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.errors import InputError
from workbench.search.holo.engine import HoloEngine, pick
from workbench.search.holo.fusion import cost_signal, fuse, server_best, zscore
from workbench.search.holo.lexical import LexicalIndex
from workbench.search.holo.names import NameIndex, selected
from workbench.search.holo.neighbours import Labelled, neighbour_scores, tfidf_similarity
from workbench.search.holo.settings import HoloSettings, read_settings, settings_from
from workbench.search.holo.text import ToolDocument, document, name_words, words


def tool(server: str, name: str, description: str, params: dict[str, str] | None = None) -> Tool:
    properties = {k: {"type": "string", "description": v} for k, v in (params or {}).items()}
    definition = {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
    }
    return Tool(
        full_name=f"{server}-{name}",
        plugin=server,
        name=name,
        description=description,
        parameters=tuple(properties),
        kind="mcp",
        definition=definition,
    )


def catalog_of(tools: Sequence[Tool]) -> Catalog:
    servers = [
        ServerStatus(s, "snapshot", "snapshot") for s in dict.fromkeys(t.plugin for t in tools)
    ]
    return Catalog(tools=list(tools), servers=servers)


CODE = catalog_of(
    [
        tool(
            "serena", "find_symbol", "Locate a code entity by its name path", {"name_path": "path"}
        ),
        tool(
            "serena", "find_referencing_symbols", "Find references to a symbol", {"name_path": ""}
        ),
        tool("serena", "search_for_pattern", "Search the project for a regular expression"),
        tool("files", "read_file", "Read the contents of a file", {"path": "The file's path"}),
        tool("files", "write_file", "Write text to a file", {"path": "", "content": "the text"}),
        tool("files", "list_directory", "List the entries of a folder", {"path": ""}),
        tool("web", "brave_web_search", "Search the web with Brave", {"query": "what to find"}),
        tool("web", "fetch", "Fetch a URL and return its contents as markdown", {"url": ""}),
        tool("codex", "ask_codex", "Ask another model to write or review code", {"prompt": ""}),
    ]
)
TOKENS = np.array([120, 90, 80, 60, 70, 50, 110, 400, 70], dtype=np.float64)
LEXICAL = HoloSettings(weights={"dense": 0.0, "lexical": 1.0, "name": 0.5})


def names(catalog: Catalog, indices: Sequence[int]) -> list[str]:
    return [catalog.tools[i].name for i in indices]


# ------------------------------------------------------------------------------------------ text


def test_name_words_split_every_convention() -> None:
    assert name_words("find_symbol") == ["find", "symbol"]
    assert name_words("getUserInfo") == ["get", "user", "info"]
    assert name_words("HTTPServer.start-now") == ["http", "server", "start", "now"]
    assert name_words("list_v2") == ["list", "v", "2"]


def test_words_stem_plurals_drop_stop_words_and_split_cjk() -> None:
    assert words("Read the files of my queries") == ["read", "file", "query"]
    assert words("boxes and classes") == ["box", "class"]
    assert words("搜索天气") == ["搜", "索", "天", "气", "搜索", "索天", "天气"]


@given(st.text(max_size=200))
def test_words_and_name_words_take_any_text(text: str) -> None:
    for word in [*words(text), *name_words(text)]:
        assert word and word == word.strip()
        assert not any(ch in word for ch in " _-.,;")


def test_document_fields_and_weights() -> None:
    doc = document(CODE.tools[3])
    assert doc == ToolDocument(
        "files", "read file", "Read the contents of a file", "path: The file's path"
    )
    assert doc.tokens({"name": 2, "server": 0}) == ["read", "file", "read", "file"]
    assert doc.dense_text({"name": 1, "description": 1}) == "read file\nRead the contents of a file"


# --------------------------------------------------------------------------------------- lexical


def lucene_bm25(
    corpus: list[list[str]], query: list[str], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """Lucene's BM25 written out (the oracle bm25s is held to)."""
    n = len(corpus)
    avgdl = sum(len(d) for d in corpus) / n
    out = []
    for doc in corpus:
        score = 0.0
        for term in set(query):
            df = sum(1 for d in corpus if term in d)
            if df == 0:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = doc.count(term)
            score += idf * tf / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        out.append(score)
    return out


def test_lexical_scores_are_lucene_bm25_over_the_weighted_documents() -> None:
    docs = [document(t) for t in CODE.tools]
    weights = {"server": 1, "name": 2, "description": 1, "parameters": 1}
    index = LexicalIndex(docs, weights)
    for query in ("read a file", "search the web for files", "symbol references", "nothing here"):
        expected = lucene_bm25([d.tokens(weights) for d in docs], words(query))
        assert np.allclose(index.scores(query), expected, atol=1e-5), query


def test_lexical_of_a_catalog_without_words_is_zero() -> None:
    index = LexicalIndex([ToolDocument("", "", "", "")], {"name": 1})
    assert index.scores("anything").tolist() == [0.0]


# ----------------------------------------------------------------------------------------- names


def test_a_query_that_names_a_tool_names_it() -> None:
    index = NameIndex(CODE)
    assert names(CODE, index.named("find symbol")) == ["find_symbol"]
    assert names(CODE, index.named("please ask_codex about this")) == ["ask_codex"]
    assert names(CODE, index.named("files-read_file")) == ["read_file"]
    # one plain word is a word, not a name
    assert index.named("fetch the page") == []
    scores = index.scores("find symbol")
    assert scores[0] == 2.0  # every word, in order
    assert scores[1] == pytest.approx(2 / 3)  # find and symbol(s) of three words
    assert scores[3] == 0.0


def test_select_returns_exactly_the_named_tools_in_order() -> None:
    assert names(CODE, selected("select:write_file, files-read_file", CODE) or []) == [
        "write_file",
        "read_file",
    ]
    assert selected("select:no_such_tool", CODE) == []
    assert selected("find a file", CODE) is None


# ---------------------------------------------------------------------------------------- fusion


def test_zscore_and_server_best() -> None:
    assert zscore(np.array([1.0, 1.0])).tolist() == [0.0, 0.0]
    z = zscore(np.array([1.0, 2.0, 3.0]))
    assert z.mean() == pytest.approx(0.0) and z.std() == pytest.approx(1.0)
    best = server_best(np.array([0.1, 0.9, 0.3]), np.array([0, 0, 1]), 2)
    assert best.tolist() == [0.9, 0.9, 0.3]


def test_fuse_adds_each_weighted_share() -> None:
    raw = {"dense": np.array([0.2, 0.5, 0.1]), "lexical": np.array([3.0, 0.0, 1.0])}
    servers = np.array([0, 0, 1])
    cost = cost_signal(np.array([10.0, 100.0, 1000.0]))
    weights = {"dense": 1.0, "lexical": 0.5, "server": 1.0, "cost": 0.25, "name": 2.0}
    total, shares = fuse(raw, weights, servers, 2, cost)
    assert set(shares) == {"dense", "lexical", "server", "cost"}  # no name scores: no share
    assert np.allclose(sum(shares.values()), total)
    assert cost[0] > cost[1] > cost[2]  # cheaper scores higher


# ------------------------------------------------------------------------------------ neighbours


def test_neighbour_scores_take_the_best_labelled_query_per_tool_and_server() -> None:
    labelled = Labelled.of(["read my file", "search online"], [[3], [6]])
    sims = np.array([0.8, 0.1])
    servers = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
    out = neighbour_scores(sims, labelled, servers, 4)
    assert out[3] == pytest.approx(0.8)  # the tool itself and its server
    assert out[4] == pytest.approx(0.4)  # its server only
    assert out[6] == pytest.approx(0.1)
    assert out[0] == 0.0
    held_out = neighbour_scores(sims, labelled, servers, 4, use=np.array([1]))
    assert held_out[3] == 0.0 and held_out[6] == pytest.approx(0.1)


def test_tfidf_similarity_without_an_embedder() -> None:
    sims = tfidf_similarity(["read the file"], ["read my file", "search online"])
    assert sims.shape == (1, 2) and sims[0, 0] > 0.5 and sims[0, 1] == 0.0


# -------------------------------------------------------------------------------------- settings


def test_settings_round_trip_through_their_file(tmp_path: Path) -> None:
    chosen = HoloSettings(
        weights={"dense": 1, "server": 0.5},
        top_k=None,
        max_tokens=900,
        pins=("files-read_file",),
        embedder="none",
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps(chosen.to_json(), indent=2))
    assert read_settings(path) == chosen
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"runtime": "serve", "settings": chosen.to_json()}, indent=2))
    assert read_settings(report) == chosen


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "top_k": 0\n}', "s.json:2: top_k: must be from 1 to 100"),
        (
            '{\n  "weights": {\n    "dense": "x"\n  }\n}',
            "s.json:3: weights.dense: must be a number",
        ),
        ('{\n  "weights": {\n    "magic": 1\n  }\n}', "s.json:3: weights.magic: unknown signal"),
        ('{\n  "top_k": null\n}', "s.json:2: top_k: one of top_k and max_tokens must be set"),
        ('{"speed": 3}', "s.json:1: speed: unknown key"),
        ('{"top_k": ', "s.json:1: not JSON"),
        ("[1, 2]", "s.json:1: must be a JSON object of settings"),
    ],
)
def test_a_bad_settings_file_is_one_line_naming_file_line_and_key(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_settings(path)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(str(tmp_path / where.split(":")[0]))
    assert where.split(":", 1)[1].strip() in line.split("s.json:", 1)[1].strip() or where in line


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_settings_or_one_input_error(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.json"
        path.write_bytes(data)
        try:
            read_settings(path)
        except InputError as err:
            assert "\n" not in str(err)


JSONISH: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 200)
    | st.floats(allow_nan=True)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "weights",
                "fields",
                "top_k",
                "max_tokens",
                "threshold",
                "name_first",
                "pins",
                "embedder",
                "cases",
            ]
        ),
        JSONISH,
        max_size=4,
    )
)
def test_any_object_gives_settings_or_one_input_error(data: dict[str, Any]) -> None:
    try:
        settings_from(data)
    except InputError as err:
        assert err.field and "\n" not in str(err)


# ---------------------------------------------------------------------------------------- engine


def test_find_symbol_comes_first_and_select_is_exact() -> None:
    engine = HoloEngine(CODE, TOKENS)
    for query in ("find symbol", "find_symbol", "where is find symbol used"):
        assert names(CODE, engine.search(query, LEXICAL).indices)[0] == "find_symbol", query
    result = engine.search("select:fetch,ask_codex", LEXICAL)
    assert names(CODE, result.indices) == ["fetch", "ask_codex"]
    assert engine.search("ask codex to review", LEXICAL.with_(top_k=1)).indices == (8,)


def test_name_first_off_ranks_by_the_fused_score_alone() -> None:
    engine = HoloEngine(CODE, TOKENS)
    plain = LEXICAL.with_(name_first=False, weights={"lexical": 1.0})
    ranked = engine.rank("find symbol references", plain)
    assert ranked.named == (0,)
    assert names(CODE, ranked.order[:1].tolist()) == ["find_referencing_symbols"]
    first = engine.rank("find symbol references", LEXICAL)
    assert names(CODE, first.order[:1].tolist()) == ["find_symbol"]


def test_a_query_no_tool_answers_is_refused_under_the_threshold() -> None:
    engine = HoloEngine(CODE, TOKENS)
    strict = LEXICAL.with_(threshold=0.5)
    weak = "a cake recipe file"  # one word of three is a tool's
    assert names(CODE, engine.search(weak, LEXICAL).indices)[0] in {"read_file", "write_file"}
    refused = engine.search(weak, strict)
    assert refused.refused and refused.indices == ()
    assert refused.ranking.confidence == pytest.approx(1 / 3)
    kept = engine.search("read the file contents", strict)
    assert not kept.refused and names(CODE, kept.indices)[0] == "read_file"


def test_without_embeddings_a_query_sharing_no_word_finds_nothing() -> None:
    engine = HoloEngine(CODE, TOKENS)
    result = engine.search("bake a chocolate cake tonight", LEXICAL)
    assert result.refused and result.indices == () and result.ranking.found.size == 0
    found = engine.rank("read a file", LEXICAL).found
    # the files server's tools: "file" is in their server's name too
    assert set(names(CODE, found.tolist())) == {"read_file", "write_file", "list_directory"}


def test_a_token_budget_fills_in_ranked_order() -> None:
    order = np.array([7, 0, 3, 5], dtype=np.int64)
    assert pick(order, TOKENS, None, 500) == (7, 3)  # 400 + 60; 120 passed over
    assert pick(order, TOKENS, 1, 500) == (7,)
    assert pick(order, TOKENS, None, 100) == (7,)  # the best even alone over the budget
    assert pick(order, TOKENS, 3, None) == (7, 0, 3)


def test_shares_explain_the_score() -> None:
    engine = HoloEngine(CODE, TOKENS)
    ranked = engine.rank(
        "search the web", LEXICAL.with_(weights={"lexical": 1.0, "name": 0.5, "cost": 0.2})
    )
    assert set(ranked.shares) == {"lexical", "name", "cost"}
    assert np.allclose(sum(ranked.shares.values()), ranked.scores)


def test_the_neighbour_signal_lifts_a_tool_a_labelled_query_expected() -> None:
    labelled = Labelled.of(["grab the page at this address"], [[7]])
    engine = HoloEngine(CODE, TOKENS, labelled=labelled)
    query = "grab the page at example.com"
    plain = engine.rank(query, LEXICAL)
    lifted = engine.rank(query, LEXICAL.with_(weights={"lexical": 1.0, "neighbour": 2.0}))
    assert lifted.order[0] == 7 and lifted.shares["neighbour"][7] > 0
    assert plain.order[0] != 7 or plain.scores[7] < lifted.scores[7]


@LOCAL_EXTRA
def test_with_minilm_the_dense_signal_ranks_by_meaning() -> None:
    from workbench.search.embedders.resolve import build_embedder

    embedder = build_embedder("local:all-MiniLM-L6-v2")
    assert embedder is not None
    engine = HoloEngine(CODE, TOKENS, embedder)
    assert engine.dense
    dense = HoloSettings(weights={"dense": 1.0})
    result = engine.search(
        "open a document from disk and show me what it says", dense.with_(top_k=2)
    )
    assert "read_file" in names(CODE, result.indices)
    ranked = engine.rank("look something up on the internet", HoloSettings())
    assert names(CODE, ranked.order[:2].tolist())[0] in {"brave_web_search", "fetch"}
    assert 0.0 < ranked.confidence <= 1.0
    refused = engine.search("bake a chocolate cake tonight", HoloSettings(threshold=0.45))
    assert refused.refused
