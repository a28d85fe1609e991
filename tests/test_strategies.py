"""The strategy engines on small hand-made catalogs: each pins its design's published numbers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import bm25s
import numpy as np
import pytest

from workbench.catalog.models import Catalog, Tool
from workbench.errors import InputError
from workbench.search.strategies import (
    ENGINES,
    AnthropicParams,
    AnthropicStrategy,
    ArgusParams,
    ArgusStrategy,
    PizzaPiParams,
    PizzaPiStrategy,
    StackOneParams,
    StackOneStrategy,
    Toolkit,
    ToolkitsParams,
    ToolkitsStrategy,
    build_strategy,
)
from workbench.search.strategies.anthropic import regex_matches
from workbench.search.strategies.argus import CALL_TOOL, FIND_TOOL, overlap_score, split_tokens
from workbench.search.strategies.base import StrategyResult, definitions_tokens, exposed_names
from workbench.search.strategies.pizzapi import (
    allocate_name,
    js_json,
    js_length,
    keywords,
    score_tool,
    tool_chars,
)
from workbench.search.strategies.stackone import (
    clamp,
    fuse,
    index_texts,
    squash,
    tfidf_tokenize,
)
from workbench.search.types import FloatArray
from workbench.tokens import TokenTable, token_table

DATASETS = Path(__file__).resolve().parents[1] / "tests" / "data" / "datasets"


def tool(
    server: str,
    name: str,
    description: str,
    args: Mapping[str, str] | None = None,
    kind: str = "mcp",
) -> Tool:
    args = dict(args or {})
    schema = {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in args.items()},
    }
    return Tool(
        full_name=f"{server}-{name}",
        plugin=server,
        name=name,
        description=description,
        parameters=tuple(args),
        kind=kind,  # type: ignore[arg-type]
        definition={"name": name, "description": description, "inputSchema": schema},
    )


def catalog(*tools: Tool) -> Catalog:
    return Catalog(tools=list(tools), servers=[])


def table(cat: Catalog) -> TokenTable:
    return token_table(cat, "openai", "gpt-4o")


# ------------------------------------------------------------------------------------ common


def test_unknown_engine_and_wrong_params_are_input_errors() -> None:
    cat = catalog(tool("s", "a", "x"))
    with pytest.raises(InputError, match="unknown engine 'nope'"):
        build_strategy("nope", cat, table(cat))
    with pytest.raises(InputError, match="ArgusParams"):
        build_strategy("argus", cat, table(cat), StackOneParams())


def test_shared_bare_names_keep_their_full_name() -> None:
    cat = catalog(tool("a", "search", "x"), tool("b", "search", "y"), tool("b", "get", "z"))
    assert exposed_names(cat) == ["a-search", "b-search", "get"]


# ------------------------------------------------------------------------------------ pizzapi


def test_pizzapi_keyword_arithmetic() -> None:
    desc = "Create a new issue in a repository"
    params = ["repo", "title"]
    # create: name contains 5 + description 3; issue: 5 + 3; the whole query is in neither.
    assert score_tool("mcp_gh_create_issue", desc, params, "create issue") == 16
    # a parameter name containing the keyword adds 1, nothing else matches.
    assert score_tool("mcp_gh_create_issue", desc, params, "title") == 1
    # four keywords in the name (4 x 5), two in the description (2 x 3), whole query in name +8.
    assert score_tool("mcp_gh_create_issue", desc, params, "mcp_gh_create_issue") == 34
    # exact name 10 (not 5), description 3, whole query in name 8 and in description 4.
    assert score_tool("weather", "Weather forecast for a city", ["city"], "weather") == 25
    # city: description 3 + parameter 1; weather: exact 10 + description 3.
    assert score_tool("weather", "Weather forecast for a city", ["city"], "city weather") == 17
    # one-character keywords are dropped; no keyword left scores 0 even with the bonuses.
    assert keywords("a b:c.d|e") == []
    assert score_tool("a", "a", [], "a") == 0
    assert keywords("Send_Slack-message:now,x") == ["send", "slack", "message", "now"]


def test_pizzapi_names_and_sizes_as_javascript_counts_them() -> None:
    used: set[str] = set()
    assert allocate_name("My Server!", "Get-Thing", used) == "mcp_my_server_get-thing"
    again = allocate_name("My Server!", "Get-Thing", used)
    assert again.startswith("mcp_my_server_get-thing_") and len(again) == 23 + 9
    long = allocate_name("srv", "x" * 100, used)
    assert len(long) == 64 and long.startswith("mcp_srv_xxx")
    assert js_json({"type": "object", "n": 1.0, "s": "é"}) == '{"type":"object","n":1,"s":"é"}'
    assert js_length("é😀") == 3  # UTF-16 units: the emoji is a surrogate pair
    schema = {"type": "object", "properties": {}}
    assert tool_chars("mcp_a_b", "desc", schema) == 7 + 4 + len('{"type":"object","properties":{}}')


def _pizza_catalog() -> Catalog:
    return catalog(
        tool("gh", "create_issue", "Create a new issue in a repository", {"repo": "r"}),
        tool("gh", "list_issues", "List issues", {"repo": "r"}),
        tool("slack", "send_message", "Send a message to a channel", {"channel": "c"}),
        tool("local", "clock", "What time is it", kind="function"),
    )


def test_pizzapi_defers_above_the_threshold_and_per_server() -> None:
    cat = _pizza_catalog()
    bill = table(cat)
    probe = PizzaPiStrategy(cat, bill)
    total = probe.total_chars
    assert total == sum(probe.chars[:3])  # the function tool is not an MCP tool
    at = PizzaPiStrategy(cat, bill, PizzaPiParams(token_threshold=total))
    assert not at.active  # "exceeds" is strictly greater
    inactive = at.run("create issue")
    assert inactive.sent == (0, 1, 2, 3)
    assert inactive.meta_tokens == at.meta_tokens  # search_tools is there, never called
    above = PizzaPiStrategy(cat, bill, PizzaPiParams(token_threshold=total - 1))
    result = above.run("create issue")
    assert result.order.tolist() == [0, 1]  # 16 > 5 + 3 (issue in name and description)
    assert result.scores[[0, 1]].tolist() == [16.0, 8.0]
    assert result.sent == (0, 1, 3)  # loaded tools plus the never-deferred function tool
    kept = PizzaPiStrategy(cat, bill, PizzaPiParams(token_threshold=0, defer_loading={"gh": False}))
    assert kept.initially_deferred == (2,)
    forced = PizzaPiStrategy(cat, bill, PizzaPiParams(defer_loading={"slack": True}))
    assert forced.initially_deferred == (2,)
    assert forced.run("send message").sent == (0, 1, 2, 3)


def test_pizzapi_max_results_and_sessions() -> None:
    cat = _pizza_catalog()
    bill = table(cat)
    one = PizzaPiStrategy(cat, bill, PizzaPiParams(token_threshold=0, max_results=1))
    turns = one.run_session(["issue", "issue"])
    assert turns[0].sent == (0, 3)  # tie 8/8 between the gh tools: catalog order, first one
    assert turns[1].sent == (0, 1, 3)  # the first stays loaded; the search finds the second
    forget = PizzaPiStrategy(
        cat, bill, PizzaPiParams(token_threshold=0, max_results=1, keep_loaded_tools=False)
    )
    turns = forget.run_session(["issue", "issue"])
    assert turns[1].sent == (1, 3)  # re-deferred at the end of the list: it now loses the tie


def test_pizzapi_bills_the_search_tool_the_loaded_tools_and_the_result_text() -> None:
    cat = _pizza_catalog()
    bill = table(cat)
    strategy = PizzaPiStrategy(cat, bill, PizzaPiParams(token_threshold=0))
    hit = strategy.run("create issue")
    miss = strategy.run("zzz")
    assert miss.sent == (3,)
    assert hit.tokens == bill.total(hit.sent) + hit.meta_tokens
    assert hit.meta_tokens > strategy.meta_tokens and miss.meta_tokens > strategy.meta_tokens


# -------------------------------------------------------------------------------------- argus


def test_argus_overlap_fallback_rungs() -> None:
    doc = split_tokens("fetch_users list")
    assert doc == ["fetch", "users", "list"]
    # list: a token (1.0); user: inside "users" (0.5); data: nowhere (0); over 3 query tokens.
    assert overlap_score(split_tokens("list user data"), doc) == pytest.approx(0.5)
    assert overlap_score(["list"], doc) == 1.0
    assert overlap_score([], doc) == 0.0
    # The 0.25 rung (inside the joined text but no token) needs a query token spanning a space,
    # which the splitter never produces: it is unreachable in argus too.
    assert overlap_score(["s l"], doc) == 0.25


def test_argus_tfidf_cosine_by_hand_and_token_bill() -> None:
    cat = catalog(
        tool("w", "get_weather", "weather now"),
        tool("m", "send_mail", "send mail"),
        tool("m", "noop", "nothing"),
    )
    bill = table(cat)
    strategy = ArgusStrategy(cat, bill, ArgusParams(keep_tools=("noop",)))
    # [a-zA-Z0-9_]+ keeps get_weather one token; every term is in one document of three, so all
    # idfs are equal and a document's normalised weights are 1/sqrt(3) each.
    result = strategy.run("weather")
    assert result.order.tolist() == [0]
    assert result.scores[0] == pytest.approx(1 / math.sqrt(3))
    assert strategy.run("weather now").scores[0] == pytest.approx(2 / math.sqrt(6))
    assert result.sent == (2, 0)  # keep tools first, then what find_tool returns
    meta = definitions_tokens(bill, [FIND_TOOL, CALL_TOOL])
    assert result.meta_tokens == meta
    assert result.tokens == bill.total([2, 0]) + meta
    fallback = ArgusStrategy(cat, bill, ArgusParams(scorer="overlap")).run("mail now")
    assert fallback.order.tolist() == [0, 1]  # 0.5 each (one exact token of two): catalog order
    with pytest.raises(InputError, match="limit"):
        ArgusParams(limit=0)


# ------------------------------------------------------------------------------------ stackone


def test_stackone_texts_and_tokenizer() -> None:
    bm25, tfidf = index_texts("hris_list_employees", "List employees.")
    assert tfidf == (
        "hris_list_employees hris_list_employees hris_list_employees hris list "
        "List employees. hris list employees"
    )
    assert bm25 == "hris_list_employees List employees. hris hris list employees list"
    assert tfidf_tokenize("Get the user's e-mail, now!") == ["get", "user", "s", "e", "mail", "now"]


def test_stackone_normalisations_and_fusion_by_hand() -> None:
    raw = np.array([0.0, 10.0, 1.7], dtype=np.float32)
    squashed = squash(raw)
    assert squashed[0] == 0.5
    assert squashed[1] == float(np.float32(1) / (np.float32(1) + np.exp(np.float32(-1))))
    assert squashed[1] == pytest.approx(1 / (1 + math.exp(-1)), rel=1e-6)
    assert clamp(raw).tolist() == [0.0, 1.0, 1.0]
    assert clamp(np.array([0.25], dtype=np.float32)).tolist() == [0.25]
    assert fuse(0.2, np.array([0.5]), np.array([0.25])).tolist() == [pytest.approx(0.3)]


def test_stackone_zero_bm25_candidates_still_get_alpha_half_when_squashed() -> None:
    """A tool in BM25's 50 fetched with raw score 0 is squashed to 0.5: it scores 0.2 x 0.5."""
    cat = catalog(
        tool("hris", "hris_list_employees", "List employees"),
        tool("ats", "ats_create_job", "Create a job"),
    )
    bill = table(cat)
    squashed = StackOneStrategy(cat, bill).run("employees")
    assert squashed.order.tolist() == [0, 1]
    assert squashed.scores[1] == pytest.approx(0.1)
    clamped = StackOneStrategy(cat, bill, StackOneParams(bm25_norm="clamp")).run("employees")
    assert clamped.scores[1] == 0.0
    bm25_raw = bm25s_scores(cat, "employees")[0]
    tfidf = squashed.scores[0] - 0.2 * float(squash(np.array([bm25_raw], np.float32))[0])
    assert clamped.scores[0] == pytest.approx(0.2 * min(1.0, bm25_raw) + tfidf)
    alone = StackOneStrategy(cat, bill, StackOneParams(alpha=1.0)).run("employees")
    assert alone.scores[1] == 0.5  # BM25 only
    assert alone.sent == (0, 1)
    assert StackOneStrategy(cat, bill, StackOneParams(min_score=0.2)).run("employees").sent == (0,)


