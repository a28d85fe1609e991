"""HoloDeck 0.7's static allowlists: which MCP tools the agent exposes, chosen from cases.

HoloDeck 0.7 has no per-query filter: the tools an agent exposes are fixed when it is built. On
its OpenAI Agents backend (providers openai, azure_openai) a server's ``config.allowed_tools``
lists the server's own tool names it exposes; on its Claude backend (anthropic, ollama)
``claude.disallowed_tools`` removes ``mcp__<server>__<tool>`` names from the model's context
(``claude.allowed_tools`` only approves tools: the Claude Agent SDK reads it as permission
rules, so it is written for the kept tools but hides nothing). Every request carries the same
tools, so a case is a *hit* when one of its expected tools is exposed, its *recall* is the share
exposed, and its tokens are the exposed set's, the same for every case.

:func:`choose` picks the set greedily: the tool with the most recall gained per token first
(usage counts add weight to hot tools), until the budget (``--max-tokens``, else a share of all
tokens) or the hit target (``--min-hit``) is reached. :func:`tune_allowlist` measures the rule
k-fold held-out, like the ``tool_filtering`` tuner, and proposes the set chosen on every case.

Tools that are not MCP tools (vectorstore, function, ...) are always exposed; on the Claude
backend only stdio servers are bridged, so tools of other transports are never exposed there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from workbench.catalog.models import Catalog
from workbench.config import AgentConfig
from workbench.config.models import MCPTool
from workbench.evaluate.budget import Budget, knee
from workbench.evaluate.cases import CaseSet
from workbench.evaluate.folds import CrossFit, cross_fit
from workbench.evaluate.generalise import Bars, SetReport, generalising
from workbench.evaluate.metrics import CaseResult, TokenCounts, tokens_sent
from workbench.evaluate.tuner import AT_LEAST_MIN, Recurrence
from workbench.search.types import IntArray

Backend = Literal["openai-agents", "claude"]
#: Weight of the whole usage file, as if it were this many cases.
USAGE_WEIGHT = 1.0
Exposed = np.ndarray[Any, np.dtype[np.bool_]]


def backend_of(provider: str) -> Backend:
    """HoloDeck 0.7's backend per ``model.provider`` (``lib/backends/selector.py``)."""
    return "claude" if provider in ("anthropic", "ollama") else "openai-agents"


@dataclass(frozen=True, slots=True)
class Surface:
    """What can be filtered: per catalog tool, whether it is an MCP tool of an agent server the
    backend filters (``candidate``), always exposed (``fixed``), or never exposed (neither)."""

    backend: Backend
    candidate: np.ndarray[Any, np.dtype[np.bool_]]
    fixed: np.ndarray[Any, np.dtype[np.bool_]]
    notes: tuple[str, ...] = ()


def surface(agent: AgentConfig, catalog: Catalog) -> Surface:
    backend = backend_of(str(agent.agent.model.provider))
    entries = {t.name: t for t in agent.agent.tools or [] if isinstance(t, MCPTool)}
    candidate = np.zeros(len(catalog), dtype=np.bool_)
    fixed = np.zeros(len(catalog), dtype=np.bool_)
    notes: list[str] = []
    unbridged: set[str] = set()
    foreign: set[str] = set()
    for i, tool in enumerate(catalog.tools):
        if tool.kind != "mcp":
            fixed[i] = True
            continue
        entry = entries.get(tool.plugin)
        if entry is None:
            foreign.add(tool.plugin)
            fixed[i] = True
        elif backend == "claude" and entry.transport != "stdio":
            unbridged.add(tool.plugin)
        else:
            candidate[i] = True
    if foreign:
        notes.append(
            f"{len(foreign)} server(s) of the catalog are not MCP entries of the agent "
            f"({', '.join(sorted(foreign)[:5])}): no allowlist can be written for them, their "
            "tools count as always exposed"
        )
    if unbridged:
        notes.append(
            "HoloDeck's Claude backend bridges only stdio MCP servers: "
            f"{', '.join(sorted(unbridged))} never reach the model there"
        )
    return Surface(backend, candidate, fixed, tuple(notes))


@dataclass(frozen=True, slots=True)
class StaticMetrics:
    """One exposed set on some cases."""

    cases: int
    hit: float
    recall: float
    tokens: int
    tokens_all: int

    @property
    def token_reduction(self) -> float:
        return 0.0 if self.tokens_all <= 0 else 1.0 - self.tokens / self.tokens_all

    def to_json(self) -> dict[str, Any]:
        return {
            "hit": self.hit,
            "recall": self.recall,
            "tokens_selected_mean": float(self.tokens),
            "tokens_all": self.tokens_all,
            "token_reduction": self.token_reduction,
        }


