"""A sentence-transformers BERT model without torch: all-MiniLM-L6-v2 and any folder of its shape.

sentence-transformers needs torch, transformers and scikit-learn imported before its first
vector: 7 to 9 s on two cores, which a serve replica waits before it is ready, for a model whose
forward pass is a dozen matrix products. A folder of the common shape (``modules.json``: a BERT
``Transformer``, mean ``Pooling``, optionally ``Normalize``; weights in ``model.safetensors``;
the tokenizer in ``tokenizer.json``) runs here instead, in float32 as torch runs it: the same
vectors to float rounding (cosine 1 - 1e-7 on every bfcl query, held by a test against
sentence-transformers), loaded in a fifth of a second. Any other folder (MPNet, a pickled
``pytorch_model.bin``, CLS pooling, ...) is left to sentence-transformers: :func:`unsupported`
says why.

The encoder layers run on ONNX Runtime (:mod:`.bert_onnx`, a third faster) where it is installed,
else in numpy here (:func:`numpy_layers`); the tokens' embedding and the vector's normalisation are
numpy's either way. The libraries that read the files are the ones sentence-transformers loads
them with: ``tokenizers`` (the same tokenizer, Rust) and ``safetensors`` (the weight file's reader).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: float32 throughout (numpy's stubs widen a product's type).
Matrix = NDArray[np.floating[Any]]

#: A text's embedded tokens (tokens x width) to its pooled vector, not yet normalised.
Layers = Callable[[Matrix], Matrix]

#: What runs the encoder layers: ONNX Runtime, or numpy alone.
ONNXRUNTIME = "onnxruntime"
NUMPY = "numpy"

#: sentence-transformers' module types this backend runs, in the order it runs them.
_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class Layer:
    """One encoder layer's weights, transposed for ``x @ w`` and the three projections joined."""

    qkv_w: Matrix
    qkv_b: Matrix
    out_w: Matrix
    out_b: Matrix
    norm1_w: Matrix
    norm1_b: Matrix
    up_w: Matrix
    up_b: Matrix
    down_w: Matrix
    down_b: Matrix
    norm2_w: Matrix
    norm2_b: Matrix


@dataclass(frozen=True)
class Bert:
    """A BERT encoder's weights and shape."""

    words: Matrix
    positions: Matrix
    token_type: Matrix  # the first token type's row: sentence-transformers sends type 0 only
    norm_w: Matrix
    norm_b: Matrix
    layers: tuple[Layer, ...]
    heads: int
    eps: float

    @property
    def width(self) -> int:
        return int(self.words.shape[1])


