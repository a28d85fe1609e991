"""The search-tool runtimes' tuner as data (:class:`~workbench.runtimes.search_tool.
SearchToolRuntime`: Anthropic, Claude Code, OpenAI, FastMCP, Argus): what stays loaded beside the
search tool, the search variant and the results per search, chosen from the cases by
:mod:`workbench.evaluate.deferred_tune` with k-fold held-out figures that stand on the engine the
runtime names; the report's text and JSON; and what ``--apply`` writes (the runtime's file where
it has one, else the configuration to paste where it lives in the user's code)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workbench.errors import InputError
from workbench.evaluate.budget import SET_FIELDS, Budget
from workbench.evaluate.deferred_tune import (
    DeferredReport,
    DeferredSetting,
    entry_descriptions,
    tune_deferred,
)
from workbench.evaluate.generalise import bars_lines
from workbench.evaluate.runtimes import deferred_row
from workbench.evaluate.search_queries import MESSAGE
from workbench.evaluate.tuner import gap, gap_text
from workbench.evaluate.words import task_budget_text, task_line
from workbench.runtimes.base import ConfigWrite, Paste, TuneOutcome, TuneRequest
from workbench.search.usage import load_usage
from workbench.workspace import Workspace

if TYPE_CHECKING:
    from workbench.runtimes.detect import RuntimeInfo
    from workbench.runtimes.search_tool import SearchToolRuntime


def tune_search_tool(plugin: SearchToolRuntime, request: TuneRequest) -> TuneOutcome:
    """``tune`` for a runtime whose model finds tools through a search tool."""
    ws, cases = request.ws, request.cases
    budget = Budget(max_tokens=request.cap(), min_hit=request.min_hit)
    usage = load_usage(request.usage, ws.catalog) if request.usage else None
    report = tune_deferred(
        plugin,
        ws.catalog,
        ws.tokens,
        cases,
        budget,
        tokens_all=int(ws.tokens.all),
        folds=request.folds,
        usage=usage,
        described=entry_descriptions(ws.agent.agent),
        queries=request.queries if request.queries is not None else MESSAGE,
        ranker=ws.engine,
        current=plugin.current_setting(ws),
        cache=request.cache,
    )
    notes: list[str] = []
    if not report.within_budget:
        notes.append("no loaded set reaches the budget; the closest one is proposed")
    notes += plugin.tuner_notes(ws)
    config = (
        None
        if request.figures_only  # only the row is read: no configuration to build
        else _config(plugin.tuned_doc, report, ws, apply=request.apply, notes=notes)
    )

    def writes(forced: bool) -> tuple[ConfigWrite, ...]:
        """The runtime's configuration file planned (diff first, backup); none where the
        configuration lives in the user's code (``paste`` then)."""
        plan = plugin.config_write(ws, report.setting)
        return () if plan is None else (plan,)

    paste = None
    if config is not None:
        paste = Paste(
            f"nothing written: {plugin.name}'s tools are set in your code; paste this as the "
            f"{plugin.paste_into}'s tools (export --runtime {plugin.name} prints the same)",
            json.dumps(config, ensure_ascii=False, indent=2) + "\n",
        )
    return TuneOutcome(
        report,
        human(plugin, report, ws, request.info, forced=request.force),
        report_json(plugin, report, ws, config),
        deferred_row(
            plugin.name,
            report,
            ws.catalog,
            request.cap(),
            words=plugin.words.row_line,
            note=plugin.figures_note(report.queries),
        ),
        notes=tuple(notes),
        verdict=report.verdict,
        writes=writes,
        paste=paste,
    )


def _config(
    tuned_doc: Callable[[DeferredReport, Workspace], Any],
    report: DeferredReport,
    ws: Workspace,
    *,
    apply: bool,
    notes: list[str],
) -> Any:
    """The runtime's configuration for the proposal, or None when the agent cannot have one
    (a data set's agent with no MCP entry to proxy, names a provider's namespace refuses): the
    figures still stand, so the report is printed with the reason in ``notes``; ``--apply`` has
    nothing to write and stops with the reason (exit 2)."""
    try:
        return tuned_doc(report, ws)
    except InputError as exc:
        if apply:
            raise
        notes.append(f"{exc}; the figures below stand, but there is no configuration to write")
        return None


