"""The embedder spec (``--embedder`` / ``HOLO_TUNE_EMBEDDER``) and the error an embedder raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from workbench.errors import HoloTuneError, InputError

EmbedderKind = Literal["openai", "azure_openai", "ollama", "local", "none"]
KINDS: tuple[EmbedderKind, ...] = get_args(EmbedderKind)

#: The forms a spec takes, as the error messages and ``--help`` name them.
SPEC_FORMS = "openai:MODEL, azure_openai:DEPLOYMENT, ollama:MODEL, local:NAME_OR_PATH or none"

#: Where a spec comes from when nothing else is said (the flag's name).
FLAG = "--embedder"
ENV_VAR = "HOLO_TUNE_EMBEDDER"


class EmbeddingError(HoloTuneError):
    """An embedding request failed (network, HTTP status, bad response, model load).

    The message is one line and never contains an API key. HoloDeck falls back to BM25 when
    embedding fails, so the search engine catches this and shows the fallback.
    """


@dataclass(frozen=True)
class EmbedderSpec:
    """A parsed spec: the kind and its argument (a model, deployment, name or path)."""

    kind: EmbedderKind
    model: str | None = None

    def __str__(self) -> str:
        return self.kind if self.model is None else f"{self.kind}:{self.model}"


NONE = EmbedderSpec("none")

_KIND_OF: dict[str, EmbedderKind] = {kind: kind for kind in KINDS if kind != "none"}


def parse_spec(spec: str, *, source: str = FLAG) -> EmbedderSpec:
    """Parse ``KIND:ARG`` (split at the first colon: Ollama tags and paths keep theirs) or ``none``.

    ``source`` names where the spec came from (``--embedder`` or ``HOLO_TUNE_EMBEDDER``) so that
    the one-line error points the user at what to fix.
    """
    text = spec.strip()
    if text.lower() == "none":
        return NONE
    head, sep, arg = text.partition(":")
    kind = _KIND_OF.get(head.strip().lower())
    arg = arg.strip()
    if kind is None:
        raise InputError(f"unknown embedder {spec!r}: use {SPEC_FORMS}", field=source)
    if not sep or not arg:
        raise InputError(f"{kind} needs a name after the colon: use {SPEC_FORMS}", field=source)
    return EmbedderSpec(kind, arg)