def unsupported(folder: Path) -> str | None:
    """Why ``folder`` cannot run here (sentence-transformers loads it instead), or None."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        types = [str(m["type"]) for m in modules]
        paths = [str(m.get("path", "")) for m in modules]
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError) as err:
        return f"cannot read its modules.json / config.json ({err})"
    if types not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
        return f"modules {types} (runs Transformer, Pooling[, Normalize])"
    if paths[0] not in ("", "."):
        return "the transformer is in a subfolder"
    if config.get("model_type") != "bert":
        return f"model_type {config.get('model_type')!r} (runs bert)"
    if config.get("hidden_act") != "gelu":
        return f"hidden_act {config.get('hidden_act')!r} (runs gelu)"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return "relative position embeddings"
    try:
        pooling = json.loads((folder / paths[1] / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        return f"cannot read the pooling config ({err})"
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["pooling_mode_mean_tokens"]:
        return f"pooling {modes} (runs mean pooling)"
    for name in ("model.safetensors", "tokenizer.json"):
        if not (folder / name).is_file():
            return f"no {name}"
    return None


class BertModel:
    """The model in ``folder`` (one :func:`unsupported` accepts): :meth:`encode` texts, its
    encoder layers run by what ``layers`` makes of its weights (:func:`numpy_layers`, or ONNX
    Runtime's :class:`~.bert_onnx.OnnxLayers`)."""

    def __init__(self, folder: Path, layers: Callable[[Bert], Layers] | None = None) -> None:
        from threadpoolctl import threadpool_limits
        from tokenizers import Tokenizer

        # One BLAS thread for the process, from the load on: a product's last bits depend on
        # how many threads share it, so a text's vector would differ between a run on two and
        # one on one (a cache filled by tune, read by serve); and two OpenBLAS threads were
        # slower on a busy 2-core machine anyway (124 against 76 ms a bfcl tool at load 4).
        threadpool_limits(limits=1, user_api="blas")
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.bert = _read_weights(folder / "model.safetensors", config)
        self.layers: Layers = (layers or numpy_layers)(self.bert)
        self.normalize = _NORMALIZE in (folder / "modules.json").read_text(encoding="utf-8")
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(_max_length(folder, config))

    @property
    def dimension(self) -> int:
        return self.bert.width

    def encode(self, texts: Sequence[str]) -> Matrix:
        """The texts' vectors (one row each, float32), as sentence-transformers' ``encode``.

        Each text runs alone, unpadded, on one thread: as fast per text here as padded batches
        sorted by length (35 ms a bfcl tool on one core with numpy, either way), and a text's
        vector is the same bits whichever call of the same runner embeds it (a query, a tool
        among others, another run; ONNX Runtime's and numpy's differ at float rounding, 2e-7).
        ``encode``, not ``encode_batch``: the batch call wakes the tokenizer's thread pool,
        whose threads spin on the other core for longer than a query's tokens take.
        """
        out = np.empty((len(texts), self.bert.width), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = np.asarray(self.tokenizer.encode(text).ids, dtype=np.int64)
            pooled = self.layers(_embed(self.bert, ids))
            if self.normalize:
                pooled /= max(np.float32(np.linalg.norm(pooled)), np.float32(1e-12))
            out[row] = pooled
        return out


def numpy_layers(bert: Bert) -> Layers:
    """``bert``'s encoder layers and mean pooling in numpy (OpenBLAS for the products)."""

    def run(x: Matrix) -> Matrix:
        for layer in bert.layers:
            qkv = x @ layer.qkv_w
            qkv += layer.qkv_b
            x = _feed_forward(layer, _attention(qkv, bert.heads), x, bert.eps)
        pooled: Matrix = x.mean(axis=0, dtype=np.float32)
        return pooled

    return run


def _max_length(folder: Path, config: dict[str, Any]) -> int:
    """sentence-transformers' ``max_seq_length`` (tokens with the specials), else the model's."""
    try:
        st = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        return int(st["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return int(config.get("max_position_embeddings", 512))


def _read_weights(path: Path, config: dict[str, Any]) -> Bert:
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

    def get(name: str) -> Matrix:
        return np.ascontiguousarray(tensors[prefix + name], dtype=np.float32)

    def transposed(name: str) -> Matrix:
        return np.ascontiguousarray(get(name).T)

    layers = []
    for number in range(int(config["num_hidden_layers"])):
        at = f"encoder.layer.{number}."
        attention = at + "attention.self."
        layers.append(
            Layer(
                qkv_w=np.ascontiguousarray(
                    np.concatenate(
                        [get(f"{attention}{p}.weight") for p in ("query", "key", "value")]
                    ).T
                ),
                qkv_b=np.concatenate(
                    [get(f"{attention}{p}.bias") for p in ("query", "key", "value")]
                ),
                out_w=transposed(at + "attention.output.dense.weight"),
                out_b=get(at + "attention.output.dense.bias"),
                norm1_w=get(at + "attention.output.LayerNorm.weight"),
                norm1_b=get(at + "attention.output.LayerNorm.bias"),
                up_w=transposed(at + "intermediate.dense.weight"),
                up_b=get(at + "intermediate.dense.bias"),
                down_w=transposed(at + "output.dense.weight"),
                down_b=get(at + "output.dense.bias"),
                norm2_w=get(at + "output.LayerNorm.weight"),
                norm2_b=get(at + "output.LayerNorm.bias"),
            )
        )
    return Bert(
        words=get("embeddings.word_embeddings.weight"),
        positions=get("embeddings.position_embeddings.weight"),
        token_type=get("embeddings.token_type_embeddings.weight")[0],
        norm_w=get("embeddings.LayerNorm.weight"),
        norm_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        heads=int(config["num_attention_heads"]),
        eps=float(config.get("layer_norm_eps", 1e-12)),
    )


def _embed(bert: Bert, ids: NDArray[np.int64]) -> Matrix:
    x = bert.words[ids] + bert.positions[: len(ids)] + bert.token_type
    return _layer_norm(x, bert.norm_w, bert.norm_b, bert.eps)


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    """``x`` normalised over its last axis, in place (every caller hands a temporary)."""
    scale = np.float32(1 / x.shape[-1])
    mean = np.add.reduce(x, axis=-1, keepdims=True)
    mean *= scale
    x -= mean
    variance = np.add.reduce(np.square(x), axis=-1, keepdims=True)
    variance *= scale
    variance += np.float32(eps)
    np.sqrt(variance, out=variance)
    x /= variance
    x *= weight
    x += bias
    return x


def _attention(qkv: Matrix, heads: int) -> Matrix:
    """Scaled dot-product attention of one text's ``qkv`` (tokens, 3 x width): (tokens, width)."""
    length, three = qkv.shape
    size = three // 3 // heads
    split = qkv.reshape(length, 3, heads, size)
    query = split[:, 0].transpose(1, 0, 2)
    key = split[:, 1].transpose(1, 2, 0)
    value = split[:, 2].transpose(1, 0, 2)
    scores = query @ key
    scores *= np.float32(1 / math.sqrt(size))
    _softmax(scores)
    return (scores @ value).transpose(1, 0, 2).reshape(length, heads * size)


def _softmax(scores: Matrix) -> None:
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)


def _feed_forward(layer: Layer, context: Matrix, x: Matrix, eps: float) -> Matrix:
    """Attention's output projection and the feed-forward block, each with its residual and norm."""
    attended: Matrix = context @ layer.out_w
    attended += layer.out_b
    attended += x
    attended = _layer_norm(attended, layer.norm1_w, layer.norm1_b, eps)
    hidden = attended @ layer.up_w
    hidden += layer.up_b
    _gelu(hidden)
    out = hidden @ layer.down_w
    out += layer.down_b
    out += attended
    return _layer_norm(out, layer.norm2_w, layer.norm2_b, eps)


# Abramowitz and Stegun 7.1.26: erf within 1.5e-7, float32's own rounding at erf's scale. In
# terms of |x| (z = x / sqrt 2): 1 - erf(|z|) = q(t) exp(-x^2 / 2), t = 1 / (1 + P |x|), and
# GELU(x) = x (1 + erf(z)) / 2 = max(x, 0) - |x| q(t) exp(-x^2 / 2) / 2: the halving is folded
# into q's coefficients. 20 passes over the array, the fewest numpy allows for this accuracy.
_P = np.float32(0.3275911 / math.sqrt(2))
_HALF_Q = tuple(
    np.float32(a / 2) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)


def _gelu(x: Matrix) -> None:
    """The exact (erf) GELU of ``x``, in place."""
    size = np.abs(x)
    t = size * _P
    t += np.float32(1)
    np.reciprocal(t, out=t)
    tail = t * _HALF_Q[0]
    for coefficient in _HALF_Q[1:]:
        tail += coefficient
        tail *= t
    np.square(x, out=t)
    t *= np.float32(-0.5)
    np.exp(t, out=t)
    tail *= t
    tail *= size
    np.maximum(x, np.float32(0), out=x)
    x -= tail