def measure_cases(
    exposed: np.ndarray[Any, np.dtype[np.bool_]], cases: CaseSet, tokens: TokenCounts
) -> list[CaseResult]:
    """Each case under a fixed exposed set: hit and recall of what is exposed, its tokens (the
    same every request). No ranking: top1 is false and no expected tool has a rank."""
    selected = tuple(np.flatnonzero(exposed).tolist())
    cost = tokens_sent(tokens, selected)
    return [
        CaseResult(
            case,
            selected,
            tuple(any(exposed[i] for i in g) for g in case.groups),
            False,
            None,
            cost,
        )
        for case in cases.cases
    ]


def static_metrics(results: Sequence[CaseResult], tokens: TokenCounts) -> StaticMetrics:
    """The figures of one exposed set from its cases' results (:func:`measure_cases`)."""
    n = len(results)
    return StaticMetrics(
        cases=n,
        hit=sum(r.hit for r in results) / n if n else 0.0,
        recall=sum(r.recall for r in results) / n if n else 0.0,
        tokens=results[0].tokens if results else 0,
        tokens_all=int(tokens.all),
    )


def measure(
    exposed: np.ndarray[Any, np.dtype[np.bool_]], cases: CaseSet, tokens: TokenCounts
) -> StaticMetrics:
    """Hit and recall of a fixed exposed set on ``cases``; its tokens (the same every request)."""
    return static_metrics(measure_cases(exposed, cases, tokens), tokens)


