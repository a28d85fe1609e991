"""Which encoding, and which function-calling framing, a model's tool definitions are counted with.

OpenAI models are counted with their own tokenizer (exact). Other providers' tokenizers are not
public or not tiktoken (Anthropic, the many Ollama models), so their counts are estimates made
with cl100k_base (a 100k BPE vocabulary, the nearest common proxy for both Claude and Llama-family
tokenizers) and said to be estimates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Family = Literal["gpt-4o", "gpt-4"]

#: Models on o200k_base: gpt-4o (and chatgpt-4o), gpt-4.1, gpt-4.5, gpt-5*, the o-series.
_O200K = re.compile(
    r"""
    gpt-?4o | chatgpt-?4o | gpt-?4\.[15] | gpt-?4[15]\b | gpt-?5
    | (?<![a-z0-9])o[1-9](?![0-9])          # o1, o3-mini, o4-mini (not the "4o" of gpt-4o)
    """,
    re.VERBOSE,
)
#: Models on cl100k_base: gpt-4 (-turbo, -32k, dated), gpt-3.5 (Azure spells it gpt-35).
_CL100K = re.compile(r"gpt-?4(?![0-9.o])|gpt-?3\.?5")

_ESTIMATE_ENCODING = "cl100k_base"
_UNKNOWN_OPENAI_ENCODING = "o200k_base"


@dataclass(frozen=True, slots=True)
class EncodingChoice:
    """The encoding a model's tool definitions are counted with, and how far to trust the count.

    ``exact`` is True when ``name`` is the model's own tokenizer; ``note`` says why in a phrase the
    UI can show. ``family`` picks the cookbook's function-calling constants (see ``formats``).
    """

    name: str
    exact: bool
    note: str
    family: Family = "gpt-4o"


def choose_encoding(provider: str, model_name: str) -> EncodingChoice:
    """The encoding for ``model_name`` served by ``provider`` (HoloDeck's provider names).

    Azure OpenAI deployments are mapped by the name given (a deployment named after its model,
    e.g. ``gpt-4o-mini`` or ``prod-gpt-35-turbo``, maps like the model; any other name is an
    estimate with o200k_base, the encoding of every current OpenAI model).
    """
    provider_key = provider.strip().lower()
    model = model_name.strip().lower()
    if provider_key == "anthropic":
        return EncodingChoice(
            _ESTIMATE_ENCODING,
            exact=False,
            note=f"estimate: Anthropic's tokenizer is not public; {_ESTIMATE_ENCODING} stands in",
        )
    if provider_key == "ollama":
        return EncodingChoice(
            _ESTIMATE_ENCODING,
            exact=False,
            note=f"estimate: {model_name} has its own tokenizer; {_ESTIMATE_ENCODING} stands in",
        )
    openai_choice = _openai_choice(model)
    if openai_choice is not None:
        return openai_choice
    where = "Azure deployment" if provider_key == "azure_openai" else "model"
    return EncodingChoice(
        _UNKNOWN_OPENAI_ENCODING,
        exact=False,
        note=f"estimate: {where} {model_name!r} names no known OpenAI model; "
        f"{_UNKNOWN_OPENAI_ENCODING} assumed",
    )


def _openai_choice(model: str) -> EncodingChoice | None:
    """An OpenAI model recognised by name, or None."""
    if _O200K.search(model):
        family_note = "" if "4o" in model else "; tool framing as gpt-4o (cookbook)"
        return EncodingChoice("o200k_base", exact=True, note=f"exact{family_note}", family="gpt-4o")
    if _CL100K.search(model):
        return EncodingChoice("cl100k_base", exact=True, note="exact", family="gpt-4")
    return None
