"""The torch-free BERT backend's parts: its GELU against ``math.erf``, and which model folders it
takes (users hand us these folders: any JSON in them gives a reason or None, never a crash).
ONNX Runtime's pass against the numpy one, and the graph it keeps on disk. Its vectors against
sentence-transformers: tests/test_embedders_local.py."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provided import LOCAL_EXTRA

from workbench.search.embedders import bert_onnx
from workbench.search.embedders.bert import (
    Bert,
    Layer,
    _embed,
    _gelu,
    _layer_norm,
    numpy_layers,
    unsupported,
)
from workbench.search.embedders.bert_onnx import OnnxLayers, graph_name
from workbench.search.embedders.local import bundled_model_dir


def exact_gelu(x: float) -> float:
    return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))


def test_gelu_is_the_erf_gelu_to_float32_rounding() -> None:
    values = np.concatenate(
        [
            np.linspace(-12, 12, 20001),
            [0.0, -0.0, 1e-30, -1e-30, 1e-8, -1e-8, 40.0, -40.0, 1e6, -1e6],
        ]
    ).astype(np.float32)
    got = values.copy()
    _gelu(got)
    want = np.array([exact_gelu(float(v)) for v in values])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, atol=5e-7, rtol=2e-6)
    assert got.dtype == np.float32


def test_layer_norm_matches_its_definition() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 384)).astype(np.float32) * 4 + 2
    weight, bias = rng.standard_normal(384).astype(np.float32), rng.standard_normal(384)
    bias = bias.astype(np.float32)
    wide = x.astype(np.float64)
    centred = wide - wide.mean(axis=1, keepdims=True)
    want = centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-12) * weight + bias
    np.testing.assert_allclose(_layer_norm(x.copy(), weight, bias, 1e-12), want, atol=2e-5)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of MiniLM's configuration files (not its weights: only their presence counts)."""
    source = bundled_model_dir()
    target = tmp_path / "model"
    target.mkdir()
    for name in ("modules.json", "config.json", "tokenizer.json", "sentence_bert_config.json"):
        shutil.copy(source / name, target / name)
    shutil.copytree(source / "1_Pooling", target / "1_Pooling")
    (target / "model.safetensors").write_bytes(b"")
    return target


pytestmark = LOCAL_EXTRA


def edit(path: Path, change: dict[str, Any]) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))


def test_minilm_is_taken(folder: Path) -> None:
    assert unsupported(folder) is None


def test_without_normalize_is_taken_too(folder: Path) -> None:
    modules = json.loads((folder / "modules.json").read_text())
    (folder / "modules.json").write_text(json.dumps(modules[:2]))
    assert unsupported(folder) is None


@pytest.mark.parametrize(
    ("where", "change", "reason"),
    [
        ("config.json", {"model_type": "mpnet"}, "model_type 'mpnet' (runs bert)"),
        ("config.json", {"hidden_act": "gelu_new"}, "hidden_act 'gelu_new' (runs gelu)"),
        ("config.json", {"position_embedding_type": "relative_key"}, "relative position"),
        ("1_Pooling/config.json", {"pooling_mode_cls_token": True}, "pooling ["),
        ("1_Pooling/config.json", {"pooling_mode_mean_tokens": False}, "pooling []"),
    ],
)
def test_other_shapes_are_left_to_sentence_transformers(
    folder: Path, where: str, change: dict[str, Any], reason: str
) -> None:
    edit(folder / where, change)
    said = unsupported(folder)
    assert said is not None and said.startswith(reason)


def test_missing_files_are_named(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    assert unsupported(folder) == "no model.safetensors"  # a pickled pytorch_model.bin only


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    modules=JSON | st.just([{"type": "sentence_transformers.models.Transformer"}]),
    config=JSON | st.fixed_dictionaries({"model_type": st.just("bert")}, optional={"x": JSON}),
    garbage=st.binary(max_size=20),
)
def test_any_folder_contents_give_a_reason_or_none(
    folder: Path, modules: Any, config: Any, garbage: bytes
) -> None:
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "1_Pooling" / "config.json").write_bytes(garbage)
    said = unsupported(folder)
    assert said is None or (isinstance(said, str) and said)


