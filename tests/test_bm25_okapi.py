"""HoloDeck's BM25 (``workbench/search/bm25.py``) against ``rank_bm25.BM25Okapi``, the plain Okapi
BM25 of another project, on the tools and queries of a real data set.

Both are Okapi BM25 with k1 = 1.5 and b = 0.75 (BM25Okapi's defaults): the same term frequency
saturation, the same length normalisation, a query's words summed in order, repeats included.
They differ in the idf: HoloDeck's is Lucene's ``ln((N - df + 0.5) / (df + 0.5) + 1)``, always
positive; BM25Okapi's is ``ln((N - df + 0.5) / (df + 0.5))``, floored at ``epsilon`` x the mean
idf for words in more than half the documents. So the reference is held two ways: with its idf
put to HoloDeck's (everything else its own code), every score is the same float; unchanged, a
one-word query ranks the tools the same wherever its idf is the formula's (the idf scales every
tool alike).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle.catalogs import load_cases, load_dataset_catalog
from rank_bm25 import BM25Okapi

from workbench.search.bm25 import K1, B, BM25Index
from workbench.search.hybrid import best_first
from workbench.search.tokenize import tokenize

DATASET = "livemcpbench"
QUERIES = 40


class LuceneIdfOkapi(BM25Okapi):
    """BM25Okapi with HoloDeck's idf: the only part of the formula the two do not share."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, df in nd.items():
            self.idf[word] = math.log((self.corpus_size - df + 0.5) / (df + 0.5) + 1)


@pytest.fixture(scope="module")
def corpus() -> tuple[BM25Index, list[list[str]], list[list[str]]]:
    """The data set's tools as the engine indexes them, and the tokens of some of its queries."""
    tools = load_dataset_catalog(DATASET).tools
    texts = [tool.search_text for tool in tools]
    docs = [tokenize(text) for text in texts]
    queries = [tokenize(case["query"]) for case in load_cases(DATASET, limit=QUERIES)]
    return BM25Index(texts), docs, queries


def test_every_score_is_okapis_with_holodecks_idf(
    corpus: tuple[BM25Index, list[list[str]], list[list[str]]],
) -> None:
    index, docs, queries = corpus
    reference = LuceneIdfOkapi(docs, k1=K1, b=B)
    assert reference.avgdl == index.avgdl and len(docs) == index.size > 100
    for query in queries:
        ours, theirs = index.raw_scores(query), reference.get_scores(query)
        assert np.array_equal(ours, theirs), query
        assert np.array_equal(best_first(ours), best_first(theirs))
    assert any(np.count_nonzero(index.raw_scores(q)) > 10 for q in queries)


def test_a_one_word_query_ranks_as_plain_okapi(
    corpus: tuple[BM25Index, list[list[str]], list[list[str]]],
) -> None:
    index, docs, queries = corpus
    plain = BM25Okapi(docs, k1=K1, b=B)
    words = {w for q in queries for w in q if 0 < sum(w in d for d in docs) < len(docs) / 2}
    assert len(words) > 50
    for word in sorted(words):
        ours, theirs = index.raw_scores([word]), plain.get_scores([word])
        found = np.flatnonzero(ours > 0)
        assert np.array_equal(found, np.flatnonzero(theirs > 0)), word
        assert np.array_equal(best_first(ours, found), best_first(theirs, found)), word