def bm25s_scores(cat: Catalog, query: str) -> FloatArray:
    texts = [index_texts(t.name, t.description)[0] for t in cat.tools]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stemmer=None, show_progress=False), show_progress=False)
    words = bm25s.tokenize([query], stemmer=None, return_ids=False, show_progress=False)[0]
    return np.asarray(retriever.get_scores(words), dtype=np.float64)


def sdk_reference(
    names: Sequence[str], descs: Sequence[str], query: str
) -> list[tuple[int, float]]:
    """The Python SDK's search written out plainly: dicts, per-document loops, a score map."""
    texts = [index_texts(n, d) for n, d in zip(names, descs, strict=True)]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([b for b, _ in texts], stemmer=None, show_progress=False),
        show_progress=False,
    )
    k = min(50, len(names))
    docs, raw = retriever.retrieve(
        bm25s.tokenize([query], stemmer=None, show_progress=False),
        k=len(names),
        show_progress=False,
    )
    # retrieve's order among equal scores depends on the CPU (numpy's SIMD sorts); holo-tune
    # puts them in catalog order, so the reference does too before taking the SDK's 50
    ranked = sorted(zip(docs[0].tolist(), raw[0], strict=True), key=lambda p: (-p[1], p[0]))[:k]
    score_map: dict[int, dict[str, float]] = {}
    for doc, score in ranked:
        score_map[int(doc)] = {"bm25": max(0.0, min(1.0, float(1 / (1 + np.exp(-score / 10)))))}
    for doc, sim in _reference_tfidf([t for _, t in texts], query)[:k]:
        score_map.setdefault(doc, {})["tfidf"] = sim
    fused = [
        (d, 0.2 * s.get("bm25", 0.0) + 0.8 * s.get("tfidf", 0.0)) for d, s in score_map.items()
    ]
    fused.sort(key=lambda x: x[1], reverse=True)
    return fused