def report_json(
    plugin: SearchToolRuntime, report: DeferredReport, ws: Workspace, config: Any
) -> dict[str, Any]:
    return {
        "cases": report.heldout.cases,
        "engine": plugin.engine.text,
        "approximation": plugin.figures_note(report.queries),
        "tokens": "per task: the search round trip included (evaluate.deferred_tune)",
        "search_query": report.queries.to_json(),
        "budget": report.budget.to_json(SET_FIELDS),
        "setting": report.setting.to_json(ws.catalog),
        "heldout": report.heldout.to_json(),
        "insample": report.insample.to_json(),
        "gap": gap(report.insample, report.heldout),
        "recurrence": report.bars.to_json(),
        "default": report.default.to_json(),
        "within_budget": report.within_budget,
        "folds": [s.to_json(ws.catalog) for s in report.fold_settings],
        "current": {
            "setting": None if report.current is None else report.current.to_json(ws.catalog),
            **report.verdict.to_json()["current"],
        },
        "verdict": report.verdict.to_json(),
        **runtime_json(plugin, report.setting, ws, config),
    }


def runtime_json(
    plugin: SearchToolRuntime, setting: DeferredSetting, ws: Workspace, config: Any
) -> dict[str, Any]:
    """What ``tune --json`` adds for this runtime: the keys its words declare
    (:attr:`~workbench.runtimes.search_tool.SettingWords.json`), each filled with what it names
    (:data:`~workbench.runtimes.search_tool.JSON_VALUES`)."""
    values: dict[str, Callable[[], Any]] = {
        "loaded": lambda: plugin.loaded_names(setting, ws.catalog),
        "results": lambda: setting.max_results,
        "variant": lambda: setting.variant,
        "config": lambda: config,
        "export": lambda: export_command(plugin, setting, ws),
        "file": lambda: plugin.config_where(ws),
    }
    out: dict[str, Any] = {}
    for key, value in plugin.words.json:
        if value.startswith("config."):
            found = config
            for part in value.split(".")[1:]:
                found = None if found is None else found[part]
            out[key] = found
        else:
            out[key] = values[value]()
    return out


def loaded_text(plugin: SearchToolRuntime, setting: DeferredSetting, ws: Workspace) -> str:
    """The loaded tools of ``setting`` in the runtime's words (the report's proposal)."""
    names = plugin.loaded_names(setting, ws.catalog)
    return plugin.words.loaded_line(names, len(setting.names(ws.catalog)))


def export_command(plugin: SearchToolRuntime, setting: DeferredSetting, ws: Workspace) -> str:
    """The ``export`` command that prints the configuration at ``setting``, in the runtime's
    words (its ``--keep`` flags name the tools as the words say)."""
    words = plugin.words
    listed = words.keep_listed
    names = plugin.loaded_names(setting, ws.catalog) if listed else setting.names(ws.catalog)
    return words.export_line(plugin.name, str(ws.agent.path), setting, names)


def human(
    plugin: SearchToolRuntime,
    report: DeferredReport,
    ws: Workspace,
    runtime: RuntimeInfo,
    *,
    forced: bool = False,
) -> str:
    line, words = task_line, plugin.words
    loaded = loaded_text(plugin, report.setting, ws)
    default = words.default_line(plugin.variants[0], plugin.default_results)
    out = [
        f"{ws.agent.name}: {report.heldout.cases} cases, {len(ws.catalog)} tools, "
        f"{report.folds}-fold; {runtime.line()}",
        f"engine    {plugin.engine.text}",
        f"note      {plugin.figures_note(report.queries)}",
        f"query     {report.queries.describe()}",
        f"bill      {words.bill_line(bool(report.extra_tokens))}",
        f"budget    {task_budget_text(report.budget)}",
        f"{report.verdict.label}  {words.proposed_line(report.setting, loaded)}",
        f"  held-out  {line(report.heldout)}",
        f"  in-sample {line(report.insample)}",
        f"  gap       {gap_text(report.insample, report.heldout)}",
        *bars_lines(report.bars),
        f"default   {default}: {line(report.default)}",
        *current_lines(plugin, report),
        *report.verdict.lines(),
        *keep_all_lines(report),
        words.write_lines(export_command(plugin, report.setting, ws), plugin.config_where(ws))
        if forced or not report.verdict.kept
        else not_recommended(report),
    ]
    return "\n".join(out) + "\n"


def current_lines(plugin: SearchToolRuntime, report: DeferredReport) -> list[str]:
    """The current setting's line when the runtime's configuration sets one (else it is the
    default line above)."""
    now = report.current
    if now is None or now == DeferredSetting(plugin.variants[0], plugin.default_results, ()):
        return []
    m = report.verdict.current
    return [
        f"current   {plugin.words.row_line(now)} (its configuration): hit {m['hit']:.3f}  "
        f"recall {m['recall']:.3f}  tokens {m['tokens']:,.0f} per task"
    ]


def keep_all_lines(report: DeferredReport) -> list[str]:
    if report.verdict.kind != "keep-all":
        return []
    return ["          every tool: no search tool, every tool loaded in the request"]


def not_recommended(report: DeferredReport) -> str:
    return (
        f"export    nothing to export: the verdict is {report.verdict.kind} "
        "(--apply writes nothing; --apply --force writes the proposal)"
    )
