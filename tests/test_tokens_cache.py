"""Token counts cached on disk: a start whose tool texts were counted before builds no encoding.

Counted with the real o200k_base on bfcl's real tools (tests/data/datasets/bfcl); the reference
is the encoding itself, never the cache.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import workbench.tokens.cache as token_cache
from workbench.cachefile import text_key
from workbench.catalog.models import Catalog
from workbench.search.serving import answer_tokens, result_text
from workbench.search.strategies.base import definitions_tokens
from workbench.tokens import TokenCountCache, text_counts, token_table
from workbench.tokens.cache import (
    cached_lengths,
    default_cache_dir,
    encoded_lengths,
    encoding_identity,
    forget,
)
from workbench.tokens.count import count_functions, tool_function
from workbench.tokens.encodings import SPECS, get_encoding
from workbench.tokens.formats import FORMATS
from workbench.workspace import open_workspace

ROOT = Path(__file__).resolve().parents[1]
BFCL = ROOT / "tests" / "data" / "datasets" / "bfcl"
ENCODING = "o200k_base"
PROVIDER, MODEL = "openai", "gpt-4o"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return open_workspace(
        BFCL / "agent.yaml", catalog_file=BFCL / "catalog.json", embedder_spec="none"
    ).catalog


def uncached(catalog: Catalog) -> np.ndarray[Any, Any]:
    """The reference: every tool counted with the encoding itself, no cache anywhere."""
    functions = [tool_function(tool) for tool in catalog.tools]
    return count_functions(functions, get_encoding(ENCODING), FORMATS["gpt-4o"])


def test_a_warm_cache_builds_no_encoding_and_counts_the_same(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = uncached(catalog)
    cold = token_table(catalog, PROVIDER, MODEL, TokenCountCache(tmp_path))
    np.testing.assert_array_equal(cold.per_tool, reference)
    assert TokenCountCache(tmp_path).count(encoding_identity(ENCODING)) > len(catalog)

    def refuse(name: str) -> NoReturn:
        raise AssertionError(f"the encoding {name} was built")

    monkeypatch.setattr(token_cache, "get_encoding", refuse)
    warm = token_table(catalog, PROVIDER, MODEL, TokenCountCache(tmp_path))
    np.testing.assert_array_equal(warm.per_tool, reference)
    assert (warm.all, warm.encoding, warm.overhead) == (cold.all, cold.encoding, cold.overhead)


def test_only_the_new_texts_are_counted(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = TokenCountCache(tmp_path)
    part = Catalog(tools=catalog.tools[:100], servers=catalog.servers)
    token_table(part, PROVIDER, MODEL, cache)
    counted: list[str] = []
    real = token_cache.encoded_lengths

    def spy(texts: list[str], encoding: Any) -> dict[str, int]:
        counted.extend(texts)
        return real(texts, encoding)

    monkeypatch.setattr(token_cache, "encoded_lengths", spy)
    grown = Catalog(tools=catalog.tools[:150], servers=catalog.servers)
    table = token_table(grown, PROVIDER, MODEL, cache)
    np.testing.assert_array_equal(table.per_tool, uncached(grown))
    named = {text.split(":", 1)[0] for text in counted}  # a function's text: "name:description"
    assert not named & {tool.full_name for tool in part.tools}
    assert {tool.full_name for tool in grown.tools[100:]} <= named


def test_what_a_replica_counts_at_start_comes_from_a_warm_cache(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a replica counts at start (the table, each tool's answer, the meta tools), all from
    the disk: the counts the encoding gives."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    table = token_table(catalog, PROVIDER, MODEL)
    answers = answer_tokens(catalog, table)
    meta = definitions_tokens(table, [{"name": "search_tools", "description": "Find tools."}])
    encoding = get_encoding(ENCODING)
    expected = [len(encoding.encode_ordinary(result_text([tool]))) for tool in catalog.tools]
    np.testing.assert_array_equal(answers, np.array(expected, dtype=np.float64))

    def refuse(name: str) -> NoReturn:
        raise AssertionError(f"the encoding {name} was built")

    monkeypatch.setattr(token_cache, "get_encoding", refuse)
    again = token_table(catalog, PROVIDER, MODEL)
    np.testing.assert_array_equal(again.per_tool, table.per_tool)
    np.testing.assert_array_equal(answer_tokens(catalog, again), answers)
    assert definitions_tokens(again, [{"name": "search_tools", "description": "Find tools."}]) == (
        meta
    )
    assert (tmp_path / "holo-tune" / "tokens" / TokenCountCache.FILENAME).is_file()


_WARM_RUN = """
import sys
import workbench.tokens.encodings as encodings

