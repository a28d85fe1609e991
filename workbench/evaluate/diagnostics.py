"""What the runtime will do differently from what the config suggests (``holo-tune check``).

Each finding of docs/holodeck-filter.md ("What a tuner should tell its user") is a
small pure function of the agent, its catalog, its token table and a setting; :func:`diagnose` runs
them all. The CLI prints the findings and the dashboard shows the same list, so nothing here prints
or imports UI code. Severities: ``error`` (the block will be rejected or ignored), ``warning`` (it
will not do what it says), ``info`` (worth knowing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from workbench.catalog.models import SEMANTIC_KERNEL, Catalog
from workbench.config import AgentConfig
from workbench.config.filtering import ToolFiltering
from workbench.config.notices import ConfigWarning
from workbench.evaluate.sweep import fixed_tools
from workbench.search.embedders.resolve import runtime_embedding
from workbench.search.types import IntArray, Ranking
from workbench.tokens import TokenTable

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")

#: RRF constant of HoloDeck's hybrid search.
RRF_K = 60
#: Cosine similarity a query rarely exceeds against a tool description, per embedding model family
#: (substring of the model id, lowercase). Above it a semantic threshold cuts nearly everything.
USUAL_MAX_COSINE: tuple[tuple[str, float], ...] = (
    ("text-embedding-3", 0.75),
    ("ada-002", 0.92),
    ("minilm", 0.85),
    ("mpnet", 0.85),
    ("nomic-embed", 0.85),
    ("mxbai", 0.9),
)
DEFAULT_MAX_COSINE = 0.85
#: What to do about a tool whose description says (next to) nothing.
DESCRIPTION_FIX = (
    "give the tool (in its MCP server) a sentence saying what it does and when to use it, in "
    "the words users ask with: search reads only its name, server, description and parameter names"
)
#: Show at most this many tool names in a message (the evidence keeps them all).
NAMES_SHOWN = 5


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the user should know, with the evidence that shows it.

    ``code`` is the finding's kind and ``severity`` its level; ``fix`` says what to change, where
    one exists (the catalog, query and what-if findings carry one).
    """

    severity: Severity
    code: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "evidence": self.evidence,
            "fix": self.fix,
        }


class RuntimeFindings(Protocol):
    """What diagnostics ask the runtime itself (:class:`workbench.runtimes.base.Runtime` fits)."""

    def findings(self, ctx: Context) -> list[Finding]: ...


