"""What-if rows: changes outside the ``tool_filtering`` knobs, measured as the tuner measures.

The tuner finds the best setting of the block; the biggest gains often lie outside it. Each what-if
here is a change the runtime supports (HoloDeck 0.6, docs/holodeck-filter.md):

- ``embedding``: an MCP-only agent has no embedding service, so its semantic and hybrid are BM25.
  Adding a vectorstore (or hierarchical_document) tool makes HoloDeck create one. Measured with
  the workspace's embedder (``--embedder``), semantic and hybrid join the tuner's grid.
- ``warm-runtime``: ``always_include_top_n_used`` ranks by use counts that start at 0 after every
  restart; a process that stays up reaches the counts of ``--usage FILE``.
- ``always-include``: tools the cases need but search never ranks within ``top_k`` for any of
  them, added to ``always_include``.

Each is run through the tuner's own procedure (:mod:`workbench.evaluate.tuner`) on the same cases
and the same folds as the plain proposal (the *baseline*): choose on k-1 folds, measure on the one
left out. Choices that depend on the cases (which tools to always include) are made on the training
folds only. The gain is the difference of held-out recall, per case, paired; a row is *listed* only
when its paired bootstrap 95 % interval (:mod:`workbench.evaluate.intervals`) lies above zero (a
gain inside the error bars is noise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config.filtering import SEARCH_METHODS, ToolFiltering
from workbench.config.models import Agent
from workbench.evaluate.budget import Budget
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.diagnostics import Finding
from workbench.evaluate.folds import Fold, cross_fit
from workbench.evaluate.intervals import Interval, paired_difference
from workbench.evaluate.metrics import Metrics, Progress, Ranker, TokenCounts
from workbench.evaluate.runs import fixed_variants, score_methods, without
from workbench.evaluate.sweep import (
    CaseScores,
    FloatArray,
    MethodSweep,
    SweepResult,
    case_figures,
    pareto_front,
    sweep,
)
from workbench.evaluate.tuner import Choice, SweepOutcome, choose, fold_assignment, tune
from workbench.search.delivery import runtime_methods
from workbench.search.embedders.resolve import (
    DEFAULT_MODEL,
    DEFAULT_OLLAMA_MODEL,
    EMBEDDING_TOOL_TYPES,
    runtime_embedding,
)
from workbench.search.selection import match_always_include
from workbench.search.types import IntArray

if TYPE_CHECKING:
    from workbench.workspace import Workspace

#: A tool is tried in always_include when at least this many training cases need it ...
MIN_NEEDED = 2
#: ... and at most this many such tools are added (those most needed first).
MAX_ALWAYS = 5
#: The what-ifs, in the order they are measured.
KINDS = ("embedding", "warm-runtime", "always-include")


# ------------------------------------------------------------------- one held-out procedure


@dataclass(frozen=True)
class Held:
    """The tuner's procedure on one variant of the world: its proposal and, per case, the
    figures the setting chosen without the case's fold gets on it."""

    outcome: SweepOutcome
    recall: FloatArray
    hit: FloatArray
    tokens: FloatArray
    top1: FloatArray
    mrr: FloatArray
    choices: list[Choice]

    @property
    def heldout(self) -> Metrics:
        n = self.recall.size
        d = max(n, 1)
        return Metrics(
            cases=n,
            hit=math.fsum(self.hit.tolist()) / d,
            recall=math.fsum(self.recall.tolist()) / d,
            top1=math.fsum(self.top1.tolist()) / d,
            mrr=math.fsum(self.mrr.tolist()) / d,
            tokens_selected_mean=math.fsum(self.tokens.tolist()) / d,
            tokens_all=self.outcome.heldout.tokens_all,
        )