def refuse(*args, **kwargs):
    raise SystemExit("the rank file was read")

encodings.read_bundled = refuse
from workbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_second_search_command_never_reads_the_rank_file(tmp_path: Path) -> None:
    """`holo-tune search --runtime serve` on bfcl, twice: the second process counts its tools,
    their answers and its own answer from the disk (its rank file made unreadable)."""
    args = [
        "search",
        str(BFCL / "agent.yaml"),
        "weather",
        "--runtime",
        "serve",
        "--catalog",
        str(BFCL / "catalog.json"),
    ]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    first = subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        [sys.executable, "-c", _WARM_RUN, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert "tokens:" in second.stdout


# -- a cache that cannot be used costs a count, never a wrong one -----------------------------


def test_a_garbage_cache_file_still_counts_right(
    catalog: Catalog, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / TokenCountCache.FILENAME).write_bytes(b"this is not sqlite" * 100)
    with caplog.at_level(logging.WARNING):
        table = token_table(catalog, PROVIDER, MODEL, TokenCountCache(tmp_path))
    np.testing.assert_array_equal(table.per_tool, uncached(catalog))
    assert "token count cache" in caplog.text


def test_a_folder_that_is_a_file_still_counts_right(catalog: Catalog, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    cache = TokenCountCache(blocked / "tokens")
    for _ in range(2):
        table = token_table(catalog, PROVIDER, MODEL, cache)
        np.testing.assert_array_equal(table.per_tool, uncached(catalog))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_folder_still_counts_right(catalog: Catalog, tmp_path: Path) -> None:
    folder = tmp_path / "tokens"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        table = token_table(catalog, PROVIDER, MODEL, TokenCountCache(folder))
        np.testing.assert_array_equal(table.per_tool, uncached(catalog))
        assert not (folder / TokenCountCache.FILENAME).exists()
    finally:
        folder.chmod(0o700)


def test_rows_that_are_not_counts_are_counted_again(tmp_path: Path) -> None:
    texts = ["alpha", "beta gamma", "delta", "epsilon zeta eta"]
    cache = TokenCountCache(tmp_path)
    right = cached_lengths(texts, ENCODING, cache)
    identity = encoding_identity(ENCODING)
    with sqlite3.connect(cache.path) as db:
        for text, bad in zip(texts, ["many", -3, 2.5, None], strict=True):
            if bad is None:
                db.execute("DELETE FROM counts WHERE text_sha256 = ?", [text_key(text)])
            else:
                db.execute(
                    "UPDATE counts SET tokens = ? WHERE encoding = ? AND text_sha256 = ?",
                    [bad, identity, text_key(text)],
                )
    assert cache.get(identity, [text_key(t) for t in texts]) == right_keys(texts, right)
    forget()  # as another process reads the file
    assert cache.get(identity, [text_key(t) for t in texts]) == {}
    assert cached_lengths(texts, ENCODING, cache) == right
    assert cache.get(identity, [text_key(t) for t in texts]) == right_keys(texts, right)


def right_keys(texts: list[str], right: dict[str, int]) -> dict[str, int]:
    return {text_key(t): right[t] for t in texts}


# -- a count is read only for the encoding that made it ---------------------------------------


def test_the_identity_changes_with_anything_a_count_depends_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = SPECS[ENCODING]
    before = encoding_identity(ENCODING)
    assert before != encoding_identity("cl100k_base")
    changed = [
        dataclasses.replace(spec, sha256="0" * 64),
        dataclasses.replace(spec, pat_str=spec.pat_str + r"|\s"),
    ]
    for other in changed:
        monkeypatch.setitem(SPECS, ENCODING, other)
        assert encoding_identity(ENCODING) != before
    monkeypatch.setitem(SPECS, ENCODING, spec)
    assert encoding_identity(ENCODING) == before
    monkeypatch.setattr(token_cache, "COUNT_RULE", token_cache.COUNT_RULE + 1)
    assert encoding_identity(ENCODING) != before


def test_a_count_of_another_rank_file_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = TokenCountCache(tmp_path)
    text = "the weather in Paris"
    stale = dataclasses.replace(SPECS[ENCODING], sha256="f" * 64)
    monkeypatch.setitem(SPECS, ENCODING, stale)
    cache.put(encoding_identity(ENCODING), {text_key(text): 999})
    monkeypatch.undo()
    assert cached_lengths([text], ENCODING, cache) == {
        text: len(get_encoding(ENCODING).encode_ordinary(text))
    }


# -- any text -----------------------------------------------------------------------------


#: Any character, lone surrogates (which a JSON file may hold) often.
CHARACTERS = st.one_of(st.characters(exclude_categories=()), st.characters(categories=["Cs"]))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(st.text(CHARACTERS, max_size=40), max_size=12))
@example(texts=["\ud800 lone surrogate", "\ufffd lone surrogate", "<|endoftext|>", ""])
def test_any_text_counts_as_the_encoding_counts_it(texts: list[str], tmp_path: Path) -> None:
    encoding = get_encoding(ENCODING)
    expected = encoded_lengths(texts, encoding)
    cache = TokenCountCache(tmp_path)
    assert cached_lengths(texts, ENCODING, cache) == expected
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(token_cache, "get_encoding", _refuse)
        assert cached_lengths(texts, ENCODING, cache) == expected
        np.testing.assert_array_equal(
            text_counts(texts, ENCODING, cache), [expected[t] for t in texts]
        )


def _refuse(name: str) -> NoReturn:
    raise AssertionError(f"the encoding {name} was built")


def test_distinct_texts_have_distinct_keys() -> None:
    keys = {text_key(t) for t in ["\ud800", "\ufffd", "\ud83d\ude00", "\U0001f600", ""]}
    assert len(keys) == 5
    assert text_key("tool") == text_key("tool")


# -- one text at a time: from the disk until the process builds the encoding ----------------


def test_single_texts_go_through_the_disk_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = TokenCountCache(tmp_path)
    texts = [f"answer number {i}" for i in range(token_cache.TEXT_READS + 3)]
    encoding = get_encoding(ENCODING)
    expected = [len(encoding.encode_ordinary(text)) for text in texts]
    monkeypatch.setattr(token_cache, "_text_reads", itertools.count())
    assert [token_cache.text_count(text, ENCODING, cache) for text in texts] == expected
    # The first TEXT_READS were stored; the others were counted in memory only.
    keys = [text_key(text) for text in texts]
    assert set(cache.get(encoding_identity(ENCODING), keys)) == set(keys[: token_cache.TEXT_READS])
    # A new process reads them from the disk without building the encoding.
    monkeypatch.setattr(token_cache, "_text_reads", itertools.count())
    monkeypatch.setattr(token_cache, "get_encoding", _refuse)
    head = texts[: token_cache.TEXT_READS]
    assert [token_cache.text_count(t, ENCODING, cache) for t in head] == expected[: len(head)]


def test_the_default_cache_lives_under_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "holo-tune" / "tokens"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir({}).parts[-3:] == (".cache", "holo-tune", "tokens")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert TokenCountCache.default().path == (
        tmp_path / "holo-tune" / "tokens" / TokenCountCache.FILENAME
    )


def _counter(directory: str, worker: int) -> None:
    texts = [f"shared text {i}" for i in range(200)] + [f"text of worker {worker}"]
    for _ in range(5):
        cached_lengths(texts, ENCODING, TokenCountCache(directory))


def test_concurrent_processes_share_one_cache(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_counter, args=(str(tmp_path), w)) for w in range(3)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
    assert [p.exitcode for p in workers] == [0, 0, 0]
    cache = TokenCountCache(tmp_path)
    assert cache.count(encoding_identity(ENCODING)) == 200 + 3
    texts = [f"shared text {i}" for i in range(200)] + [f"text of worker {w}" for w in range(3)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(token_cache, "get_encoding", _refuse)
        assert cached_lengths(texts, ENCODING, cache) == encoded_lengths(
            texts, get_encoding(ENCODING)
        )
    with sqlite3.connect(cache.path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_count_seen_in_this_process_is_not_read_from_the_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine counts its meta tools each time it is built (hundreds in a sweep): the counts
    read or stored once come from memory after (0.8 ms through SQLite, 0.1 ms here), for any
    cache object on the same file; another file, or a forgotten process memory, reads again."""
    from workbench.cachefile import CacheFile

    texts = ["alpha", "beta gamma", "delta"]
    right = cached_lengths(texts, ENCODING, TokenCountCache(tmp_path))
    reads: list[Path] = []
    select = CacheFile.select

    def counted(self: CacheFile, *args: Any, **kwargs: Any) -> Any:
        reads.append(self.path)
        return select(self, *args, **kwargs)

    monkeypatch.setattr(CacheFile, "select", counted)
    assert cached_lengths(texts, ENCODING, TokenCountCache(tmp_path)) == right
    assert reads == []
    assert cached_lengths(texts, ENCODING, TokenCountCache(tmp_path / "other")) == right
    forget()
    assert cached_lengths(texts, ENCODING, TokenCountCache(tmp_path)) == right
    assert len(reads) == 2