class RunsAgent(Protocol):
    """What runs the agent, and why (:class:`workbench.runtimes.detect.RuntimeInfo` fits): the
    caller detects it (``--runtime``, else from the agent)."""

    @property
    def name(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def reads_tool_filtering(self) -> bool: ...

    @property
    def plugin(self) -> RuntimeFindings: ...


class Parts(Protocol):
    """A workspace or anything with its parts (:class:`workbench.workspace.Workspace` fits)."""

    @property
    def agent(self) -> AgentConfig: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def tokens(self) -> TokenTable: ...


@dataclass(frozen=True, slots=True)
class Context:
    """Everything a check reads."""

    agent: AgentConfig
    catalog: Catalog
    tokens: TokenTable
    setting: ToolFiltering
    #: The model that produced semantic scores here (None: no embedder).
    model_id: str | None
    #: Rankings of sample queries (e.g. the labelled cases) for data-based checks.
    rankings: Sequence[Ranking]
    usage: IntArray | None
    #: What runs the agent.
    runtime: RunsAgent
    #: Why semantic scores are BM25 here while the runtime embeds (None: they are not).
    bm25_here: str | None = None


Check = Callable[[Context], list[Finding]]


def diagnose(
    parts: Parts,
    setting: ToolFiltering | None = None,
    *,
    rankings: Sequence[Ranking] = (),
    usage: IntArray | None = None,
    runtime: RunsAgent,
) -> list[Finding]:
    """Every finding that applies to ``setting`` (default: the file's block), errors first.

    ``runtime``: what runs the agent (``--runtime``, else detected from the agent)."""
    embedder = getattr(parts, "embedder", None)
    reason = getattr(embedder, "bm25_reason", None)
    no_vectors = callable(reason) and getattr(embedder, "embedder", None) is None
    ctx = Context(
        agent=parts.agent,
        catalog=parts.catalog,
        tokens=parts.tokens,
        setting=setting or parts.agent.filtering or ToolFiltering(),
        model_id=getattr(embedder, "model_id", None),
        rankings=rankings,
        usage=usage,
        runtime=runtime,
        bm25_here=reason() if no_vectors and callable(reason) else None,
    )
    checks = CHECKS if ctx.runtime.reads_tool_filtering else RUNTIME_CHECKS
    if not ctx.setting.enabled:
        checks = tuple(check for check in checks if check not in KNOB_CHECKS)
    found = [finding for check in checks for finding in check(ctx)]
    return sorted(found, key=lambda f: SEVERITIES.index(f.severity))


def search_cannot_vary(
    parts: Parts, setting: ToolFiltering, runtime: RunsAgent, usage: IntArray | None = None
) -> list[Finding]:
    """:func:`check_top_k`'s warning for ``setting`` alone (empty when the search can add a
    tool): every query gets the same tools. ``check`` says it among its findings; ``search``
    and ``serve`` say it as they start."""
    ctx = Context(
        agent=parts.agent,
        catalog=parts.catalog,
        tokens=parts.tokens,
        setting=setting,
        model_id=None,
        rankings=(),
        usage=usage,
        runtime=runtime,
    )
    return check_top_k(ctx)


def has_errors(findings: Sequence[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


# ---------------------------------------------------------------------------------- the checks


def _names(catalog: Catalog, indices: Sequence[int]) -> list[str]:
    return [catalog.tools[i].full_name for i in indices]


def _shown(names: Sequence[str]) -> str:
    head = ", ".join(names[:NAMES_SHOWN])
    return head + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


def _has_block(ctx: Context) -> bool:
    return "tool_filtering" in ctx.agent.data


def _block_line(ctx: Context) -> dict[str, Any]:
    line = ctx.agent.line_of("tool_filtering")
    return {"file": str(ctx.agent.path), "line": line} if line else {"file": str(ctx.agent.path)}


def check_config(ctx: Context) -> list[Finding]:
    """The loader's warnings: an error when HoloDeck would refuse the file, else a warning.

    A missing ``${VAR}`` or a stdio ``command`` HoloDeck does not start are loaded leniently here
    (to list and tune the tools anyway), but the runtime refuses the agent.
    """
    found: list[Finding] = []
    for warning in ctx.agent.warnings:
        if not isinstance(warning, ConfigWarning):  # a plain line (an AgentConfig built by hand)
            warning = ConfigWarning(warning)
        evidence: dict[str, Any] = {**warning.where(), **warning.evidence}
        severity: Severity = "error" if warning.refused else "warning"
        message, kind = str(warning), warning.kind
        prefix = f"{evidence['file']}:{evidence['line']}: " if "line" in evidence else ""
        if prefix and message.startswith(prefix):
            message = message[len(prefix) :]
        found.append(Finding(severity, f"config-{kind}", message, evidence))
    return found


def check_generation(ctx: Context) -> list[Finding]:
    """What the runtime that runs the agent says of it (each runtime's own findings: HoloDeck
    0.7 refuses a file with the block, a search-tool runtime does not read it)."""
    return ctx.runtime.plugin.findings(ctx)


def not_read_findings(ctx: Context) -> list[Finding]:
    """A runtime that reads its own configuration, not the block: a block is a warning."""
    runtime = ctx.runtime
    if not _has_block(ctx):
        return []
    evidence = {"runtime": runtime.name, "why": runtime.reason, **_block_line(ctx)}
    return [
        Finding(
            "warning",
            "filtering-not-read",
            f"the runtime is {runtime.name}, which does not read tool_filtering: "
            f"`holo-tune export --runtime {runtime.name}` prints what it reads",
            evidence,
        )
    ]


def generation_findings(ctx: Context) -> list[Finding]:
    """HoloDeck 0.7+ removed ``tool_filtering``: a 0.7+ file with the block fails to load."""
    runtime = ctx.runtime
    evidence = {"runtime": runtime.name, "why": runtime.reason, **_block_line(ctx)}
    if _has_block(ctx):
        return [
            Finding(
                "error",
                "filtering-removed-0.7",
                "the runtime is HoloDeck 0.7, which removed tool_filtering: the file will not "
                f"load there (delete the block; `holo-tune tune --runtime {runtime.name}` "
                "proposes static allowed_tools lists)",
                evidence,
            )
        ]
    return [
        Finding(
            "info",
            "filtering-removed-0.7",
            "the runtime is HoloDeck 0.7: writing a tool_filtering block would make the file "
            "fail to load (0.7 has only static allowed_tools lists)",
            evidence,
        )
    ]


def check_provider(ctx: Context) -> list[Finding]:
    """The filter runs only for openai, azure_openai and ollama models."""
    provider = ctx.agent.agent.model.provider
    if provider != "anthropic":
        return []
    severity: Severity = "error" if _has_block(ctx) else "info"
    return [
        Finding(
            severity,
            "filtering-ignored-anthropic",
            "the model provider is anthropic: HoloDeck parses tool_filtering and ignores it "
            "(the filter runs only for openai, azure_openai and ollama)",
            {"provider": provider, "model": ctx.agent.agent.model.name, **_block_line(ctx)},
        )
    ]


def check_disabled(ctx: Context) -> list[Finding]:
    """No block, or ``enabled: false``: every request carries every tool."""
    if ctx.setting.enabled:
        return []
    why = "tool_filtering is off (enabled: false)" if _has_block(ctx) else "no tool_filtering block"
    return [
        Finding(
            "warning",
            "filtering-disabled",
            f"{why}: every request carries all {len(ctx.catalog)} tools "
            f"({ctx.tokens.all:,} tokens, {ctx.tokens.encoding})",
            {"tools": len(ctx.catalog), "tokens_all": ctx.tokens.all, **_block_line(ctx)},
        )
    ]


def check_embedding_service(ctx: Context) -> list[Finding]:
    """semantic and hybrid need an embedding service; without one the runtime uses BM25."""
    method = ctx.setting.search_method
    if method == "bm25":
        return []
    runtime = runtime_embedding(ctx.agent.agent)
    if runtime.spec.kind != "none":
        return []
    what = "is BM25" if method == "semantic" else "fuses BM25 with itself (a rank cut)"
    return [
        Finding(
            "warning",
            "semantic-is-bm25",
            f"search_method {method} {what} at run time: {runtime.reason}",
            {"search_method": method, "runtime_embedding": "none", "reason": runtime.reason},
        )
    ]


def check_scored_here(ctx: Context) -> list[Finding]:
    """The runtime embeds, but holo-tune has no embedder here: the scores read are BM25."""
    method = ctx.setting.search_method
    if method == "bm25" or ctx.bm25_here is None:
        return []
    if runtime_embedding(ctx.agent.agent).spec.kind == "none":
        return []  # the runtime's own BM25: check_embedding_service says so
    return [
        Finding(
            "info",
            "scored-as-bm25",
            f"search_method {method} is scored as BM25 here ({ctx.bm25_here}); the findings "
            "that read scores (threshold, unreachable tools) are BM25's, not the runtime's",
            {"search_method": method, "reason": ctx.bm25_here},
        )
    ]


def check_top_n_used(ctx: Context) -> list[Finding]:
    """Usage counts start at 0 on every restart: the top-N used are the first N catalog tools."""
    n = ctx.setting.always_include_top_n_used
    if n <= 0 or not len(ctx.catalog):
        return []
    indices = list(range(min(n, len(ctx.catalog))))
    names = _names(ctx.catalog, indices)
    cost = ctx.tokens.total(indices)
    return [
        Finding(
            "warning",
            "top-n-used-cold-start",
            f"always_include_top_n_used: {n}: usage counts start at 0 after every restart, so "
            f"the first {len(names)} catalog tools ride along on every request "
            f"({_shown(names)}; {cost:,} tokens)",
            {"always_include_top_n_used": n, "tools": names, "tokens": cost},
        )
    ]


def hybrid_floor(size: int) -> float:
    """The least normalised hybrid score any tool can have in a catalog of ``size`` tools.

    Every tool gets at least ``1/(60+N)`` from each of the two rankings and the best tool at most
    ``1/61`` from each, so after dividing by the best every score is at least ``61 / (60+N)``.
    """
    return (2 / (RRF_K + size)) / (2 / (RRF_K + 1)) if size else 1.0


def usual_max_cosine(model_id: str | None) -> float:
    """The cosine a query rarely exceeds with the model (a family table, else a default)."""
    lowered = (model_id or "").lower()
    return next((v for key, v in USUAL_MAX_COSINE if key in lowered), DEFAULT_MAX_COSINE)


def check_threshold(ctx: Context) -> list[Finding]:
    """Thresholds that cut nothing (hybrid's floor, 0) or everything (above the cosine range)."""
    s, size = ctx.setting, len(ctx.catalog)
    t = s.similarity_threshold
    if s.search_method == "hybrid" and t <= hybrid_floor(size):
        floor = hybrid_floor(size)
        return [
            Finding(
                "warning",
                "threshold-cuts-nothing",
                f"similarity_threshold {t:g} cuts nothing in hybrid with {size} tools: every "
                f"tool scores at least {floor:.3f} (61/(60+{size})), so top_k alone decides",
                {
                    "similarity_threshold": t,
                    "search_method": "hybrid",
                    "tools": size,
                    "least_score": floor,
                },
            )
        ]
    if t <= 0.0 and s.search_method != "hybrid":
        return [
            Finding(
                "info",
                "threshold-cuts-nothing",
                "similarity_threshold 0 cuts nothing: when few tools share a word with the "
                "query, top_k is filled with unrelated tools in catalog order",
                {"similarity_threshold": t, "search_method": s.search_method},
            )
        ]
    if s.search_method != "semantic":
        return []
    runtime = runtime_embedding(ctx.agent.agent).spec
    if runtime.kind == "none":
        return []  # semantic is BM25 at run time (its own finding): scores are normalised
    return _cosine_ceiling(ctx, t, runtime.model or ctx.model_id)


def _cosine_ceiling(ctx: Context, t: float, model: str | None) -> list[Finding]:
    """The runtime's embedding model rarely scores a query above its usual range."""
    ceiling = usual_max_cosine(model)
    evidence: dict[str, Any] = {"similarity_threshold": t, "model": model}
    semantic = [r for r in ctx.rankings if r.method == "semantic" and r.scores.size]
    if semantic:
        best = np.array([float(r.scores.max()) for r in semantic])
        empty = float((best < t).mean())
        evidence.update(queries=len(semantic), share_with_no_tool=empty, best_max=float(best.max()))
        if empty >= 0.5:
            return [
                Finding(
                    "warning",
                    "threshold-cuts-everything",
                    f"similarity_threshold {t:g} is above the best cosine of {empty:.0%} of "
                    f"{len(semantic)} queries with {semantic[0].model_id or model}: search sends "
                    "no tool for them",
                    evidence,
                )
            ]
        return []
    if t > ceiling:
        evidence["usual_max"] = ceiling
        return [
            Finding(
                "warning",
                "threshold-cuts-everything",
                f"similarity_threshold {t:g} is above the usual cosine range of {model} "
                f"(queries rarely score over {ceiling:g}): search will send almost no tool",
                evidence,
            )
        ]
    return []


def check_always_include(ctx: Context) -> list[Finding]:
    """Entries that match no tool (ignored) or several (only the first is taken)."""
    found: list[Finding] = []
    names = ctx.catalog.names()
    for entry in ctx.setting.always_include:
        matches = [n for n in names if n == entry or n.endswith(f"-{entry}")]
        if not matches:
            found.append(
                Finding(
                    "warning",
                    "always-include-unmatched",
                    f"always_include entry {entry!r} matches no tool: the runtime ignores it",
                    {"entry": entry},
                )
            )
        elif len(matches) > 1:
            found.append(
                Finding(
                    "warning",
                    "always-include-ambiguous",
                    f"always_include entry {entry!r} matches {len(matches)} tools; the runtime "
                    f"takes only the first, {matches[0]} (also: {_shown(matches[1:])})",
                    {"entry": entry, "taken": matches[0], "tools": matches},
                )
            )
    return found


def check_top_k(ctx: Context) -> list[Finding]:
    """top_k no larger than the always-sent tools: the search never adds a tool."""
    fixed = fixed_tools(ctx.setting, ctx.catalog, ctx.usage)
    k = ctx.setting.top_k
    if not fixed or k > len(fixed):
        return []
    names = _names(ctx.catalog, fixed)
    over = f", {len(fixed) - k} over top_k" if len(fixed) > k else ""
    return [
        Finding(
            "warning",
            "top-k-no-search",
            f"top_k {k} <= {len(fixed)} always-sent tools{over}: search adds nothing, every "
            f"request carries the same tools ({_shown(names)})",
            {"top_k": k, "always_sent": names},
        )
    ]


def check_catalog(ctx: Context) -> list[Finding]:
    """Name collisions, empty descriptions, failed servers and other quiet runtime behaviour."""
    found: list[Finding] = []
    for note in ctx.catalog.notes:
        if "is skipped" in note:
            found.append(Finding("warning", "name-collision", note, {"note": note}))
        elif "Semantic Kernel refuses" in note:
            found.append(Finding("error", "runtime-refuses-names", note, {"note": note}))
        elif "prompt(s)" in note:
            found.append(Finding("warning", "runtime-ranks-prompts", note, {"note": note}))
        elif "no description" not in note:
            found.append(Finding("info", "catalog-note", note, {"note": note}))
    empty = [
        t.full_name
        for t in ctx.catalog.tools
        if t.kind == "mcp" and not str(t.definition.get("description") or "").strip()
    ]
    if empty:
        instead = (
            "names and the docstring of Python's functools.partial, which the runtime "
            "indexes in its place"
            if ctx.catalog.view == SEMANTIC_KERNEL
            else "names and parameters"
        )
        found.append(
            Finding(
                "warning",
                "empty-description",
                f"{len(empty)} tool(s) have no description, so search matches only their "
                f"{instead}: {_shown(empty)}",
                {"tools": empty},
                fix=DESCRIPTION_FIX,
            )
        )
    for server in ctx.catalog.servers:
        if server.state == "error":
            found.append(
                Finding(
                    "warning",
                    "server-failed",
                    f"server {server.name} failed ({server.error}): its tools are missing here, "
                    "so figures leave them out",
                    {"server": server.name, "error": server.error},
                )
            )
    return found


CHECKS: tuple[Check, ...] = (
    check_config,
    check_generation,
    check_provider,
    check_disabled,
    check_embedding_service,
    check_scored_here,
    check_top_n_used,
    check_threshold,
    check_always_include,
    check_top_k,
    check_catalog,
)
#: What the knobs will do when the filter runs: said of a filter that is off (no block, or
#: ``enabled: false``) they would contradict "every request carries every tool".
KNOB_CHECKS: tuple[Check, ...] = (
    check_embedding_service,
    check_scored_here,
    check_top_n_used,
    check_threshold,
    check_always_include,
    check_top_k,
)
#: What applies when the runtime does not read ``tool_filtering`` (HoloDeck 0.7, the deferred
#: runtimes): the knobs' checks would describe a filter that never runs.
RUNTIME_CHECKS: tuple[Check, ...] = (check_config, check_generation, check_catalog)