@dataclass
class _World:
    """What every procedure shares: the cases, their folds, the token table and the catalog."""

    cases: CaseSet
    tokens: TokenCounts
    catalog: Catalog
    budget: Budget
    fold_of: IntArray
    n_folds: int
    _sweeps: dict[tuple[Any, ...], SweepResult] = field(default_factory=dict)

    def sweeps(
        self,
        scores: Sequence[CaseScores],
        variants: Sequence[ToolFiltering],
        usage: IntArray | None,
        exclude: Sequence[str],
    ) -> list[SweepResult]:
        out = []
        for v in variants:
            key = (tuple(id(s) for s in scores), v.model_dump_json(), id(usage))
            if key not in self._sweeps:
                self._sweeps[key] = sweep(
                    scores, self.cases, self.tokens, v, self.catalog, usage=usage,
                    folds=self.fold_of,
                )  # fmt: skip
            out.append(without(self._sweeps[key], exclude))
        return out

    def held(
        self,
        scores: Sequence[CaseScores],
        variants: Callable[[Sequence[int]], list[ToolFiltering]],
        *,
        usage: IntArray | None = None,
        exclude: Sequence[str] = (),
    ) -> Held:
        """k-fold: choose on the other folds (with the variants those folds call for), measure
        on the fold left out; then the proposal, chosen on every fold."""
        by_method = {s.method: s for s in scores}

        def fit(fold: Fold) -> tuple[Choice, MethodSweep]:
            train = [f for f in range(self.n_folds) if f != fold.index]
            sweeps = self.sweeps(scores, variants(train), usage, exclude)
            choice = choose(sweeps, train, self.budget)
            return choice, sweeps[choice.sweep].methods[choice.method]

        def measure(chosen: tuple[Choice, MethodSweep], fold: Fold) -> list[tuple[float, ...]]:
            (choice, ms), rows = chosen, np.asarray(fold.test, dtype=np.int64)
            got = case_figures(
                by_method[choice.method], self.cases, self.tokens, ms.fixed, choice.top_k,
                choice.threshold, rows,
            )  # fmt: skip
            per_case = (got.recall, got.hit, got.tokens, ms.top1_case[rows], ms.mrr_case[rows])
            return list(zip(*(figure.tolist() for figure in per_case), strict=True))

        crossed = cross_fit(len(self.cases), self.n_folds, fit, measure)
        columns = zip(*crossed.case_order(), strict=True)
        names = ("recall", "hit", "tokens", "top1", "mrr")
        figures = {
            name: np.array(col, dtype=np.float64) for name, col in zip(names, columns, strict=True)
        }
        choices = [choice for choice, _ in crossed.settings]
        every = list(range(self.n_folds))
        sweeps = self.sweeps(scores, variants(every), usage, exclude)
        outcome = tune(sweeps, self.budget, self.n_folds, pareto_front(sweeps))
        return Held(outcome=outcome, choices=choices, **figures)


# ------------------------------------------------------------------------------- the rows


def gain_text(
    baseline: Metrics, heldout: Metrics, gain: float, interval: Interval, per: str = "request"
) -> str:
    """A change's held-out gain in words: recall before and after, the gain and its interval,
    the tokens after (what-if rows and the fixes a runtime measures say it the same way)."""
    low, high = interval
    return (
        f"held-out recall {baseline.recall:.3f} -> {heldout.recall:.3f} ({gain:+.3f}, 95% CI "
        f"{low:+.3f}..{high:+.3f}) at {heldout.tokens_selected_mean:,.0f} tokens per {per}"
    )


@dataclass(frozen=True)
class WhatIf:
    """One change outside the knobs, measured held-out beside the baseline on the same cases."""

    kind: str
    change: str
    how: str
    setting: ToolFiltering
    heldout: Metrics
    baseline: Metrics
    #: Held-out recall minus the baseline's (the mean of the per-case differences).
    gain: float
    #: Paired bootstrap interval of ``gain`` (``intervals.paired_difference``).
    interval: Interval
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        """The gain is outside the error bars: the whole interval is above zero."""
        return self.interval[0] > 0.0

    def to_json(self) -> dict[str, Any]:
        """One row of ``tune --json``'s ``what_if`` list."""
        return {
            "change": self.change,
            "how": self.how,
            "setting": self.setting.block(),
            "heldout": self.heldout.to_json(),
            "kind": self.kind,
            "gain": {
                "recall": self.gain,
                "ci95": list(self.interval),
                "tokens_selected_mean": self.heldout.tokens_selected_mean
                - self.baseline.tokens_selected_mean,
            },
        }

    def finding(self) -> Finding:
        """The row as a finding (``check`` and the findings list show it)."""
        low, high = self.interval
        message = (
            f"{self.change}: {gain_text(self.baseline, self.heldout, self.gain, self.interval)}"
        )
        evidence = {
            "change": self.change,
            "setting": self.setting.block(),
            "heldout": self.heldout.to_json(),
            "baseline": self.baseline.to_json(),
            "gain": self.gain,
            "ci95": [low, high],
            **self.evidence,
        }
        return Finding("info", f"what-if-{self.kind}", message, evidence, fix=self.how)