def _reference_tfidf(texts: Sequence[str], query: str) -> list[tuple[int, float]]:
    docs = [tfidf_tokenize(t) for t in texts]
    vocab: dict[str, int] = {}
    for tokens in docs:
        for token in tokens:
            vocab.setdefault(token, len(vocab))
    df: dict[int, int] = {}
    for tokens in docs:
        for term in {vocab[t] for t in tokens}:
            df[term] = df.get(term, 0) + 1
    idf = [math.log((len(docs) + 1) / (df.get(i, 0) + 1)) + 1 for i in range(len(vocab))]

    def vector(tokens: list[str]) -> tuple[dict[int, float], float]:
        tf: dict[int, int] = {}
        for token in tokens:
            if token in vocab:
                tf[vocab[token]] = tf.get(vocab[token], 0) + 1
        vec = {t: (f / len(tokens)) * idf[t] for t, f in tf.items()}
        norm_sq = 0.0
        for w in vec.values():
            norm_sq += w * w
        return vec, math.sqrt(norm_sq) if norm_sq > 0 else 1.0

    q_tokens = tfidf_tokenize(query)
    if not q_tokens:
        return []
    q_vec, q_norm = vector(q_tokens)
    if not q_vec:
        return []
    out = []
    for i, tokens in enumerate(docs):
        d_vec, d_norm = vector(tokens)
        small, big = (q_vec, d_vec) if len(q_vec) <= len(d_vec) else (d_vec, q_vec)
        dot = 0.0
        for term, w in small.items():
            if term in big:
                dot += w * big[term]
        sim = dot / (q_norm * d_norm)
        if sim > 0:
            out.append((i, min(1.0, sim)))
    out.sort(key=lambda x: x[1], reverse=True)
    return out


