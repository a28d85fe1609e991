"""Every setting at once: method x top_k 1..50 x threshold 0.00..1.00, from cached rankings.

Each case is ranked once per method (:func:`score_cases`); what the selection needs of a ranking is
kept in a few small arrays (:class:`CaseScores`). The sweep then derives, for every top_k and
threshold together, how many search tools the runtime adds and what that sends, with numpy, never
calling the selection per setting. It must agree exactly with :func:`~workbench.search.selection.
select`, so here is the runtime's arithmetic (HoloDeck's ``filter_tools``) in closed form:

- ``F`` = the always-sent tools (``always_include`` matches and the top-N-used), ``m = |F|``;
- ``P(t)`` = tools scoring ``>= t``: a prefix of the ranking, since it is sorted best first;
- when ``k > m`` the runtime fetches the first ``min(P(t), k)`` ranked tools (its over-fetch
  ``remaining + m`` is ``k``) and adds those not in ``F`` until ``k`` are in, so it adds
  ``n(k, t) = min(#non-F tools among the first min(P(t), k), k - m)`` tools: the first ``n`` of
  the ranking with ``F`` removed; when ``k <= m`` it adds none.

So the selection of a case is ``F`` plus a prefix of its ``F``-free ranking, and every metric is a
lookup in a per-case table indexed by the prefix length ``n`` (0..50).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from workbench.catalog.models import Catalog
from workbench.config.filtering import (
    SEARCH_METHODS,
    TOP_K_MAX,
    TOP_N_USED_MAX,
    ToolFiltering,
)
from workbench.evaluate.cases import CaseSet, ResolvedCase
from workbench.evaluate.metrics import Metrics, Progress, Ranker, TokenCounts
from workbench.search.selection import match_always_include, top_n_used
from workbench.search.types import IntArray, Ranking

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: The swept grid: top_k 1..50 and thresholds 0.00..1.00 in steps of 0.01 (exact decimals:
#: ``i / 100`` is the same float as the literal ``0.i`` a YAML file holds).
TOP_KS: IntArray = np.arange(1, TOP_K_MAX + 1, dtype=np.int64)
THRESHOLDS: FloatArray = np.arange(101, dtype=np.int64) / 100.0
METRICS = ("recall", "hit", "tokens")
#: Cases processed together (bounds the memory of the case x passing x top_k arrays).
CHUNK = 256


def threshold_index(threshold: float) -> int | None:
    """Grid position of ``threshold`` (None when it is not one of 0.00, 0.01, ..., 1.00)."""
    hits = np.flatnonzero(threshold == THRESHOLDS)
    return int(hits[0]) if hits.size else None


# ------------------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class CaseScores:
    """One method's rankings of every case, reduced to what the selection arithmetic reads.

    ``head[c]`` is the first ``depth`` tools of case ``c``'s ranking, ``passing[c, j]`` how many
    tools score at least ``THRESHOLDS[j]``, ``group_rank[c, g]`` the 1-based rank of the
    best-ranked tool of expected group ``g`` (0 past the case's groups), and ``first_rank`` /
    ``top1`` the setting-free figures (mrr, top1).
    """

    method: str
    scored_by: str
    size: int
    head: IntArray
    passing: IntArray
    group_rank: IntArray
    first_rank: IntArray
    top1: BoolArray
    model_id: str | None = None
    fallback: str | None = None
    #: Rankings that fell back to BM25 (no embedding service, or the query embedding failed).
    fallbacks: int = 0

    @property
    def cases(self) -> int:
        return int(self.head.shape[0])

    @property
    def all_fallback(self) -> bool:
        """Every ranking fell back: the method is not what it says (BM25 in disguise)."""
        return self.cases > 0 and self.fallbacks == self.cases

    @property
    def depth(self) -> int:
        return int(self.head.shape[1])


def default_depth(size: int, always_include: int = 0) -> int:
    """Ranking head length that covers any top_k with up to ``always_include`` + 20 fixed tools."""
    return min(size, TOP_K_MAX + TOP_N_USED_MAX + always_include)


def score_cases(
    engine: Ranker,
    cases: CaseSet | Sequence[ResolvedCase],
    method: str,
    size: int,
    *,
    depth: int | None = None,
    on_progress: Progress | None = None,
) -> CaseScores:
    """Rank every case once with ``method`` and keep the arrays the sweep needs.

    Uses the engine's batch ``rank_many(queries, method)`` when it has one.
    """
    items = cases.cases if isinstance(cases, CaseSet) else list(cases)
    depth = default_depth(size) if depth is None else min(depth, size)
    n_groups = max((len(c.groups) for c in items), default=0)
    head = np.zeros((len(items), depth), dtype=np.int64)
    passing = np.zeros((len(items), THRESHOLDS.size), dtype=np.int64)
    group_rank = np.zeros((len(items), n_groups), dtype=np.int64)
    first_rank = np.zeros(len(items), dtype=np.int64)
    top1 = np.zeros(len(items), dtype=np.bool_)
    scored_by: set[str] = set()
    model_id: str | None = None
    fallback: str | None = None
    fallbacks = 0
    for c, (case, ranking) in enumerate(zip(items, _rankings(engine, items, method), strict=True)):
        order = np.asarray(ranking.order, dtype=np.int64)
        descending = np.asarray(ranking.scores, dtype=np.float64)[order]
        head[c] = order[:depth]
        # tools with score >= t: the ranking is best first, so count on the negated (ascending) run
        passing[c] = np.searchsorted(-descending, -THRESHOLDS, side="right")
        position = np.empty(size, dtype=np.int64)
        position[order] = np.arange(1, size + 1)
        ranks = [int(position[list(group)].min()) for group in case.groups]
        group_rank[c, : len(ranks)] = ranks
        first_rank[c] = min(ranks)
        top1[c] = first_rank[c] == 1
        scored_by.add(ranking.method)
        model_id = model_id or ranking.model_id
        fallback = fallback or ranking.fallback
        fallbacks += ranking.fallback is not None
        if on_progress is not None:
            on_progress(c + 1, len(items))
    return CaseScores(
        method=method,
        scored_by=",".join(sorted(scored_by)) or method,
        size=size,
        head=head,
        passing=passing,
        group_rank=group_rank,
        first_rank=first_rank,
        top1=top1,
        model_id=model_id,
        fallback=fallback,
        fallbacks=fallbacks,
    )


def _rankings(engine: Ranker, items: Sequence[ResolvedCase], method: str) -> Iterable[Ranking]:
    queries = [case.query for case in items]
    batch: Callable[[Sequence[str], str], Sequence[Ranking]] | None = getattr(
        engine, "rank_many", None
    )
    if batch is not None:
        return batch(queries, method)
    return (engine.rank(query, method) for query in queries)


# --------------------------------------------------------------------------------------- sweep


def fixed_tools(
    setting: ToolFiltering, catalog: Catalog, usage: IntArray | None = None
) -> tuple[int, ...]:
    """The tools every request carries: always_include matches, then the top-N used."""
    fixed: dict[int, None] = {}
    for entry in setting.always_include:
        index = match_always_include(catalog, entry)
        if index is not None:
            fixed[index] = None
    for index in top_n_used(setting.always_include_top_n_used, len(catalog), usage):
        fixed[index] = None
    return tuple(fixed)


@dataclass(frozen=True)
class MethodSweep:
    """Sums over cases, per fold, for every (top_k, threshold) of one method.

    Arrays are ``[fold, top_k - 1, threshold index]``; ``counts[fold]`` cases per fold. Sums (not
    means) so that any union of folds is a sum, which is what k-fold tuning needs. Every sum is of
    integers (recall is counted in units of ``1 / recall_scale``: the least common multiple of the
    cases' expected-tool counts), so sums are exact in any order and the means equal
    :func:`~workbench.evaluate.metrics.aggregate`'s to the last bit.
    """

    method: str
    scored_by: str
    fixed: tuple[int, ...]
    recall: FloatArray
    hit: FloatArray
    tokens: FloatArray
    counts: IntArray
    recall_scale: int
    #: Per case: its fold, whether its best tool is expected, and 1 / rank of its first expected.
    fold_of: IntArray
    top1_case: BoolArray
    mrr_case: FloatArray

    def _pick(self, folds: Sequence[int] | None) -> tuple[slice | list[int], int]:
        chosen: slice | list[int] = slice(None) if folds is None else list(folds)
        return chosen, int(self.counts[chosen].sum())

    def means(
        self, folds: Sequence[int] | None = None
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Mean (recall, hit, tokens sent) over the cases of ``folds`` (all when None)."""
        chosen, n = self._pick(folds)
        n = max(n, 1)
        return (
            self.recall[chosen].sum(axis=0) / (n * self.recall_scale),
            self.hit[chosen].sum(axis=0) / n,
            self.tokens[chosen].sum(axis=0) / n,
        )

    def metrics(
        self, top_k: int, threshold: int, tokens_all: int, folds: Sequence[int] | None = None
    ) -> Metrics:
        """docs/json.md's metrics at one grid point (``threshold`` is the grid index)."""
        chosen, n = self._pick(folds)
        d = max(n, 1)
        at = (chosen, top_k - 1, threshold)
        in_folds = np.isin(self.fold_of, np.arange(self.counts.size)[chosen])
        recall = Fraction(round(float(self.recall[at].sum())), self.recall_scale * d)
        return Metrics(
            cases=n,
            hit=float(self.hit[at].sum()) / d,
            recall=float(recall),
            top1=int(self.top1_case[in_folds].sum()) / d,
            mrr=math.fsum(self.mrr_case[in_folds].tolist()) / d,
            tokens_selected_mean=float(self.tokens[at].sum()) / d,
            tokens_all=tokens_all,
        )


@dataclass(frozen=True)
class SweepResult:
    """The sweep of every method for one fixed part (always_include, top_n_used)."""

    base: ToolFiltering
    tokens_all: int
    methods: dict[str, MethodSweep] = field(default_factory=dict)

    def setting(self, method: str, top_k: int, threshold: int) -> ToolFiltering:
        """The setting at a grid point (``threshold`` is the grid index), enabled."""
        return self.base.with_(
            enabled=True,
            search_method=method,
            top_k=top_k,
            similarity_threshold=float(THRESHOLDS[threshold]),
        )

    def metrics_of(self, setting: ToolFiltering) -> Metrics | None:
        """Metrics of ``setting`` if it is a point of this sweep (None otherwise)."""
        sweep = self.methods.get(setting.search_method)
        t = threshold_index(setting.similarity_threshold)
        same_fixed = (
            setting.always_include == self.base.always_include
            and setting.always_include_top_n_used == self.base.always_include_top_n_used
        )
        if sweep is None or t is None or not same_fixed or not setting.enabled:
            return None
        return sweep.metrics(setting.top_k, t, self.tokens_all)


def sweep(
    scores: Iterable[CaseScores],
    cases: CaseSet | Sequence[ResolvedCase],
    tokens: TokenCounts,
    base: ToolFiltering,
    catalog: Catalog,
    *,
    usage: IntArray | None = None,
    folds: IntArray | None = None,
) -> SweepResult:
    """Every top_k and threshold of every scored method, with ``base``'s fixed part held.

    ``folds[c]`` assigns case ``c`` to a fold (0..F-1); without it every case is in fold 0.
    """
    items = cases.cases if isinstance(cases, CaseSet) else list(cases)
    fixed = fixed_tools(base, catalog, usage)
    fold_of = np.zeros(len(items), dtype=np.int64) if folds is None else np.asarray(folds)
    result = SweepResult(base=base, tokens_all=int(tokens.all))
    for s in scores:
        if s.cases != len(items):
            raise ValueError(f"{s.method}: scores for {s.cases} cases, {len(items)} given")
        result.methods[s.method] = _sweep_method(s, items, tokens, fixed, fold_of)
    return result


def _sweep_method(
    s: CaseScores,
    items: Sequence[ResolvedCase],
    tokens: TokenCounts,
    fixed: tuple[int, ...],
    fold_of: IntArray,
) -> MethodSweep:
    m = len(fixed)
    if s.depth < min(s.size, TOP_K_MAX + m):
        raise ValueError(f"ranking depth {s.depth} too short for {m} always-sent tools")
    is_fixed = np.zeros(s.size, dtype=np.bool_)
    is_fixed[list(fixed)] = True
    per_tool = np.asarray(tokens.per_tool, dtype=np.int64)
    n_folds = int(fold_of.max()) + 1 if fold_of.size else 1
    # recall in whole units of 1/scale: integer sums are exact in float64 below 2**53 (a case set
    # would need dozens of distinct expected-tool counts to get near that)
    scale = math.lcm(*{len(case.groups) for case in items}) if items else 1
    groups = _groups(items, is_fixed, s.group_rank.shape[1])
    width = TOP_KS.size + 1
    # Imported here, not with the module: serve imports this package and never sweeps, and
    # scipy.sparse is 0.2 s of a replica's start.
    from scipy import sparse  # type: ignore[import-untyped]

    summed = np.zeros((n_folds * THRESHOLDS.size, TOP_KS.size * 3))
    for start in range(0, s.cases, CHUNK):
        rows = np.arange(start, min(start + CHUNK, s.cases))
        tables = _prefix_tables(s, groups, rows, is_fixed, per_tool, int(tokens.overhead), m, scale)
        stacked = np.stack(tables, axis=-1).reshape(rows.size * width, 3)
        # values[c, p, k, metric]: the case's figures at top_k k when p tools pass the threshold
        offsets = (np.arange(rows.size, dtype=np.int64) * width)[:, None, None]
        values = stacked[(_added_by_passing(s, rows, is_fixed, m) + offsets).ravel()]
        values = values.reshape(rows.size * width, TOP_KS.size * 3)
        # pick, for every threshold, the row of the p that passes it, and sum per fold:
        # a sparse (fold, threshold) x (case, p) matrix of ones times the values
        passing = np.minimum(s.passing[rows], width - 1)
        pick_row = (offsets[:, :, 0] + passing).ravel()
        pick_col = (fold_of[rows][:, None] * THRESHOLDS.size + np.arange(THRESHOLDS.size)).ravel()
        picker = sparse.csr_matrix(
            (np.ones(pick_row.size), (pick_col, pick_row)),
            shape=(n_folds * THRESHOLDS.size, rows.size * width),
        )
        summed += picker @ values
    per_metric = summed.reshape(n_folds, THRESHOLDS.size, TOP_KS.size, 3).transpose(0, 2, 1, 3)
    out = {name: np.ascontiguousarray(per_metric[..., i]) for i, name in enumerate(METRICS)}
    return MethodSweep(
        method=s.method,
        scored_by=s.scored_by,
        fixed=fixed,
        recall=out["recall"],
        hit=out["hit"],
        tokens=out["tokens"],
        counts=np.bincount(fold_of, minlength=n_folds).astype(np.int64),
        recall_scale=scale,
        fold_of=fold_of,
        top1_case=s.top1.copy(),
        mrr_case=1.0 / s.first_rank.astype(np.float64),
    )


def _added_by_passing(s: CaseScores, rows: IntArray, is_fixed: BoolArray, m: int) -> IntArray:
    """``n[c, p, k-1]``: search tools the runtime adds for case ``c`` at top_k ``k`` when ``p``
    (0..50) tools pass the threshold."""
    width = TOP_KS.size + 1
    ks = TOP_KS[None, None, :]
    fetched = np.minimum(np.arange(width)[None, :, None], ks)  # [1, p, k]
    fetched = np.broadcast_to(fetched, (rows.size, width, TOP_KS.size))
    if m == 0:
        return np.ascontiguousarray(fetched)
    head = s.head[rows]
    fixed_before = _fixed_before(head, is_fixed)  # [c, j]: always-sent among the first j
    fixed_before = np.pad(
        fixed_before, ((0, 0), (0, max(0, width - fixed_before.shape[1]))), "edge"
    )
    free = fetched - np.take_along_axis(
        fixed_before[:, :, None], np.minimum(fetched, fixed_before.shape[1] - 1), axis=1
    )
    return np.where(ks > m, np.minimum(free, ks - m), 0)


def _fixed_before(head: IntArray, is_fixed: BoolArray) -> IntArray:
    """``out[c, j]`` = always-sent tools among the first ``j`` of case ``c``'s ranking."""
    counts = np.cumsum(is_fixed[head], axis=1)
    return np.concatenate([np.zeros((head.shape[0], 1), dtype=np.int64), counts], axis=1)


@dataclass(frozen=True)
class _Groups:
    """Per case and expected group: is it covered by an always-sent tool; groups per case."""

    by_fixed: BoolArray
    count: IntArray


def _groups(items: Sequence[ResolvedCase], is_fixed: BoolArray, width: int) -> _Groups:
    by_fixed = np.zeros((len(items), width), dtype=np.bool_)
    fixed = set(np.flatnonzero(is_fixed).tolist())
    if fixed:
        for c, case in enumerate(items):
            for g, group in enumerate(case.groups):
                by_fixed[c, g] = not fixed.isdisjoint(group)
    count = np.array([len(case.groups) for case in items], dtype=np.int64)
    return _Groups(by_fixed, count)


def _prefix_tables(
    s: CaseScores,
    groups: _Groups,
    rows: IntArray,
    is_fixed: BoolArray,
    per_tool: IntArray,
    overhead: int,
    m: int,
    scale: int,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Recall (in units of ``1 / scale``), hit and tokens of each case when ``n`` = 0..50 search
    tools are added."""
    head = s.head[rows]
    width = TOP_KS.size + 1
    ns = np.arange(width)
    # the F-free ranking: stable sort puts non-fixed tools first, in rank order
    free_pos = np.argsort(is_fixed[head], axis=1, kind="stable")[:, : width - 1]
    free_tools = np.take_along_axis(head, free_pos, axis=1)
    real = ~is_fixed[free_tools]
    sums = np.cumsum(np.where(real, per_tool[free_tools], 0), axis=1)
    prefix = np.concatenate([np.zeros((rows.size, 1), dtype=np.int64), sums], axis=1)
    if prefix.shape[1] < width:  # a catalog smaller than top_k's range: n never gets there
        prefix = np.pad(prefix, ((0, 0), (0, width - prefix.shape[1])), mode="edge")
    base = int(per_tool[is_fixed].sum())
    tokens = (base + prefix + overhead * ((m + ns) > 0)[None, :]).astype(np.float64)
    # rank of each expected group in the F-free ranking (0: an always-sent tool covers it)
    ranks = s.group_rank[rows]
    near = (ranks >= 1) & (ranks <= s.depth)
    before = np.take_along_axis(
        _fixed_before(head, is_fixed), np.clip(ranks - 1, 0, s.depth), axis=1
    )
    never = width + s.size
    free_rank = np.where(near, ranks - before, never)
    free_rank = np.where(groups.by_fixed[rows], 0, free_rank)
    free_rank = np.where(ranks >= 1, free_rank, never)  # padding past the case's groups
    sent = free_rank[:, :, None] <= ns[None, None, :]
    units: IntArray = (scale // groups.count[rows])[:, None]
    recall: FloatArray = (sent.sum(axis=1) * units).astype(np.float64)
    hit: FloatArray = np.any(sent, axis=1).astype(np.float64)
    return recall, hit, tokens


# ---------------------------------------------------------------------------------- the front


@dataclass(frozen=True, slots=True)
class FrontPoint:
    """A setting no other swept setting beats on both recall and mean tokens sent."""

    setting: ToolFiltering
    recall: float
    tokens: float


#: On equal figures, prefer the method whose scores need nothing at run time.
METHOD_PREFERENCE: tuple[str, ...] = ("bm25", *[m for m in SEARCH_METHODS if m != "bm25"])


def method_rank(method: str) -> int:
    return (
        METHOD_PREFERENCE.index(method) if method in METHOD_PREFERENCE else len(METHOD_PREFERENCE)
    )


def pareto_front(
    results: SweepResult | Sequence[SweepResult], folds: Sequence[int] | None = None
) -> list[FrontPoint]:
    """Recall against mean tokens sent: cheapest first, each point strictly better in recall.

    Among settings with the same figures the simplest is kept: fewer always-sent tools, then the
    preferred method (:data:`METHOD_PREFERENCE`), then the smallest top_k, then the lowest
    threshold.
    """
    results = [results] if isinstance(results, SweepResult) else list(results)
    keys: list[FloatArray] = []
    where: list[tuple[int, str]] = []
    for r_index, result in enumerate(results):
        fixed = len(next(iter(result.methods.values())).fixed) if result.methods else 0
        for method, ms in result.methods.items():
            recall, _, tokens = ms.means(folds)
            k, t = np.meshgrid(np.arange(TOP_KS.size), np.arange(THRESHOLDS.size), indexing="ij")
            block = np.stack(
                [
                    tokens.ravel(),
                    -recall.ravel(),
                    np.full(k.size, fixed),
                    np.full(k.size, method_rank(method)),
                    k.ravel(),
                    t.ravel(),
                    np.full(k.size, len(where)),
                ]
            )
            keys.append(block)
            where.append((r_index, method))
    if not keys:
        return []
    table = np.concatenate(keys, axis=1)
    order = np.lexsort(table[::-1])  # sorts by row 0 first, then row 1, ...
    front: list[FrontPoint] = []
    best = -np.inf
    for col in order.tolist():
        tok, neg_recall, _, _, k, t, w = table[:, col].tolist()
        if -neg_recall > best + 1e-12:
            best = -neg_recall
            r_index, method = where[int(w)]
            setting = results[r_index].setting(method, int(k) + 1, int(t))
            front.append(FrontPoint(setting, -neg_recall, tok))
    return front


# ------------------------------------------------------------------------- one point, per case


@dataclass(frozen=True)
class CaseFigures:
    """Per-case figures of one grid point for some cases (``rows``): what a paired comparison
    of two settings on the same cases needs. Recall is a share (0..1), hit 0 or 1."""

    rows: IntArray
    recall: FloatArray
    hit: FloatArray
    tokens: FloatArray


def case_figures(
    s: CaseScores,
    cases: CaseSet | Sequence[ResolvedCase],
    tokens: TokenCounts,
    fixed: tuple[int, ...],
    top_k: int,
    threshold: int,
    rows: IntArray,
) -> CaseFigures:
    """The figures of cases ``rows`` at ``top_k`` and grid threshold index ``threshold``, with
    the always-sent tools ``fixed``: the same arithmetic as the sweep, case by case (so the sums
    equal the sweep's sums exactly)."""
    items = cases.cases if isinstance(cases, CaseSet) else list(cases)
    rows = np.asarray(rows, dtype=np.int64)
    m = len(fixed)
    is_fixed = np.zeros(s.size, dtype=np.bool_)
    is_fixed[list(fixed)] = True
    per_tool = np.asarray(tokens.per_tool, dtype=np.int64)
    scale = math.lcm(*{len(case.groups) for case in items}) if items else 1
    groups = _groups(items, is_fixed, s.group_rank.shape[1])
    width = TOP_KS.size + 1
    out = [np.zeros(rows.size) for _ in METRICS]
    for start in range(0, rows.size, CHUNK):
        part = rows[start : start + CHUNK]
        at = np.arange(part.size)
        tables = _prefix_tables(s, groups, part, is_fixed, per_tool, int(tokens.overhead), m, scale)
        passing = np.minimum(s.passing[part, threshold], width - 1)
        added = _added_by_passing(s, part, is_fixed, m)[at, passing, top_k - 1]
        for i, table in enumerate(tables):
            out[i][start : start + part.size] = table[at, added]
    return CaseFigures(rows=rows, recall=out[0] / scale, hit=out[1], tokens=out[2])