@dataclass(frozen=True)
class WhatIfReport:
    """Every what-if that applied, measured; ``rows`` sorted by gain, best first."""

    baseline: Held
    rows: list[WhatIf]
    #: What-ifs that apply but could not be measured here, and why (e.g. no embedder).
    unmeasured: list[str] = field(default_factory=list)

    @property
    def listed(self) -> list[WhatIf]:
        """The rows whose gain is outside the error bars (``tune --json``'s ``what_if``)."""
        return [r for r in self.rows if r.significant]

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.listed]


def _row(
    kind: str,
    change: str,
    how: str,
    held: Held,
    base: Held,
    evidence: dict[str, Any] | None = None,
) -> WhatIf:
    diff = held.recall - base.recall
    return WhatIf(
        kind=kind,
        change=change,
        how=how,
        setting=held.outcome.setting,
        heldout=held.heldout,
        baseline=base.heldout,
        gain=math.fsum(diff.tolist()) / max(diff.size, 1),
        interval=paired_difference(held.recall, base.recall),
        evidence=evidence or {},
    )


def what_ifs(
    engine: Ranker,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    current: ToolFiltering,
    budget: Budget,
    *,
    agent: Agent,
    embedder_spec: str | None = None,
    usage: IntArray | None = None,
    folds: int = 5,
    on_progress: Progress | None = None,
) -> WhatIfReport:
    """Measure every what-if that applies to this agent (module docstring), held-out.

    ``embedder_spec`` names the embedder ``engine`` scores semantic with (None: it has none);
    ``usage`` is a warm runtime's use counts (``--usage FILE``).
    """
    runtime = runtime_embedding(agent)
    mcp_only = not any(t.type in EMBEDDING_TOOL_TYPES for t in agent.tools or ())
    embedding_applies = runtime.spec.kind == "none" and mcp_only
    runs = runtime_methods(agent)
    methods = list(SEARCH_METHODS) if embedding_applies and embedder_spec else list(runs)
    scores = score_methods(
        engine,
        cases,
        len(catalog),
        methods=methods,
        always_include=len(current.always_include) + MAX_ALWAYS,
        on_progress=on_progress,
    )
    fallback = tuple(s.method for s in scores if s.all_fallback and s.method != "bm25")
    exclude = tuple(m for m in SEARCH_METHODS if m not in runs) + fallback
    world = _World(cases, tokens, catalog, budget, fold_assignment(len(cases), folds), folds)
    plain = fixed_variants(current)
    base = world.held(scores, lambda _: plain, exclude=exclude)
    rows: list[WhatIf] = []
    unmeasured: list[str] = []

    if embedding_applies:
        if embedder_spec is None:
            unmeasured.append(
                "with an embedding service: pass --embedder (e.g. local:all-MiniLM-L6-v2) to "
                "measure it"
            )
        elif set(fallback) >= {"semantic", "hybrid"}:
            unmeasured.append(f"with an embedding service: {embedder_spec} did not embed")
        else:
            held = world.held(scores, lambda _: plain, exclude=fallback)
            rows.append(
                _row(
                    "embedding",
                    "with an embedding service",
                    _embedding_how(agent, embedder_spec),
                    held,
                    base,
                    {"embedder": embedder_spec},
                )
            )

    if usage is not None and current.always_include_top_n_used > 0 and usage.any():
        held = world.held(scores, lambda _: plain, usage=usage, exclude=exclude)
        n = current.always_include_top_n_used
        rows.append(
            _row(
                "warm-runtime",
                "a warm runtime (use counts of --usage)",
                f"HoloDeck counts tool use in memory and resets the counts on every restart: "
                f"always_include_top_n_used: {n} sends the {n} most used tools only in a process "
                "that stays up long enough to reach these counts (no config change gets there)",
                held,
                base,
                {"always_include_top_n_used": n},
            )
        )

    always = _always_include_row(world, scores, plain, base, exclude)
    if always is not None:
        rows.append(always)
    rows.sort(key=lambda r: (-r.gain, KINDS.index(r.kind)))
    return WhatIfReport(baseline=base, rows=rows, unmeasured=unmeasured)


