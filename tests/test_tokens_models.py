"""Model -> encoding: OpenAI models exact with their own tokenizer, others estimates."""

from __future__ import annotations

import pytest

from workbench.tokens.models import EncodingChoice, choose_encoding


@pytest.mark.parametrize(
    ("provider", "model", "encoding", "family"),
    [
        ("openai", "gpt-4o", "o200k_base", "gpt-4o"),
        ("openai", "gpt-4o-mini", "o200k_base", "gpt-4o"),
        ("openai", "gpt-4o-2024-08-06", "o200k_base", "gpt-4o"),
        ("openai", "chatgpt-4o-latest", "o200k_base", "gpt-4o"),
        ("openai", "gpt-4.1", "o200k_base", "gpt-4o"),
        ("openai", "gpt-4.1-nano", "o200k_base", "gpt-4o"),
        ("openai", "gpt-5", "o200k_base", "gpt-4o"),
        ("openai", "gpt-5-mini", "o200k_base", "gpt-4o"),
        ("openai", "o1", "o200k_base", "gpt-4o"),
        ("openai", "o1-preview", "o200k_base", "gpt-4o"),
        ("openai", "o3-mini", "o200k_base", "gpt-4o"),
        ("openai", "o4-mini", "o200k_base", "gpt-4o"),
        ("openai", "GPT-4o", "o200k_base", "gpt-4o"),
        ("openai", "gpt-4", "cl100k_base", "gpt-4"),
        ("openai", "gpt-4-0613", "cl100k_base", "gpt-4"),
        ("openai", "gpt-4-turbo", "cl100k_base", "gpt-4"),
        ("openai", "gpt-4-32k", "cl100k_base", "gpt-4"),
        ("openai", "gpt-3.5-turbo", "cl100k_base", "gpt-4"),
        ("openai", "gpt-3.5-turbo-0125", "cl100k_base", "gpt-4"),
        ("azure_openai", "gpt-4o", "o200k_base", "gpt-4o"),
        ("azure_openai", "prod-gpt-4o-mini", "o200k_base", "gpt-4o"),
        ("azure_openai", "gpt-35-turbo", "cl100k_base", "gpt-4"),
        ("azure_openai", "gpt4-turbo-eastus", "cl100k_base", "gpt-4"),
    ],
)
def test_openai_models_are_exact(provider: str, model: str, encoding: str, family: str) -> None:
    choice = choose_encoding(provider, model)
    assert (choice.name, choice.exact, choice.family) == (encoding, True, family)
    assert choice.note.startswith("exact")


@pytest.mark.parametrize(
    ("provider", "model", "encoding", "phrase"),
    [
        ("anthropic", "claude-sonnet-4-5", "cl100k_base", "Anthropic's tokenizer"),
        ("anthropic", "claude-3-5-haiku-latest", "cl100k_base", "Anthropic's tokenizer"),
        ("ollama", "llama3.2:3b", "cl100k_base", "its own tokenizer"),
        ("ollama", "qwen2.5:7b", "cl100k_base", "its own tokenizer"),
        ("azure_openai", "my-chat-deployment", "o200k_base", "Azure deployment"),
        ("openai", "davinci-custom", "o200k_base", "names no known OpenAI model"),
    ],
)
def test_other_models_are_estimates(provider: str, model: str, encoding: str, phrase: str) -> None:
    choice = choose_encoding(provider, model)
    assert choice.name == encoding
    assert choice.exact is False
    assert choice.note.startswith("estimate")
    assert phrase in choice.note


def test_ollama_model_named_like_gpt_is_still_an_estimate() -> None:
    """The provider decides: an Ollama model is never billed by OpenAI's tokenizer."""
    assert choose_encoding("ollama", "gpt-oss:20b").exact is False


def test_non_4o_o200k_models_say_their_framing_is_borrowed() -> None:
    assert "gpt-4o" in choose_encoding("openai", "gpt-5").note
    assert choose_encoding("openai", "gpt-4o").note == "exact"


def test_choice_is_a_value() -> None:
    assert choose_encoding("openai", "gpt-4o") == EncodingChoice("o200k_base", True, "exact")
