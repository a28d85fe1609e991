"""``bm25s`` for every part that uses it, imported without scipy, its indexes built with numpy.

bm25s imports ``scipy.sparse`` when it can, for one step: turning an index's (document, term,
score) triples into compressed columns. Without scipy it builds the same three arrays with numpy
(one sort), and that import is 0.2 s of a serve replica's start (scipy's array-API shim loads
numpy's ``ma``, ``testing`` and ``f2py`` too). So bm25s is imported here with ``scipy.sparse``
hidden when nothing has imported it yet (bm25s takes its absence as it documents), and with its
progress bars off (``DISABLE_TQDM``, read once at import: tqdm's import is not needed either).
Every index is built with numpy's columns (:func:`new_index`), whichever way bm25s was imported,
so an index and every score are the same bits in the lab and in serve: a test holds numpy's
columns equal to scipy's on every shared set.

Import bm25s from here (``from workbench.search.bm25s_lib import bm25s``), never directly: a
direct import before this one brings scipy back.
"""

from __future__ import annotations

import os
import sys


def _import_without_scipy() -> None:
    if "bm25s" in sys.modules:
        return
    hide = "scipy.sparse" not in sys.modules
    progress = os.environ.get("DISABLE_TQDM")
    if hide:
        sys.modules["scipy.sparse"] = None  # type: ignore[assignment]  # import fails at once
    os.environ["DISABLE_TQDM"] = "1"
    try:
        import bm25s  # noqa: F401
    except ImportError:  # a bm25s that needs scipy after all: imported with it below
        sys.modules.pop("bm25s", None)
    finally:
        if hide and sys.modules.get("scipy.sparse", 0) is None:
            del sys.modules["scipy.sparse"]
        if progress is None:
            os.environ.pop("DISABLE_TQDM", None)
        else:
            os.environ["DISABLE_TQDM"] = progress


_import_without_scipy()

import bm25s as bm25s  # noqa: E402  (imported above, or with scipy now)


def new_index() -> bm25s.BM25:
    """An empty BM25 index (bm25s' defaults: Lucene's variant, k1 1.5, b 0.75) whose columns are
    built with numpy, as in every process of holo-tune."""
    return bm25s.BM25(csc_backend="numpy")