def choose(
    surf: Surface,
    cases: CaseSet,
    tokens: TokenCounts,
    budget: Budget,
    usage: IntArray | None = None,
    recurrence: Recurrence = AT_LEAST_MIN,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """The exposed set (fixed tools plus the chosen candidates) for ``cases`` within ``budget``.

    Greedy on recall gained per token, among the candidates that can recur (expected by as many
    cases as ``recurrence`` asks, or counted by the usage file); a candidate that no longer fits
    is skipped (a cheaper one may); stops at the hit target when there is one, or when nothing
    left gains anything.

    Above the first bar (:meth:`~workbench.evaluate.tuner.Recurrence.discount`) the gain is
    counted as a training set short of the bar's share of the candidate's cases would count it
    (``(k - d) / k`` of it, for a tool ``k`` cases expect): of two tools with the same gain per
    token the one more cases expect comes first, so the set kept where the budget cuts does not
    hang on the votes of the few cases it was chosen on (docs/runtimes.md, what the tuners keep).
    """
    per_tool = np.asarray(tokens.per_tool, dtype=np.float64)
    exposed = surf.fixed.copy()
    limit = budget.limit(int(tokens.all))
    groups = [(group, 1.0 / len(case.groups)) for case in cases.cases for group in case.groups]
    covered = np.array([any(exposed[i] for i in g) for g, _ in groups], dtype=np.bool_)
    weight = np.zeros(len(per_tool))
    if usage is not None and usage.sum() > 0:
        weight += USAGE_WEIGHT * usage / usage.sum()
    expected_by = np.zeros(len(per_tool), dtype=np.int64)
    for case in cases.cases:
        expected_by[sorted({i for group in case.groups for i in group})] += 1
    recurs = (expected_by >= recurrence.need(len(cases))) | (weight > 0)
    short = np.maximum(expected_by - recurrence.discount(len(cases)), 0) / np.maximum(
        expected_by, 1
    )
    # With no budget flag the greedy path runs to its end and the set kept is the knee of its
    # in-sample front (budget.knee): recall reached against tokens sent, set by set.
    weights = np.array([w for _, w in groups]) / max(len(cases.cases), 1)
    path: list[tuple[float, float, np.ndarray[Any, np.dtype[np.bool_]]]] = []

    def step() -> None:
        sent = tokens_sent(tokens, np.flatnonzero(exposed).tolist())
        path.append((float(sent), float(weights @ covered), exposed.copy()))

    step()
    while True:
        if budget.min_hit is not None and _hit(exposed, cases) >= budget.min_hit:
            break
        gain = weight.copy()
        for (group, w), done in zip(groups, covered, strict=True):
            if not done:
                gain[list(group)] += w
        cost = tokens_sent(tokens, np.flatnonzero(exposed).tolist())
        open_ = surf.candidate & recurs & ~exposed & (gain > 0)
        fits = open_ & (cost + per_tool + (0 if cost else tokens.overhead) <= limit)
        if not fits.any():
            break
        # Counted short of the bar; the whole gain breaks ties (a tool at the bar still fills
        # what budget is left). At the first bar nothing is discounted: short is 1.
        counted = np.where(weight > 0, gain, gain * short + 1e-6 * gain)
        ratio = np.where(fits, counted / np.maximum(per_tool, 1.0), -1.0)
        best = int(np.argmax(ratio))  # ties: the first in catalog order
        exposed[best] = True
        weight[best] = 0.0
        covered |= np.array([best in g for g, _ in groups], dtype=np.bool_)
        step()
    if budget.explicit:
        return exposed
    return path[knee([t for t, _, _ in path], [r for _, r, _ in path], float(tokens.all))][2]


def _hit(exposed: np.ndarray[Any, np.dtype[np.bool_]], cases: CaseSet) -> float:
    if not cases.cases:
        return 1.0
    hits = [any(exposed[i] for g in c.groups for i in g) for c in cases.cases]
    return sum(hits) / len(hits)


@dataclass(frozen=True, kw_only=True)
class AllowlistReport(SetReport[Exposed, StaticMetrics]):
    """HoloDeck 0.7's allowlists' report (:class:`~workbench.evaluate.generalise.SetReport`: the
    setting is the exposed set, ``current`` what the file exposes now and ``default`` its
    figures; a case's tokens are one request's): what can be filtered, and whether the catalog's
    servers were taken as the agent's MCP entries (:func:`tune_allowlist`)."""

    unit: ClassVar[str] = "request"

    surface: Surface
    as_entries: bool = False

    def same(self) -> bool:
        return (
            bool(self.current_cases)
            and self.current is not None
            and bool(np.array_equal(self.current, self.setting))
        )

    def names(self, catalog: Catalog) -> list[str]:
        return [catalog.tools[i].full_name for i in np.flatnonzero(self.setting)]


def tune_allowlist(
    agent: AgentConfig,
    catalog: Catalog,
    tokens: TokenCounts,
    cases: CaseSet,
    budget: Budget,
    *,
    folds: int = 5,
    usage: IntArray | None = None,
    as_entries: bool = False,
) -> AllowlistReport:
    """Choose on every case; measure the rule k-fold held-out (each fold chosen on the others).
    ``as_entries``: servers of the catalog that are not the agent's entries (a data set's
    agent) are taken as if they were, every tool exposed now (figures that are never written:
    such servers have no allowlist to write): the report says so (``as_entries``)."""
    surf = surface(agent, catalog)
    now = None
    taken = as_entries and bool(surf.notes)
    if taken:
        mcp = np.array([t.kind == "mcp" for t in catalog.tools], dtype=np.bool_)
        surf = Surface(surf.backend, mcp, ~mcp)
        now = surf.fixed | surf.candidate
    rule, bars = allowlist_rule(surf, cases, tokens, budget, folds, usage)
    insample = rule.insample
    if now is None:
        now = current_exposed(agent, catalog, surf)
    current_cases = measure_cases(now, cases, tokens)
    return AllowlistReport(
        setting=rule.exposed,
        budget=budget,
        heldout=rule.heldout,
        insample=insample,
        default=static_metrics(current_cases, tokens),
        folds=folds,
        within_budget=budget.met_by(insample.tokens, insample.hit),
        fold_settings=tuple(rule.held.settings),
        heldout_cases=tuple(rule.held.fold_order()),
        bars=bars,
        current=now,
        current_cases=tuple(current_cases),
        surface=surf,
        as_entries=taken,
    )


@dataclass(frozen=True)
class AllowlistRule:
    """The rule at one recurrence bar: the proposal, each fold's set and its held-out cases, and
    the figures."""

    exposed: Exposed
    held: CrossFit[Exposed, CaseResult]
    heldout: StaticMetrics
    insample: StaticMetrics


def allowlist_rule(
    surf: Surface,
    cases: CaseSet,
    tokens: TokenCounts,
    budget: Budget,
    folds: int,
    usage: IntArray | None = None,
) -> tuple[AllowlistRule, Bars]:
    """The proposal chosen on every case and the rule measured k-fold, at the first bar whose
    gap holds (:func:`~workbench.evaluate.generalise.generalising`)."""

    def at(recurrence: Recurrence, cap: float | None) -> AllowlistRule:
        within = budget.capped(cap)
        exposed = choose(surf, cases, tokens, within, usage, recurrence)
        held = cross_exposed(surf, cases, tokens, within, folds, usage, recurrence)
        heldout = pooled([static_metrics(results, tokens) for results in held.measured], tokens)
        return AllowlistRule(exposed, held, heldout, measure(exposed, cases, tokens))

    def figures(rule: AllowlistRule) -> tuple[StaticMetrics, StaticMetrics]:
        return rule.insample, rule.heldout

    def cost(rule: AllowlistRule) -> float:
        return float(rule.heldout.tokens)

    at_cost = None if budget.explicit else cost
    return generalising(at, figures, at_cost, len(cases), folds)


def cross_exposed(
    surf: Surface,
    cases: CaseSet,
    tokens: TokenCounts,
    budget: Budget,
    folds: int,
    usage: IntArray | None = None,
    recurrence: Recurrence = AT_LEAST_MIN,
) -> CrossFit[Exposed, CaseResult]:
    """The exposed set chosen on each fold's other folds, and its held-out cases' results."""
    return cross_fit(
        len(cases),
        folds,
        lambda fold: choose(surf, cases.subset(fold.train), tokens, budget, usage, recurrence),
        lambda exposed, fold: measure_cases(exposed, cases.subset(fold.test), tokens),
    )


def pooled(per_fold: Sequence[StaticMetrics], tokens: TokenCounts) -> StaticMetrics:
    """The folds' figures pooled (weighted by their cases; tokens rounded to a whole token)."""
    n = sum(m.cases for m in per_fold)
    return StaticMetrics(
        cases=n,
        hit=sum(m.hit * m.cases for m in per_fold) / n,
        recall=sum(m.recall * m.cases for m in per_fold) / n,
        tokens=round(sum(m.tokens * m.cases for m in per_fold) / n),
        tokens_all=int(tokens.all),
    )


def current_exposed(
    agent: AgentConfig, catalog: Catalog, surf: Surface
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """What the file exposes now, read as HoloDeck 0.7 reads it."""
    entries = {t.name: t for t in agent.agent.tools or [] if isinstance(t, MCPTool)}
    exposed = surf.fixed.copy()
    if surf.backend == "claude":
        # The SDK reads allowed_tools as approvals: only a bare-name deny hides a tool.
        claude = agent.data.get("claude") or {}
        denied = set(claude.get("disallowed_tools") or []) if isinstance(claude, dict) else set()
        for i, tool in enumerate(catalog.tools):
            if surf.candidate[i]:
                exposed[i] = claude_name(tool.plugin, tool.name) not in denied
        return exposed
    dropped = disallowed_servers(agent.data)
    for i, tool in enumerate(catalog.tools):
        if not surf.candidate[i]:
            continue
        entry = entries[tool.plugin]
        allowed = (entry.config or {}).get("allowed_tools")
        exposed[i] = tool.plugin not in dropped and (not allowed or tool.name in allowed)
    return exposed


def disallowed_servers(data: Mapping[str, Any]) -> set[str]:
    """``openai.disallowed_tools`` and ``openai.permissions.disallowed_tools``: config names
    dropped from the agent (a server's name drops the whole server)."""
    openai = data.get("openai")
    if not isinstance(openai, dict):
        return set()
    names = set(openai.get("disallowed_tools") or [])
    permissions = openai.get("permissions")
    if isinstance(permissions, dict):
        names |= set(permissions.get("disallowed_tools") or [])
    return {str(n) for n in names}


def claude_name(server: str, tool: str) -> str:
    """The name the Claude Agent SDK gives an MCP tool."""
    return f"mcp__{server}__{tool}"


def allowlists(
    catalog: Catalog, surf: Surface, exposed: np.ndarray[Any, np.dtype[np.bool_]]
) -> dict[str, list[str]]:
    """Per agent MCP server the backend filters: its exposed tools (server's own names, catalog
    order); a server with none exposed maps to an empty list."""
    out: dict[str, list[str]] = {}
    for i, tool in enumerate(catalog.tools):
        if surf.candidate[i]:
            out.setdefault(tool.plugin, [])
            if exposed[i]:
                out[tool.plugin].append(tool.name)
    return out


def traps(backend: Backend) -> list[str]:
    """What HoloDeck 0.7 does that a user of these lists must know."""
    if backend == "openai-agents":
        return [
            "an empty or missing config.allowed_tools means no filter (the server exposes "
            "everything): a server with no tool kept is dropped with openai.disallowed_tools "
            "(its name drops the whole server)",
            "non-MCP tools (vectorstore, function, ...) are always exposed",
        ]
    return [
        "the Claude Agent SDK reads claude.allowed_tools as approvals, not a filter: a tool not "
        "listed stays in the model's context; claude.disallowed_tools (mcp__<server>__<tool>) "
        "is what removes the tools not kept, so both are written",
        "only stdio MCP servers are bridged on the Claude backend",
        "HoloDeck adds its own in-process tools (vectorstore, function) to the list itself",
    ]