def test_stackone_is_bit_identical_to_the_sdk_algorithm_on_its_own_catalog() -> None:
    data = json.loads((DATASETS / "stackone" / "catalog.json").read_text())
    tools = [
        tool(server, t["name"], t.get("description") or "")
        for server, entry in data["servers"].items()
        for t in entry["tools"]
    ]
    cat = catalog(*tools)
    strategy = StackOneStrategy(cat, table(cat))
    names = [t.name for t in tools]
    descs = [t.description for t in tools]
    lines = (DATASETS / "stackone" / "cases.jsonl").read_text().splitlines()
    queries = [json.loads(line)["query"] for line in lines[::8]] + ["", "zzz", "the of and"]
    for query in queries:
        expected = sdk_reference(names, descs, query)
        order, scores = strategy.candidates(query)
        assert order.tolist() == [d for d, _ in expected], query
        assert scores.tolist() == [s for _, s in expected], query


# ---------------------------------------------------------------------------------- anthropic


def _anthropic_catalog() -> Catalog:
    return catalog(
        tool("crm", "get_customer_data", "Fetch a customer", {"customer_id": "The customer"}),
        tool("crm", "get_order_data", "Fetch an order", {"order_id": "The order number"}),
        tool("slack", "send_message", "Post to a channel", {"channel": "Where to post"}),
        tool("slack", "list_channels", "All channels"),
    )


