"""A BERT encoder's layers run by ONNX Runtime: the same products as :mod:`.bert`'s numpy pass,
a third faster on one core.

numpy hands each product to OpenBLAS, which packs the weight matrix into its panel layout again on
every call (a quarter of a query's time) and runs the elementwise steps as separate passes over
memory; ONNX Runtime packs each weight once, when the session is made, and fuses the steps. A
20 to 27-token query: 10 ms against 15 ms on one core here. The vectors are the numpy pass's
to float rounding (and sentence-transformers', its oracle): bfcl's 2,230 answers did not change.

The graph is built here from the model's shape with the ``onnx`` package's helpers (the format's
own writer; a few hundred nodes) and kept on disk under holo-tune's cache, keyed by the shape, so
a replica's start reads 13 kB instead of importing ``onnx`` (0.2 s). The weights never go
through the graph: they are handed to the session as the arrays :mod:`.bert` read (ONNX
Runtime's external initializers), so the graph holds only their names and shapes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.cachefile import cache_home

if TYPE_CHECKING:
    from workbench.search.embedders.bert import Bert, Matrix

log = logging.getLogger(__name__)

#: Bump when the graph built below changes: a graph cached by an older build is not read.
GRAPH_VERSION = 1
#: The ONNX operator set the graph is written in (``Gelu`` needs 20).
OPSET = 20
_INPUT = "hidden"
_PROVIDERS = ["CPUExecutionProvider"]
_OUTPUT = "pooled"


def missing() -> str | None:
    """What ONNX Runtime's pass needs that is not installed, or None."""
    for module in ("onnxruntime", "onnx"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return None


class OnnxLayers:
    """``bert``'s encoder layers and mean pooling as one ONNX Runtime session on one thread:
    called with a text's embedded tokens (tokens x width, float32), gives the pooled vector."""

    def __init__(self, bert: Bert, *, cache: Path | None = None) -> None:
        import onnxruntime as ort

        weights = _weights(bert)
        options = ort.SessionOptions()
        # One thread, as numpy's pass: a vector's bits do not depend on a thread count, and a
        # search on a busy 2-core machine has no second core to take anyway.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3  # its warnings would draw over the dashboard
        names = list(weights)
        #: The arrays the session reads from: they must live as long as it does.
        self._values = [ort.OrtValue.ortvalue_from_numpy(weights[name]) for name in names]
        options.add_external_initializers(names, self._values)
        folder = cache_home() / "onnx" if cache is None else cache
        path = folder / graph_name(bert)
        try:
            kept: bytes | None = path.read_bytes()
        except OSError:
            kept = None
        if kept is not None:
            try:
                self._session = ort.InferenceSession(kept, options, providers=_PROVIDERS)
                return
            except Exception as err:  # a damaged file: ONNX Runtime raises its own kinds
                log.warning(
                    "the model's graph kept in %s does not load (%s): built again", path, err
                )
        graph = build_graph(bert)
        self._session = ort.InferenceSession(graph, options, providers=_PROVIDERS)
        _keep(path, graph)

    def __call__(self, hidden: Matrix) -> Matrix:
        (pooled,) = self._session.run([_OUTPUT], {_INPUT: hidden})
        return np.asarray(pooled, dtype=np.float32)


def _weights(bert: Bert) -> dict[str, Matrix]:
    """The arrays the graph names, by name (the layers' weights as :mod:`.bert` holds them)."""
    weights: dict[str, Matrix] = {}
    for number, layer in enumerate(bert.layers):
        for field in dataclasses.fields(layer):
            array = getattr(layer, field.name)
            weights[f"layer{number}.{field.name}"] = np.ascontiguousarray(array)
    return weights


def _shape(bert: Bert) -> tuple[int, int, int, float]:
    return len(bert.layers), bert.heads, bert.width, bert.eps


def graph_key(bert: Bert) -> str:
    """What the graph of ``bert`` depends on: the builder's version and code (this module's and
    :mod:`.bert`'s source, which lays the weights out: an edit to either builds the graph again,
    whether or not :data:`GRAPH_VERSION` was bumped), the heads, the norms' epsilon and every
    weight's name and shape (not the weights' values)."""
    shapes = ",".join(f"{name}:{'x'.join(map(str, a.shape))}" for name, a in _weights(bert).items())
    code = _code_digest()
    return f"v{GRAPH_VERSION} opset{OPSET} code{code} heads{bert.heads} eps{bert.eps!r} {shapes}"


@functools.cache
def _code_digest() -> str:
    """SHA-256 (16 hex digits) of the source of this module and of :mod:`.bert`; empty when
    it cannot be read (then :data:`GRAPH_VERSION` alone tells the builds apart)."""
    digest = hashlib.sha256()
    here = Path(__file__)
    try:
        for source in (here, here.with_name("bert.py")):
            digest.update(source.read_bytes())
    except OSError:
        return ""
    return digest.hexdigest()[:16]


def graph_name(bert: Bert) -> str:
    """The file name the graph of ``bert``'s shape is kept under (:func:`graph_key`'s digest)."""
    return f"bert-{hashlib.sha256(graph_key(bert).encode()).hexdigest()[:16]}.onnx"


def _keep(path: Path, graph: bytes) -> None:
    """Write ``graph`` to ``path`` whole or not at all; a cache that cannot be written costs only
    the build next time."""
    written: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as out:
            written = Path(out.name)
            out.write(graph)
        written.chmod(0o644)  # as any cache file: readable by the replicas of another user
        os.replace(written, path)
    except OSError as err:
        log.warning("cannot keep the model's graph in %s: %s", path.parent, err)
        if written is not None:
            with contextlib.suppress(OSError):
                written.unlink()


def build_graph(bert: Bert) -> bytes:
    """The encoder layers and mean pooling of ``bert``'s shape as an ONNX model (no weights)."""
    from onnx import TensorProto, helper, numpy_helper

    layers, heads, width, eps = _shape(bert)
    size = width // heads
    weights = _weights(bert)
    nodes: list[Any] = []
    constants = [
        numpy_helper.from_array(np.array([0, heads, size], dtype=np.int64), "split_heads"),
        numpy_helper.from_array(np.array([0, width], dtype=np.int64), "join_heads"),
        numpy_helper.from_array(np.array([width] * 3, dtype=np.int64), "qkv_sizes"),
        numpy_helper.from_array(np.array(1 / math.sqrt(size), dtype=np.float32), "scale"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "tokens_axis"),
    ]
    external = [_external(name, array, TensorProto) for name, array in weights.items()]

    def add(op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def linear(x: str, prefix: str, name: str) -> str:
        """``x @ PREFIX_w + PREFIX_b``."""
        return add("Add", [add("MatMul", [x, prefix + "_w"], name + "_mm"), prefix + "_b"], name)

    def norm(x: str, residual: str, prefix: str, name: str) -> str:
        """The layer norm of ``x + residual``, scaled by PREFIX_w and shifted by PREFIX_b."""
        summed = add("Add", [x, residual], name + "_residual")
        inputs = [summed, prefix + "_w", prefix + "_b"]
        return add("LayerNormalization", inputs, name, axis=-1, epsilon=eps)

    x = _INPUT
    for number in range(layers):
        w = f"layer{number}."
        at = f"l{number}."
        qkv = linear(x, w + "qkv", at + "qkv")
        parts = [at + "q", at + "k", at + "v"]
        nodes.append(
            helper.make_node("Split", [qkv, "qkv_sizes"], parts, name=at + "split", axis=1)
        )
        heads_of = {}
        for part, perm in zip(parts, ([1, 0, 2], [1, 2, 0], [1, 0, 2]), strict=True):
            split = add("Reshape", [part, "split_heads"], part + "_heads")
            heads_of[part] = add("Transpose", [split], part + "_t", perm=perm)
        scores = add("MatMul", [heads_of[at + "q"], heads_of[at + "k"]], at + "scores")
        scores = add("Mul", [scores, "scale"], at + "scaled")
        attention = add("Softmax", [scores], at + "softmax", axis=-1)
        context = add("MatMul", [attention, heads_of[at + "v"]], at + "context")
        context = add("Transpose", [context], at + "context_t", perm=[1, 0, 2])
        context = add("Reshape", [context, "join_heads"], at + "context_joined")
        attended = norm(linear(context, w + "out", at + "out"), x, w + "norm1", at + "norm1")
        hidden = add("Gelu", [linear(attended, w + "up", at + "up")], at + "gelu")  # erf GELU
        x = norm(linear(hidden, w + "down", at + "down"), attended, w + "norm2", at + "norm2")
    add("ReduceMean", [x, "tokens_axis"], _OUTPUT, keepdims=0)
    graph = helper.make_graph(
        nodes,
        "bert_layers",
        [helper.make_tensor_value_info(_INPUT, TensorProto.FLOAT, ["tokens", width])],
        [helper.make_tensor_value_info(_OUTPUT, TensorProto.FLOAT, [width])],
        [*constants, *external],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9  # what ONNX Runtime 1.16 and later read
    data: bytes = model.SerializeToString()
    return data


def _external(name: str, array: Matrix, tensor_proto: Any) -> Any:
    """A weight's entry in the graph: its name, type and shape; its values come from the session
    (``add_external_initializers``), never from a file."""
    entry = tensor_proto()
    entry.name = name
    entry.data_type = tensor_proto.FLOAT
    entry.dims.extend(array.shape)
    entry.data_location = tensor_proto.EXTERNAL
    for key, value in (("location", "session"), ("offset", "0"), ("length", str(array.nbytes))):
        item = entry.external_data.add()
        item.key, item.value = key, value
    return entry