def _embedding_how(agent: Agent, measured_with: str) -> str:
    provider = agent.model.provider
    model = DEFAULT_OLLAMA_MODEL if provider == "ollama" else DEFAULT_MODEL
    runtime = f"{provider}:{model}"
    return (
        "HoloDeck 0.6 creates an embedding service only when the agent has a vectorstore or "
        "hierarchical_document tool: add one to tools (e.g. `- {name: docs, type: vectorstore, "
        f"source: <a file>, embedding_model: {model}}}`); it then embeds with {runtime} and "
        "semantic/hybrid stop falling back to BM25 (the vectorstore tool joins the catalog, "
        f"first). Measured here with {measured_with}: re-tune the threshold with the runtime's "
        f"model (holo-tune tune --embedder {runtime}), a threshold does not transfer between "
        "models"
    )


def _always_include_row(
    world: _World,
    scores: Sequence[CaseScores],
    plain: list[ToolFiltering],
    base: Held,
    exclude: Sequence[str],
) -> WhatIf | None:
    """always_include for tools search never ranks within top_k for any training case that
    needs them (picked on the training folds of each round; on every fold for the proposal)."""
    by_method = {s.method: s for s in scores}
    fixed = {i for v in plain for e in v.always_include if (i := _index(world, e)) is not None}

    def picks(train: Sequence[int]) -> list[int]:
        choice = choose(world.sweeps(scores, plain, None, exclude), train, world.budget)
        found = unreached(by_method[choice.method], world.cases, world.fold_of, train,
                          choice.top_k, fixed)  # fmt: skip
        # by full name; skip a tool whose name an earlier tool's ends with (it would take it)
        names = world.catalog.tools
        return [i for i in found if _index(world, names[i].full_name) == i]

    def variants(train: Sequence[int]) -> list[ToolFiltering]:
        names = [world.catalog.tools[i].full_name for i in picks(train)]
        return [v.with_(always_include=[*v.always_include, *names]) for v in plain]

    final = picks(list(range(world.n_folds)))
    if not final:
        return None
    held = world.held(scores, variants, exclude=exclude)
    names = [world.catalog.tools[i].full_name for i in final]
    cost = int(np.asarray(world.tokens.per_tool)[final].sum())
    how = (
        f"add to always_include: {', '.join(names)} (search never ranks them within top_k for "
        f"the cases that need them; together {cost:,} tokens on every request). In each "
        "held-out round the tools were picked on the training folds only"
    )
    return _row(
        "always-include",
        f"always_include {len(names)} tool(s) search does not reach",
        how,
        held,
        base,
        {"tools": names, "tokens": cost},
    )


def _index(world: _World, entry: str) -> int | None:
    return match_always_include(world.catalog, entry)


def unreached(
    s: CaseScores,
    cases: CaseSet,
    fold_of: IntArray,
    folds: Sequence[int],
    top_k: int,
    fixed: set[int],
) -> list[int]:
    """Tools (catalog indices) that cases of ``folds`` need (a one-tool expected name) and that
    rank below ``top_k`` in every one of them: at least :data:`MIN_NEEDED` cases, the
    :data:`MAX_ALWAYS` most needed, ties in catalog order."""
    needed: dict[int, int] = {}
    reached: set[int] = set()
    for c in np.flatnonzero(np.isin(fold_of, list(folds))).tolist():
        for g, group in enumerate(cases.cases[c].groups):
            if len(group) != 1 or group[0] in fixed:
                continue
            tool = group[0]
            needed[tool] = needed.get(tool, 0) + 1
            if int(s.group_rank[c, g]) <= top_k:
                reached.add(tool)
    candidates = [t for t, n in needed.items() if n >= MIN_NEEDED and t not in reached]
    candidates.sort(key=lambda t: (-needed[t], t))
    return sorted(candidates[:MAX_ALWAYS])


def measure_what_ifs(
    ws: Workspace,
    cases: CaseSet,
    current: ToolFiltering,
    budget: Budget,
    *,
    usage_file: str | None,
    folds: int,
    on_progress: Progress | None = None,
) -> WhatIfReport:
    """The what-if rows (:mod:`workbench.evaluate.whatif`) on the tuner's cases and folds
    (``tune`` and ``check`` both measure them)."""
    from workbench.search.usage import load_usage

    usage = load_usage(usage_file, ws.catalog) if usage_file else None
    embedder = ws.embedder.spec if ws.embedder.embedder is not None else None
    return what_ifs(
        ws.engine,
        ws.catalog,
        ws.tokens,
        cases,
        current,
        budget,
        agent=ws.agent.agent,
        embedder_spec=embedder,
        usage=usage,
        folds=folds,
        on_progress=on_progress,
    )
