"""``--embedder`` / ``HOLO_TUNE_EMBEDDER`` specs: what parses, and the one-line errors."""

from __future__ import annotations

import pytest

from workbench.errors import InputError
from workbench.search.embedders import EmbedderSpec, parse_spec


@pytest.mark.parametrize(
    ("text", "kind", "model"),
    [
        ("openai:text-embedding-3-small", "openai", "text-embedding-3-small"),
        ("azure_openai:my-deployment", "azure_openai", "my-deployment"),
        ("ollama:nomic-embed-text:latest", "ollama", "nomic-embed-text:latest"),
        ("local:all-MiniLM-L6-v2", "local", "all-MiniLM-L6-v2"),
        ("local:./models/mini", "local", "./models/mini"),
        (" OpenAI:m ", "openai", "m"),
        ("none", "none", None),
        ("NONE", "none", None),
    ],
)
def test_specs_parse(text: str, kind: str, model: str | None) -> None:
    spec = parse_spec(text)
    assert (spec.kind, spec.model) == (kind, model)


def test_a_spec_prints_as_written() -> None:
    assert str(parse_spec("ollama:nomic-embed-text:latest")) == "ollama:nomic-embed-text:latest"
    assert str(EmbedderSpec("none")) == "none"


@pytest.mark.parametrize("text", ["openai", "openai:", "cohere:embed-v3", "", "local: ", "none:x"])
def test_bad_specs_name_the_flag(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_spec(text)
    message = str(caught.value)
    assert message.startswith("--embedder: ")
    assert "openai:MODEL" in message and "\n" not in message


def test_bad_spec_from_the_environment_names_the_variable() -> None:
    with pytest.raises(InputError, match=r"^HOLO_TUNE_EMBEDDER: unknown embedder 'bert'"):
        parse_spec("bert", source="HOLO_TUNE_EMBEDDER")