def test_anthropic_regex_over_names_descriptions_and_arguments() -> None:
    cat = _anthropic_catalog()
    bill = table(cat)
    strategy = AnthropicStrategy(cat, bill, AnthropicParams(variant="regex"))
    assert strategy.run("get_.*_data").sent == (0, 1)
    assert strategy.run("order number").sent == (1,)  # an argument description
    assert strategy.run("channel").sent == (2, 3)  # argument name / description
    assert strategy.run("(?i)FETCH").sent == (0, 1)
    assert strategy.run("Fetch.*channel").sent == ()  # fields are matched one by one
    invalid = strategy.run("get_([")
    assert invalid.sent == () and invalid.order.size == 0
    assert invalid.tokens == invalid.meta_tokens + bill.overhead  # the search tool alone
    assert regex_matches("a" * 201, [["a" * 300]]) == []
    assert regex_matches("a" * 200, [["a" * 300]]) == [0]


def test_anthropic_defer_loading_and_result_count() -> None:
    cat = _anthropic_catalog()
    bill = table(cat)
    params = AnthropicParams(
        variant="regex", server_defer={"slack": False}, tool_defer={"list_channels": True}
    )
    strategy = AnthropicStrategy(cat, bill, params)
    result = strategy.run("channel")
    assert result.sent == (2, 3)  # send_message always sent; list_channels found
    assert result.order.tolist() == [3]
    assert result.tokens == bill.total([2, 3]) + result.meta_tokens
    for bad in (2, 6):
        with pytest.raises(InputError, match="3 to 5"):
            AnthropicParams(max_results=bad)
    bm25 = AnthropicStrategy(cat, bill, AnthropicParams(max_results=3))
    found = bm25.run("customer order data")
    assert set(found.sent) <= {0, 1, 2, 3} and 0 < len(found.sent) <= 3
    assert all(found.scores[i] > 0 for i in found.order)
    assert found.scores[found.order].tolist() == sorted(found.scores[found.order], reverse=True)
    assert bm25.run("zzz").sent == ()


