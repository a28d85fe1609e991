"""Fusion: each signal standardised per query (z-scores), weighted, summed.

Signals live on different scales (a cosine near 0.3, a BM25 of 12, a name share of 1.5); a
z-score puts each on its own spread over the catalog for this query, so a weight means the same
on every catalog. The query's own signals are ``dense``, ``lexical``, ``name``, ``neighbour`` and
``server_text`` (the cosine of the query to the tool's server's document: the server's name and
its tools' names in one text, so that a task a server is for lifts all its tools). Two signals
are derived from the others:

- ``server``: each tool also gets its server's best fused score (a tool is likelier when its
  server answers the query well, as in Tool-to-Agent retrieval);
- ``cost``: ``-ln`` of the tool's tokens (of two equally relevant tools, the cheaper), the same
  for every query.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from workbench.search.types import FloatArray, IntArray

#: The signals scored from the query itself, fused first; ``server`` and ``cost`` come after.
QUERY_SIGNALS = ("dense", "lexical", "name", "neighbour", "server_text")
SIGNALS = (*QUERY_SIGNALS, "server", "cost")


def zscore(values: FloatArray) -> FloatArray:
    """``(x - mean) / std`` over the catalog; all zeros when every tool scores the same."""
    if values.size == 0:
        return values.astype(np.float64)
    spread = float(values.std())
    if spread <= 1e-12:
        return np.zeros(values.shape, dtype=np.float64)
    return (values - float(values.mean())) / spread


def server_best(scores: FloatArray, server_of: IntArray, servers: int) -> FloatArray:
    """Each tool's server's best score (``server_of[i]``: tool i's server, 0..servers-1)."""
    best = np.full(servers, -np.inf, dtype=np.float64)
    np.maximum.at(best, server_of, scores)
    return best[server_of]


def cost_signal(tokens: FloatArray) -> FloatArray:
    """``-ln tokens`` of each tool, z-scored (0 for a catalog of one size)."""
    return zscore(-np.log(np.maximum(np.asarray(tokens, dtype=np.float64), 1.0)))


def fuse(
    raw: Mapping[str, FloatArray],
    weights: Mapping[str, float],
    server_of: IntArray,
    servers: int,
    cost: FloatArray,
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """The fused score of every tool and each signal's share of it (weight × z-score), for the
    signals with a weight and a value (a signal missing from ``raw`` adds nothing)."""
    size = server_of.shape[0]
    total = np.zeros(size, dtype=np.float64)
    shares: dict[str, FloatArray] = {}
    for name in QUERY_SIGNALS:
        weight = float(weights.get(name, 0.0))
        values = raw.get(name)
        if weight == 0.0 or values is None:
            continue
        shares[name] = weight * zscore(values)
        total += shares[name]
    weight = float(weights.get("server", 0.0))
    if weight and servers > 1:
        shares["server"] = weight * zscore(server_best(total, server_of, servers))
        total = total + shares["server"]
    weight = float(weights.get("cost", 0.0))
    if weight:
        shares["cost"] = weight * cost
        total = total + shares["cost"]
    return total, shares
