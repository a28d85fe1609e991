"""The name signal's index answers as a walk over every name does (the plain definition of
``workbench.search.holo.names``), for any names and queries: it only skips the tools a query's
words cannot reach, which keeps a search of bfcl's 1,287 tools fast."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.catalog.models import Catalog, ServerStatus, Tool
from workbench.search.holo.names import _IDENT, NameIndex, _identifier, _phrase, _stems

WORDS = ["find", "symbol", "symbols", "get", "user", "info", "search", "web", "file", "files"]
SEPARATORS = ["_", "-", ".", " ", ""]


def reference_scores(index: NameIndex, query: str) -> list[float]:
    said = _stems(query)
    said_set = set(said)
    idents = {m.lower() for m in _IDENT.findall(query)}
    out = [0.0] * len(index.words)
    if not said_set:
        return out
    for i, name in enumerate(index.words):
        if not name:
            continue
        share = sum(1 for w in set(name) if w in said_set) / len(set(name))
        if share == 0.0:
            continue
        whole = index.written[i] in idents or index.full[i] in idents or _phrase(said, name)
        out[i] = share + (1.0 if whole else 0.0)
    return out


def reference_named(index: NameIndex, query: str) -> list[int]:
    said = _stems(query)
    idents = {m.lower() for m in _IDENT.findall(query)}
    found = []
    for i, name in enumerate(index.words):
        written = index.written[i]
        as_written = index.full[i] in idents or (written in idents and _identifier(written))
        if as_written or (len(name) >= 2 and _phrase(said, name)):
            found.append(i)
    return found


def _name(parts: list[str], separator: str, camel: bool) -> str:
    if camel:
        return parts[0] + "".join(p.capitalize() for p in parts[1:])
    return separator.join(parts) or "x"


NAMES = st.builds(
    _name,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    st.sampled_from(SEPARATORS),
    st.booleans(),
)


def _catalog(names: list[str]) -> Catalog:
    tools = []
    for number, name in enumerate(dict.fromkeys(names)):
        server = f"s{number % 2}"
        definition = {"name": name, "inputSchema": {"type": "object"}}
        tools.append(
            Tool(
                full_name=f"{server}-{name}",
                plugin=server,
                name=name,
                description="",
                parameters=(),
                kind="mcp",
                definition=definition,
            )
        )
    servers = [ServerStatus(s, "snapshot", "snapshot") for s in ("s0", "s1")]
    return Catalog(tools=tools, servers=servers)


@settings(max_examples=150, deadline=None, database=None)
@given(
    names=st.lists(NAMES, min_size=1, max_size=12),
    queries=st.lists(
        st.lists(NAMES | st.sampled_from(["the", "s0-find_symbol", "s1-get-user"]), max_size=5),
        min_size=1,
        max_size=4,
    ),
)
def test_the_index_answers_as_the_walk_over_every_name(
    names: list[str], queries: list[list[str]]
) -> None:
    index = NameIndex(_catalog(names))
    for parts in queries:
        query = " ".join(parts)
        assert np.array_equal(index.scores(query), np.asarray(reference_scores(index, query)))
        assert index.named(query) == reference_named(index, query)


def test_find_symbol_is_named_and_scores_whole() -> None:
    index = NameIndex(_catalog(["find_symbol", "find_file", "symbol_info", "findSymbols"]))
    assert index.named("find symbol please") == [0, 3]
    assert list(index.scores("find symbol")) == [2.0, 0.5, 0.5, 2.0]