# ----------------------------------------------------------------------------------- toolkits


class TableEmbedder:
    """A fake embedder for the threshold logic: fixed vectors per text (a unit test of logic)."""

    spec = "fake"
    model_id = "fake"

    def __init__(self, vectors: Mapping[str, Sequence[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: Sequence[str]) -> FloatArray:
        return np.array([self.vectors[t] for t in texts], dtype=np.float64)


def test_toolkits_keyword_and_threshold_activation() -> None:
    cat = _anthropic_catalog()
    bill = table(cat)
    kits = (
        Toolkit("crm", ("crm-get_customer_data", "crm-get_order_data"), "crm", ("customer",)),
        Toolkit("chat", ("slack-send_message", "slack-list_channels"), "chat"),
    )
    base = ("list_channels",)
    words = ToolkitsStrategy(cat, bill, ToolkitsParams(toolkits=kits, base_tools=base))
    assert words.run("find the Customer please").sent == (3, 0, 1)
    assert words.run("customers").sent == (3,)  # whole words only
    # cosine 0.40 activates (at the threshold), 0.39 does not.
    vectors = {
        "crm": [1.0, 0.0],
        "chat": [0.0, 1.0],
        "q40": [0.4, math.sqrt(1 - 0.16)],
        "q39": [0.39, math.sqrt(1 - 0.39**2)],
    }
    meaning = ToolkitsStrategy(
        cat, bill, ToolkitsParams(toolkits=kits, threshold=0.4), embedder=TableEmbedder(vectors)
    )
    at = meaning.run("q40")
    assert at.sent == (2, 3, 0, 1)  # chat (0.92) then crm (0.40), tools in catalog order
    below = meaning.run("q39")
    assert below.sent == (2, 3)
    assert below.order.tolist() == [2, 3, 0, 1]
    assert below.tokens == bill.total([2, 3])
    default = ToolkitsStrategy(cat, bill, ToolkitsParams(keywords={"slack": ("post",)}))
    assert [k.name for k in default.toolkits] == ["crm", "slack"]
    assert default.run("post it").sent == (2, 3)


# --------------------------------------------------------------------------------------- grids


def _same(a: StrategyResult, b: StrategyResult) -> bool:
    return (
        a.order.tolist() == b.order.tolist()
        and a.scores.tolist() == b.scores.tolist()
        and a.sent == b.sent
        and (a.meta_tokens, a.tokens) == (b.meta_tokens, b.tokens)
    )


@pytest.mark.parametrize("engine", ["stackone", "argus", "pizzapi", "anthropic"])
def test_run_grid_equals_run_at_each_grid_setting(engine: str) -> None:
    data = json.loads((DATASETS / "stackone" / "catalog.json").read_text())
    tools = [
        tool(server, t["name"], t.get("description") or "")
        for server, entry in data["servers"].items()
        for t in entry["tools"]
    ]
    cat = catalog(*tools)
    bill = table(cat)
    strategy = build_strategy(engine, cat, bill)
    grid = strategy.grid()
    assert len(grid) > 1 and strategy.params in grid  # the defaults are a grid point
    for query in ("list employees", "create a candidate application", "zzz"):
        results = strategy.run_grid(query)
        assert len(results) == len(grid)
        for params, result in zip(grid, results, strict=True):
            assert _same(result, build_strategy(engine, cat, bill, params).run(query)), params


def test_toolkits_grid_sweeps_the_threshold_only_with_an_embedder() -> None:
    cat = _anthropic_catalog()
    bill = table(cat)
    kits = (Toolkit("crm", ("crm-get_customer_data",), "crm"), Toolkit("chat", (), "chat"))
    vectors = {"crm": [1.0, 0.0], "chat": [0.0, 1.0], "q": [0.5, math.sqrt(0.75)]}
    plain = ToolkitsStrategy(cat, bill, ToolkitsParams(toolkits=kits))
    assert plain.grid() == [plain.params]
    embedded = ToolkitsStrategy(
        cat, bill, ToolkitsParams(toolkits=kits), embedder=TableEmbedder(vectors)
    )
    grid = embedded.grid()
    assert [p.threshold for p in grid] == [round(0.1 + 0.05 * i, 2) for i in range(11)]
    sent = [r.sent for r in embedded.run_grid("q")]
    assert sent == [(0,)] * 9 + [()] * 2  # cosine 0.5 passes thresholds up to 0.50


def test_pizzapi_vectorised_scores_equal_the_per_tool_rule() -> None:
    data = json.loads((DATASETS / "livemcpbench" / "catalog.json").read_text())
    tools = [
        tool(
            server,
            t["name"],
            t.get("description") or "",
            dict.fromkeys((t.get("inputSchema") or {}).get("properties") or {}, ""),
        )
        for server, entry in data["servers"].items()
        for t in entry["tools"]
    ]
    cat = catalog(*tools)
    strategy = PizzaPiStrategy(cat, table(cat))
    lines = (DATASETS / "livemcpbench" / "cases.jsonl").read_text().splitlines()[::9]
    queries = [json.loads(line)["query"] for line in lines] + ["search", "Get_File", "", "x y"]
    for query in queries:
        fast = strategy.scores(query, range(len(cat)))
        slow = {
            i: score_tool(
                strategy.names[i], strategy.descriptions[i], strategy.parameters[i], query
            )
            for i in range(len(cat))
        }
        assert fast == slow, query


def test_anthropic_bm25_indexes_the_deferred_tools_only() -> None:
    """A tool that is always sent is not in the search index: it changes no idf."""
    cat = _anthropic_catalog()
    bill = table(cat)
    params = AnthropicParams(tool_defer={"get_order_data": False})
    strategy = AnthropicStrategy(cat, bill, params)
    deferred = [0, 2, 3]
    texts = [" ".join(strategy.fields[i]) for i in deferred]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    expected = retriever.get_scores(["fetch"])
    scores = strategy.run("fetch").scores
    assert scores[deferred].tolist() == np.asarray(expected, dtype=np.float64).tolist()
    assert scores[1] == 0.0 and scores[0] > 0
    assert strategy.run("fetch").sent == (1, 0)  # the always-sent tool, then what was found


@pytest.mark.parametrize("engine", ENGINES)
def test_degenerate_catalogs_find_nothing_without_failing(engine: str) -> None:
    """No tool, or tools without a single searchable token (where bm25s and scikit-learn refuse
    to build an index): every engine answers, finding nothing."""
    for cat in (catalog(), catalog(tool("s", "-", ""), tool("s", "+", ""))):
        bill = table(cat)
        for query in ("hello world", ""):
            result = build_strategy(engine, cat, bill).run(query)
            assert result.order.size == 0  # toolkits: none is active, none is ranked
            assert set(result.sent) <= set(range(len(cat)))


def test_stackone_equal_bm25_scores_rank_in_catalog_order() -> None:
    """``bm25s``'s ``retrieve`` orders equal scores as numpy's SIMD sorts happen to on the CPU;
    holo-tune fixes catalog order so a comparison reads the same on every machine."""
    names = [f"{word}_widget" for word in ("delta", "alpha", "gamma", "beta", "omega", "kappa")]
    cat = catalog(*(tool("s", n, "Counts widgets in the store") for n in names))
    result = StackOneStrategy(cat, table(cat), StackOneParams(alpha=1.0, limit=6)).run("widgets")
    assert len(set(result.scores.tolist())) == 1  # every tool scores the same
    assert result.order.tolist() == list(range(6))
    assert result.sent == (0, 1, 2, 3, 4, 5)
