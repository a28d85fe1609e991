"""The HTTP embedders against a real server on 127.0.0.1 that speaks each API."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from fake_embedding_server import (
    AZURE_DEPLOYMENT,
    AZURE_KEY,
    DIMENSION,
    OPENAI_KEY,
    FakeEmbeddingServer,
    Fault,
    vector_of,
)

from workbench.search.embedders import (
    AzureOpenAIEmbedder,
    EmbeddingError,
    HttpSettings,
    OllamaEmbedder,
    OpenAIEmbedder,
    RetryPolicy,
)
from workbench.search.embedders.ollama import ollama_base_url
from workbench.search.types import Embedder

TEXTS = ["get the weather in Paris", "send an email", "list files in a folder"]
NO_WAIT = RetryPolicy(max_retries=2, base_delay=0.0, max_delay=0.0)


@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with FakeEmbeddingServer() as running:
        yield running


@pytest.fixture
def waits() -> list[float]:
    return []


def settings(**changes: object) -> HttpSettings:
    base: dict[str, object] = {"timeout": 5.0, "batch_size": 128, "retry": NO_WAIT}
    base.update(changes)
    return HttpSettings(**base)  # type: ignore[arg-type]


def openai(server: FakeEmbeddingServer, waits: list[float], **changes: object) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        "text-embedding-3-small",
        api_key=OPENAI_KEY,
        base_url=f"{server.url}/v1",
        settings=settings(**changes),
        sleep=waits.append,
    )


def expected(model: str, texts: list[str]) -> np.ndarray:
    return np.array([vector_of(model, t) for t in texts], dtype=np.float64)


# -- OpenAI ----------------------------------------------------------------------------------


def test_openai_sends_the_api_shape_and_returns_rows_in_order(
    server: FakeEmbeddingServer, waits: list[float]
) -> None:
    embedder = openai(server, waits)
    assert isinstance(embedder, Embedder)
    vectors = embedder.embed(TEXTS)
    assert vectors.dtype == np.float64 and vectors.shape == (3, DIMENSION)
    np.testing.assert_array_equal(vectors, expected("text-embedding-3-small", TEXTS))
    (seen,) = server.requests
    assert seen.path == "/v1/embeddings"
    assert seen.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert seen.body == {
        "model": "text-embedding-3-small",
        "input": TEXTS,
        "encoding_format": "float",
    }
    assert embedder.spec == "openai:text-embedding-3-small"
    assert embedder.model_id.startswith("openai:text-embedding-3-small@127.0.0.1:")


def test_openai_batches_and_keeps_order(server: FakeEmbeddingServer, waits: list[float]) -> None:
    texts = [f"text {i}" for i in range(5)]
    vectors = openai(server, waits, batch_size=2).embed(texts)
    assert [len(r.body["input"]) for r in server.requests] == [2, 2, 1]
    np.testing.assert_array_equal(vectors, expected("text-embedding-3-small", texts))


def test_openai_wrong_key_is_a_clear_error_that_never_shows_the_key(
    server: FakeEmbeddingServer,
) -> None:
    wrong = "sk-wrong-secret-key-987654321"
    embedder = OpenAIEmbedder(
        "text-embedding-3-small",
        api_key=wrong,
        base_url=f"{server.url}/v1",
        settings=settings(),
    )
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["hi"])
    message = str(caught.value)
    assert "HTTP 401" in message and "check the API key" in message
    assert wrong not in message and wrong not in repr(embedder)
    assert len(server.requests) == 1  # 401 is not retried


def test_openai_unknown_model_says_so(server: FakeEmbeddingServer, waits: list[float]) -> None:
    embedder = OpenAIEmbedder(
        "missing-model", api_key=OPENAI_KEY, base_url=f"{server.url}/v1", settings=settings()
    )
    with pytest.raises(EmbeddingError, match=r"HTTP 404 .*does not exist"):
        embedder.embed(["hi"])


def test_429_then_success_retries_after_the_servers_delay(
    server: FakeEmbeddingServer, waits: list[float]
) -> None:
    server.fail_next(Fault(429, headers={"Retry-After": "0.25"}))
    policy = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=1.0)
    vectors = openai(server, waits, retry=policy).embed(["hi"])
    np.testing.assert_array_equal(vectors, expected("text-embedding-3-small", ["hi"]))
    assert server.count() == 2
    assert waits == [0.25]


def test_retry_after_ms_is_honoured(server: FakeEmbeddingServer, waits: list[float]) -> None:
    server.fail_next(Fault(429, headers={"retry-after-ms": "120", "Retry-After": "1"}))
    policy = RetryPolicy(max_retries=1, base_delay=0.01, max_delay=1.0)
    openai(server, waits, retry=policy).embed(["hi"])
    assert waits == [0.12]


def test_5xx_retries_with_bounded_backoff_then_gives_up(
    server: FakeEmbeddingServer, waits: list[float]
) -> None:
    server.fail_next(Fault(503), Fault(502), Fault(500, headers={"Retry-After": "120"}))
    policy = RetryPolicy(max_retries=2, base_delay=0.5, max_delay=0.75)
    with pytest.raises(
        EmbeddingError, match=r"HTTP 500 from http://127\.0\.0\.1:\d+/v1/embeddings"
    ):
        openai(server, waits, retry=policy).embed(["hi"])
    assert server.count() == 3
    assert waits == [0.5, 0.75]  # doubled, then capped


def test_a_timeout_is_an_embedding_error(server: FakeEmbeddingServer, waits: list[float]) -> None:
    server.fail_next(Fault(stall=1.0))
    embedder = openai(server, waits, timeout=0.2, retry=RetryPolicy(max_retries=0))
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.2 s"):
        embedder.embed(["hi"])


def test_a_timeout_is_retried(server: FakeEmbeddingServer, waits: list[float]) -> None:
    server.fail_next(Fault(stall=1.0))
    vectors = openai(server, waits, timeout=0.2).embed(["hi"])
    assert vectors.shape == (1, DIMENSION)
    assert server.count() == 2


def test_no_server_is_an_embedding_error(waits: list[float]) -> None:
    with FakeEmbeddingServer() as gone:
        url = gone.url
    embedder = OpenAIEmbedder(
        "m", api_key=OPENAI_KEY, base_url=f"{url}/v1", settings=settings(), sleep=waits.append
    )
    with pytest.raises(EmbeddingError, match=r"cannot reach http://127\.0\.0\.1"):
        embedder.embed(["hi"])


def test_a_short_answer_is_an_embedding_error(
    server: FakeEmbeddingServer, waits: list[float]
) -> None:
    server.fail_next(Fault(200, body={"data": [{"index": 0, "embedding": [1.0]}]}))
    with pytest.raises(EmbeddingError, match="expected 2 items"):
        openai(server, waits).embed(["a", "b"])


def test_no_texts_sends_nothing(server: FakeEmbeddingServer, waits: list[float]) -> None:
    assert openai(server, waits).embed([]).shape[0] == 0
    assert server.count() == 0


# -- Azure OpenAI ----------------------------------------------------------------------------


def test_azure_addresses_the_deployment_with_api_key_header(server: FakeEmbeddingServer) -> None:
    embedder = AzureOpenAIEmbedder(
        AZURE_DEPLOYMENT, endpoint=f"{server.url}/", api_key=AZURE_KEY, settings=settings()
    )
    vectors = embedder.embed(TEXTS)
    np.testing.assert_array_equal(vectors, expected(AZURE_DEPLOYMENT, TEXTS))
    (seen,) = server.requests
    assert seen.path == f"/openai/deployments/{AZURE_DEPLOYMENT}/embeddings"
    assert seen.query == {"api-version": ["2024-10-21"]}
    assert seen.headers["api-key"] == AZURE_KEY
    assert "authorization" not in seen.headers
    assert seen.body["input"] == TEXTS
    assert embedder.model_id.startswith(f"azure_openai:{AZURE_DEPLOYMENT}@127.0.0.1:")


def test_azure_uses_the_configured_api_version(server: FakeEmbeddingServer) -> None:
    embedder = AzureOpenAIEmbedder(
        AZURE_DEPLOYMENT,
        endpoint=server.url,
        api_key=AZURE_KEY,
        api_version="2025-01-01-preview",
        settings=settings(),
    )
    embedder.embed(["hi"])
    assert server.requests[0].query == {"api-version": ["2025-01-01-preview"]}


def test_azure_unknown_deployment(server: FakeEmbeddingServer) -> None:
    embedder = AzureOpenAIEmbedder(
        "nope", endpoint=server.url, api_key=AZURE_KEY, settings=settings()
    )
    with pytest.raises(EmbeddingError, match=r"HTTP 404 .*no such deployment .*deployment name"):
        embedder.embed(["hi"])


def test_azure_wrong_key_never_shows_the_key(server: FakeEmbeddingServer) -> None:
    embedder = AzureOpenAIEmbedder(
        AZURE_DEPLOYMENT, endpoint=server.url, api_key="azure-wrong-key", settings=settings()
    )
    with pytest.raises(EmbeddingError) as caught:
        embedder.embed(["hi"])
    assert "HTTP 401" in str(caught.value) and "azure-wrong-key" not in str(caught.value)


# -- Ollama ----------------------------------------------------------------------------------


def test_ollama_posts_an_input_list_to_api_embed(server: FakeEmbeddingServer) -> None:
    embedder = OllamaEmbedder("nomic-embed-text:latest", host=server.url, settings=settings())
    vectors = embedder.embed(TEXTS)
    np.testing.assert_array_equal(vectors, expected("nomic-embed-text:latest", TEXTS))
    (seen,) = server.requests
    assert seen.path == "/api/embed"
    assert seen.body == {"model": "nomic-embed-text:latest", "input": TEXTS}
    assert "authorization" not in seen.headers
    assert embedder.spec == embedder.model_id == "ollama:nomic-embed-text:latest"


def test_ollama_model_not_pulled(server: FakeEmbeddingServer) -> None:
    embedder = OllamaEmbedder("missing-model", host=server.url, settings=settings())
    with pytest.raises(EmbeddingError, match=r"HTTP 404 .*try pulling it first"):
        embedder.embed(["hi"])


def test_ollama_host_without_scheme_or_port(server: FakeEmbeddingServer) -> None:
    port = server.url.rsplit(":", 1)[1]
    embedder = OllamaEmbedder("m", host=f"127.0.0.1:{port}", settings=settings())
    assert embedder.embed(["hi"]).shape == (1, DIMENSION)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://localhost:11434"),
        ("", "http://localhost:11434"),
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("gpu-box:8080", "http://gpu-box:8080"),
        ("https://ollama.example/", "https://ollama.example"),
    ],
)
def test_ollama_host_forms(host: str | None, url: str) -> None:
    assert ollama_base_url(host) == url