def tiny_bert(seed: int = 5, *, layers: int = 2, width: int = 16, heads: int = 4) -> Bert:
    """A BERT of random weights, small enough to check a pass element by element."""
    rng = np.random.default_rng(seed)

    def m(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    return Bert(
        words=m(30, width),
        positions=m(12, width),
        token_type=m(width),
        norm_w=m(width) + 1,
        norm_b=m(width),
        layers=tuple(
            Layer(
                qkv_w=m(width, 3 * width),
                qkv_b=m(3 * width),
                out_w=m(width, width),
                out_b=m(width),
                norm1_w=m(width) + 1,
                norm1_b=m(width),
                up_w=m(width, 4 * width),
                up_b=m(4 * width),
                down_w=m(4 * width, width),
                down_b=m(width),
                norm2_w=m(width) + 1,
                norm2_b=m(width),
            )
            for _ in range(layers)
        ),
        heads=heads,
        eps=1e-12,
    )


def test_onnx_runtime_runs_the_layers_as_numpy_does(tmp_path: Path) -> None:
    """The graph built from a model's shape against the numpy pass, on random weights and
    texts of every length up to the positions' count (one token included)."""
    bert = tiny_bert()
    onnx_layers, numpy_pass = OnnxLayers(bert, cache=tmp_path), numpy_layers(bert)
    for length in range(1, 13):
        ids = np.arange(length, dtype=np.int64) * 7 % 30
        hidden = _embed(bert, ids)
        got = onnx_layers(hidden.copy())
        assert got.shape == (16,) and got.dtype == np.float32
        np.testing.assert_allclose(got, numpy_pass(hidden.copy()), atol=2e-6, rtol=1e-5)


def test_the_graph_is_kept_and_read_back_without_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second load of the same shape reads the kept graph (a replica's start imports no
    ``onnx``) and runs it to the same bits; another shape gets a graph of its own."""
    bert = tiny_bert()
    hidden = _embed(bert, np.arange(5, dtype=np.int64))
    first = OnnxLayers(bert, cache=tmp_path)(hidden.copy())
    kept = tmp_path / graph_name(bert)
    assert kept.is_file() and [p.name for p in tmp_path.iterdir()] == [kept.name]

    def no_build(_: Bert) -> bytes:
        raise AssertionError("built again")

    monkeypatch.setattr(bert_onnx, "build_graph", no_build)
    np.testing.assert_array_equal(OnnxLayers(bert, cache=tmp_path)(hidden.copy()), first)
    assert graph_name(tiny_bert(layers=3)) != kept.name
    assert graph_name(tiny_bert(heads=2)) != kept.name
    assert graph_name(tiny_bert(seed=6)) == kept.name  # the weights' values are not in it


def test_a_damaged_kept_graph_is_built_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bert = tiny_bert()
    hidden = _embed(bert, np.arange(4, dtype=np.int64))
    want = OnnxLayers(bert, cache=tmp_path)(hidden.copy())
    kept = tmp_path / graph_name(bert)
    good = kept.read_bytes()
    kept.write_bytes(good[: len(good) // 2])
    np.testing.assert_array_equal(OnnxLayers(bert, cache=tmp_path)(hidden.copy()), want)
    assert "does not load" in caplog.text and "built again" in caplog.text
    assert kept.read_bytes() == good


def test_a_cache_that_cannot_be_written_costs_only_the_build(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    bert = tiny_bert()
    hidden = _embed(bert, np.arange(3, dtype=np.int64))
    got = OnnxLayers(bert, cache=blocked)(hidden.copy())
    np.testing.assert_allclose(got, numpy_layers(bert)(hidden.copy()), atol=2e-6, rtol=1e-5)
    assert "cannot keep the model's graph" in caplog.text
    assert blocked.read_text() == "a file where the cache folder would be"


def test_an_edit_of_the_builders_code_builds_the_graph_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kept graph's name covers the builder's source, so a graph built by other code is
    never read (an edit that forgot to bump GRAPH_VERSION included); it is kept readable by
    every user, as any cache file."""
    bert = tiny_bert()
    OnnxLayers(bert, cache=tmp_path)
    kept = tmp_path / graph_name(bert)
    assert kept.stat().st_mode & 0o777 == 0o644
    monkeypatch.setattr(bert_onnx, "_code_digest", lambda: "another-build")
    assert graph_name(bert) != kept.name
