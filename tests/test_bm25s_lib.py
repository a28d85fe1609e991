"""bm25s as every part of holo-tune imports it (:mod:`workbench.search.bm25s_lib`): without
scipy, its indexes' columns built with numpy, and those columns the same bits as scipy's on
every shared set (the lab and serve score alike however bm25s came to be imported)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse
from oracle.catalogs import load_cases, load_dataset_catalog

from workbench.search.bm25s_lib import bm25s, new_index
from workbench.search.holo.settings import DEFAULT_FIELDS
from workbench.search.holo.text import documents, words
from workbench.search.strategies.base import bm25s_index

SETS = ["bfcl", "livemcpbench", "metatool", "stackone", "azure_mcp"]


def _columns(index: bm25s.BM25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    scores = index.scores
    return scores["data"], scores["indices"], scores["indptr"]


@pytest.mark.parametrize("name", SETS)
def test_numpys_columns_are_scipys_on_every_shared_set(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holo engine's weighted documents and a runtime's plain texts, indexed both ways:
    the same arrays (the scores' dtype too; scipy keeps its positions as int32, numpy as
    int64), so the same score, bit for bit, for each of the set's queries."""
    # bm25s was imported without scipy (bm25s_lib): the oracle's columns get scipy back here
    monkeypatch.setattr(bm25s, "sp", scipy.sparse, raising=False)
    monkeypatch.setattr(bm25s, "SCIPY_AVAILABLE", True)
    tools = load_dataset_catalog(name).tools
    holo = [doc.tokens(DEFAULT_FIELDS) for doc in documents(tools)]
    plain = [f"{t.name} {t.description}" for t in tools]
    queries = [words(case["query"]) for case in load_cases(name, limit=60)]
    for label in ("holo", "plain"):
        ours, oracle = new_index(), bm25s.BM25(csc_backend="scipy")
        for index in (ours, oracle):  # bm25s adds its empty token to a tokenized corpus: one each
            corpus = holo if label == "holo" else bm25s.tokenize(plain, show_progress=False)
            index.index(corpus, show_progress=False)
        (data, *positions), (want_data, *want_positions) = _columns(ours), _columns(oracle)
        assert data.dtype == want_data.dtype == np.float32, label
        np.testing.assert_array_equal(data, want_data, err_msg=label)
        for got, want in zip(positions, want_positions, strict=True):
            np.testing.assert_array_equal(got, want, err_msg=label)
        # holo's index knows words; a tokenized corpus's knows ids (its vocabulary maps words)
        vocab = ours.vocab_dict if label == "holo" else corpus.vocab
        scored = 0
        for query in queries:
            known = [w if label == "holo" else vocab[w] for w in query if w in vocab]
            if known:
                got_scores, want_scores = ours.get_scores(known), oracle.get_scores(known)
                np.testing.assert_array_equal(got_scores, want_scores, err_msg=label)
                scored += int(got_scores.max() > 0)
        assert scored > len(queries) // 2, label
    assert bm25s_index([t.name for t in tools]) is not None


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_holo_tunes_search_imports_no_scipy_and_leaves_it_importable() -> None:
    """A process that imports serve (its command, app, server and engine) gets bm25s without
    scipy (0.2 s of a replica's start) or its progress bars' tqdm, and no scipy otherwise;
    scipy still imports afterwards for whoever needs it, and the environment is left as it
    was."""
    out = run_python(
        "import os, sys\n"
        "import workbench.search.holo.engine, workbench.search.strategies.anthropic\n"
        "import workbench.commands.serve, workbench.serve.app, workbench.serve.server\n"
        "from workbench.search.bm25s_lib import bm25s, new_index\n"
        "print('scipy' in sys.modules, 'tqdm' in sys.modules, bm25s.SCIPY_AVAILABLE,\n"
        "      'DISABLE_TQDM' in os.environ, new_index().csc_backend)\n"
        "import scipy.sparse\n"
        "print(scipy.sparse.csc_matrix((2, 2)).shape)\n"
    )
    assert out.splitlines() == ["False False False False numpy", "(2, 2)"]


def test_a_process_that_has_scipy_already_still_builds_numpys_columns() -> None:
    out = run_python(
        "import scipy.sparse\n"
        "from workbench.search.bm25s_lib import bm25s, new_index\n"
        "print(bm25s.SCIPY_AVAILABLE, new_index().csc_backend)\n"
    )
    assert out == "True numpy"
