"""HoloDeck 0.7+: static allowlists. 0.7 removed ``tool_filtering`` (a file that still has the
block fails to load); the tools an agent exposes are fixed when it is built, by
``config.allowed_tools`` per MCP entry (OpenAI Agents backend) or ``claude.disallowed_tools``
(Claude backend).

``tune`` chooses the exposed set from the cases (:mod:`workbench.evaluate.allowlist`), ``tune
--apply`` writes the lists (:mod:`workbench.config.writeback.allowlist`); every request carries
the same tools. ``export`` has nothing to print: the lists are the configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from workbench.errors import InputError
from workbench.runtimes.base import (
    Change,
    EngineNote,
    Evidence,
    ExportRequest,
    Knob,
    Probe,
    Runtime,
    RuntimeWords,
    ToolConfig,
    TuneOutcome,
    TuneRequest,
)
from workbench.runtimes.holodeck_versions import holodeck_evidence

if TYPE_CHECKING:
    from workbench.evaluate.diagnostics import Context, Finding
    from workbench.runtimes.base import ConfigWrite, WriteRequest
    from workbench.runtimes.detect import RuntimeInfo

NAME = "holodeck-0.7"
_INSTEAD = f"use `holo-tune tune --runtime {NAME} --apply` (static allowed_tools lists) instead"


class HoloDeck07(Runtime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "HoloDeck 0.7+"
    generation: ClassVar[str] = "0.7"
    marker: ClassVar[tuple[str, str]] = ("7", "green")
    #: An ``openai:`` block (0.7+ only) outweighs a leftover ``tool_filtering`` block.
    detect_priority: ClassVar[int] = 1
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("allowed_tools", "the MCP tools a server exposes (OpenAI Agents backend)", "all"),
        Knob("claude.disallowed_tools", "the MCP tools hidden (Claude backend)", "none"),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "allowlist", True, "no search: the exposed set is sent on every request"
    )
    billing: ClassVar[str] = "per request: the exposed tools, the same on every request"
    tunes: ClassVar[str] = "the exposed set (allowed_tools / disallowed_tools)"
    writes: ClassVar[str] = "allowed_tools lists into agent.yaml"
    budget_flags: ClassVar[frozenset[str]] = frozenset(
        {"--max-tokens", "--min-reduction", "--min-hit"}
    )
    write_offer: ClassVar[str | None] = "Write 0.7 allowlists"
    words: ClassVar[RuntimeWords] = RuntimeWords(
        reasons={"yaml": "openai: block in the YAML"},
        knobs="{name} does not read these: it has no tool_filtering",
        instead=(
            "The knobs show what HoloDeck 0.6 would send. For 0.7, write static allowlists: "
            "a proposes them from the labelled cases, within the tokens the knobs send per "
            "request; or run `holo-tune tune {agent} --runtime {name} --apply`."
        ),
    )

    def detect(self, probe: Probe) -> Evidence | None:
        found = holodeck_evidence(probe)
        if found is not None:
            return found[1] if found[0] == self.generation else None
        if probe.data is not None and "openai" in probe.data:
            return Evidence("the YAML has an 'openai:' block (0.7+ only)", "yaml")
        return None

    def tune(self, request: TuneRequest) -> TuneOutcome:
        from workbench.runtimes.holodeck07.tune import tune_static

        return tune_static(request)

    def refusal(self, info: RuntimeInfo, change: Change) -> str | None:
        if change == "allowlists":
            return None
        return (
            f"refused: the runtime is {self.name} ({info.reason}); HoloDeck 0.7 removed "
            f"tool_filtering and refuses to load a file that has it; {_INSTEAD}"
        )

    def export(self, request: ExportRequest) -> ToolConfig:
        info = request.info
        from workbench.runtimes.registry import all_runtimes

        block = next(r.name for r in all_runtimes() if r.reads_tool_filtering)
        raise InputError(
            f"the runtime is {self.name} ({info.reason}), which has no tool_filtering block; "
            f"`holo-tune tune --runtime {self.name}` proposes its allowed_tools lists "
            f"(--runtime {block} prints the block anyway)",
            field="--runtime",
        )

    def findings(self, ctx: Context) -> list[Finding]:
        from workbench.evaluate.diagnostics import generation_findings

        return generation_findings(ctx)

    def dashboard_write(self, request: WriteRequest) -> ConfigWrite:
        """The allowlists the allowlist tuner chooses on the labelled cases, within the tokens
        the knobs' setting sends per request (slow: runs the cases); InputError when there are
        no labelled cases to choose from."""
        from workbench.config.writeback.allowlist import plan_allowlists
        from workbench.config.writeback.files import apply_plan
        from workbench.evaluate import evaluate, resolve_cases
        from workbench.evaluate.allowlist import allowlists, traps, tune_allowlist
        from workbench.evaluate.budget import Budget
        from workbench.evaluate.casesource import find_cases_source
        from workbench.runtimes.base import ConfigWrite

        ws = request.ws
        found = find_cases_source(ws.agent, request.cases)
        if found is None:
            raise InputError("no labelled cases to choose the tools from")
        cases = resolve_cases(found[1], ws.catalog)
        if not len(cases):
            raise InputError("no labelled case names a tool of this catalog")
        usage = request.usage
        sent = evaluate(ws.engine, ws.catalog, ws.tokens, cases, request.setting, usage=usage)
        budget = round(sent.metrics.tokens_selected_mean)
        report = tune_allowlist(
            ws.agent, ws.catalog, ws.tokens, cases, Budget(max_tokens=budget), usage=usage
        )
        backend = report.surface.backend
        lists = allowlists(ws.catalog, report.surface, report.setting)
        every = {s: [t.name for t in ws.catalog.tools_of(s)] for s in lists}
        plan = plan_allowlists(ws.agent.path, backend, lists, every=every, original=ws.agent.raw)
        m = report.heldout
        kept = sum(len(v) for v in lists.values())
        summary = (
            f"{kept} MCP tools exposed ({backend} backend), chosen by the allowlist tuner on "
            f"{len(cases)} labelled cases within {budget:,} tokens (what the knobs send per "
            "request)",
            f"held-out: hit {m.hit:.2f} · recall {m.recall:.2f} · {m.tokens:,} tokens per request",
            *(f"· {note}" for note in report.surface.notes),
            *(f"· {trap}" for trap in traps(backend)),
        )
        return ConfigWrite(
            plan.path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan, backup=True),
            what="the allowlists",
            written="allowlists written",
            unchanged="the allowlists already say that",
            warnings=plan.warnings,
            summary=summary,
            worse=report.verdict.worse_text() if plan.changed and report.verdict.worse else None,
        )


RUNTIME = HoloDeck07()
