"""PizzaPi's tool search: with ``toolSearch.enabled`` in ``~/.pizzapi/config.json``, MCP tools
are deferred behind ``search_tools`` once their definitions exceed ``tokenThreshold`` characters
(a server's ``deferLoading`` forces it either way); a search loads its first ``maxResults``
matches, which stay loaded for the session with ``keepLoadedTools``.

The engine is the strategy lab's ``pizzapi`` (PizzaPi's ``tool-search.ts`` reproduced from its
source); the tuner is :mod:`workbench.runtimes.pizzapi.tune`, the file
:mod:`workbench.runtimes.pizzapi.config`. ``export`` prints the ``config.json`` fragment;
``tune --apply`` merges it into PizzaPi's config (``--pizzapi-config PATH``, else
``$PIZZAPI_CONFIG``, else ``~/.pizzapi/config.json``) with a diff and a backup.
"""

from __future__ import annotations

import os
from collections.abc import Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.runtimes.base import (
    Change,
    EngineNote,
    Evidence,
    ExportRequest,
    Knob,
    Probe,
    Runtime,
    RuntimeOption,
    ToolConfig,
    TuneOutcome,
    TuneRequest,
)

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.evaluate.diagnostics import Context, Finding
    from workbench.evaluate.runtimes import RuntimeRow
    from workbench.evaluate.search_queries import SearchQueries
    from workbench.runtimes.base import ConfigWrite, ToolConfig, WriteRequest
    from workbench.runtimes.detect import RuntimeInfo
    from workbench.runtimes.pizzapi.tune import PizzaReport, PizzaSetting
    from workbench.workspace import Workspace

NAME = "pizzapi"
#: Where ``tune --apply`` writes when no flag says: this variable, else PizzaPi's global file.
CONFIG_ENV = "PIZZAPI_CONFIG"
CONFIG_FILE = Path(".pizzapi") / "config.json"


def config_path(given: str | None = None) -> Path:
    """The ``config.json`` ``tune --apply`` merges into: ``given`` (``--pizzapi-config``), else
    ``$PIZZAPI_CONFIG``, else PizzaPi's global file."""
    given = given or os.environ.get(CONFIG_ENV)
    return Path(given).expanduser() if given else Path.home() / CONFIG_FILE


def note(queries: SearchQueries) -> str:
    """What the figures stand on, in words (text, ``--json`` and the compare row)."""
    base = (
        "hit and recall are PizzaPi's search as its source reads (the lab's pizzapi engine; "
        "no test runs PizzaPi itself)"
    )
    return f"{base}; {queries.searched()}"


class PizzaPi(Runtime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "PizzaPi (tool search)"
    marker: ClassVar[tuple[str, str]] = ("P", "magenta")
    searches: ClassVar[bool] = True
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("toolSearch.maxResults", "tools one search_tools call loads", "5", "1-10"),
        Knob(
            "toolSearch.tokenThreshold",
            "characters of every MCP tool's name, description and schema above which MCP "
            "tools are deferred",
            "10000",
            ">= 0",
        ),
        Knob(
            "mcpServers.<name>.deferLoading",
            "true: the server's tools always deferred; false: never; unset: by the threshold",
            "unset",
            "true | false",
        ),
        Knob(
            "toolSearch.keepLoadedTools",
            "loaded tools stay for the session (not tuned: a case is one turn)",
            "true",
            "true | false",
        ),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "pizzapi",
        False,
        "the strategy lab's pizzapi engine: PizzaPi's tool-search extension reproduced from its "
        "source (names, deferral, keyword scoring, the text search_tools returns); no test runs "
        "PizzaPi's own code",
    )
    billing: ClassVar[str] = (
        "per task: the tools not deferred, search_tools and its prompt text; a task they do not "
        "cover takes a second request after search_tools, with the tools it loaded and the text "
        "it returned"
    )
    tunes: ClassVar[str] = "maxResults, tokenThreshold, per-server deferLoading"
    config_file: ClassVar[str | None] = "config.json ($PIZZAPI_CONFIG or ~/.pizzapi)"
    writes: ClassVar[str] = "toolSearch and deferLoading into PizzaPi's config.json (merged)"
    budget_flags: ClassVar[frozenset[str]] = frozenset(
        {"--max-tokens", "--min-reduction", "--min-hit"}
    )
    options: ClassVar[tuple[RuntimeOption, ...]] = (
        RuntimeOption(
            "tune",
            "--pizzapi-config",
            "PATH",
            f"with --runtime {NAME} --apply: the config.json to merge into "
            f"(default: ${CONFIG_ENV}, else ~/{CONFIG_FILE})",
        ),
    )

    def detect(self, probe: Probe) -> Evidence | None:
        if (probe.folder / CONFIG_FILE).is_file():
            return Evidence(f"a {CONFIG_FILE} beside the agent (PizzaPi's project config)", "pin")
        return None

    # ---------------------------------------------------------------------------------- tuner

    def tune(self, request: TuneRequest) -> TuneOutcome:
        from dataclasses import replace

        from workbench.evaluate.budget import Budget
        from workbench.evaluate.search_queries import MESSAGE
        from workbench.runtimes.pizzapi.tune import tune_pizzapi

        ws, notes = request.ws, []
        if request.usage:
            notes.append(
                f"--usage has no effect on {self.name}: the servers kept loaded come from the cases"
            )
        budget = Budget(max_tokens=request.cap(), min_hit=request.min_hit)
        report = tune_pizzapi(
            ws.catalog,
            ws.tokens,
            request.cases,
            budget,
            tokens_all=int(ws.tokens.all),
            folds=request.folds,
            queries=request.queries if request.queries is not None else MESSAGE,
            cache=request.cache,
        )
        doc, doc_notes = self._doc(ws, report)
        # a bad file stops here, before the report
        given = request.options.get("pizzapi_config")
        plan = self.config_write(ws, config_path(given), report.setting) if request.apply else None
        if not report.within_budget:
            notes.append("no setting reaches the budget; the closest one is proposed")
        notes += plan.warnings if plan is not None else doc_notes
        quiet = None if plan is None else replace(plan, warnings=())
        return TuneOutcome(
            report,
            self._text(report, ws, request.info),
            self._json(report, ws, doc),
            self._row(report, ws, request.cap()),
            notes=tuple(notes),
            verdict=report.verdict,
            writes=lambda forced: () if quiet is None else (quiet,),
        )

    def _row(self, report: PizzaReport, ws: Workspace, budget: int | None) -> RuntimeRow:
        """Its row of ``compare --runtimes``: the proposal held out, or where the verdict keeps
        the current setting (PizzaPi's defaults) that setting's row, as every runtime's
        (:func:`~workbench.evaluate.runtimes.kept_or`)."""
        from workbench.evaluate.runtimes import ROUND_TRIP, RuntimeRow, figures, kept_or
        from workbench.runtimes.pizzapi.tune import PizzaSetting, loaded_servers
        from workbench.search.strategies.pizzapi import PizzaPiStrategy

        row = RuntimeRow(
            self.name,
            _setting_text(report.setting, report.loaded),
            report.setting.to_json(),
            figures(report.heldout_cases),
            f"{note(report.queries)}; {ROUND_TRIP}",
            budget,
            report.within_budget,
            (report.insample.hit, report.insample.recall),
            report.bars,
        )
        now = report.current or PizzaSetting()
        engine = PizzaPiStrategy(ws.catalog, ws.tokens, now.params)
        words = _setting_text(now, loaded_servers(engine, ws.catalog))
        return kept_or(row, report.verdict, report.current_cases, report.folds, words)

    # --------------------------------------------------------------------------------- writer

    def refusal(self, info: RuntimeInfo, change: Change) -> str | None:
        read = "agent.yaml's tool_filtering" if change == "tool_filtering" else "agent.yaml"
        return (
            f"refused: the runtime is {self.name}, which does not read {read}; use "
            f"`holo-tune tune --runtime {self.name} --apply` (its config.json) or "
            f"`holo-tune export --runtime {self.name}`"
        )

    def export(self, request: ExportRequest) -> ToolConfig:
        from workbench.runtimes.search_tool import export_tool_config

        return export_tool_config(self, request)

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        """The fragment with PizzaPi's defaults, the servers of ``kept`` tools never deferred
        and every other MCP server deferred."""
        from workbench.runtimes.pizzapi.tune import mcp_servers

        return self._built(agent, mcp_servers(catalog), self.kept_setting(agent, catalog, kept))

    def kept_setting(self, agent: AgentConfig, catalog: Catalog, kept: Set[str]) -> PizzaSetting:
        """PizzaPi's defaults with the servers of ``kept`` tools never deferred and every other
        MCP server deferred (the fewest overrides that say so)."""
        from workbench.runtimes.pizzapi.tune import expressed, mcp_servers
        from workbench.search.strategies.pizzapi import PizzaPiStrategy
        from workbench.tokens import token_table

        model = agent.agent.model
        engine = PizzaPiStrategy(catalog, token_table(catalog, str(model.provider), model.name))
        hot = frozenset(t.plugin for t in catalog.tools if t.full_name in kept and t.kind == "mcp")
        return expressed(hot, engine.params.max_results, mcp_servers(catalog), engine.total_chars)

    def findings(self, ctx: Context) -> list[Finding]:
        from workbench.evaluate.diagnostics import not_read_findings

        return not_read_findings(ctx)

    def check_config(self, doc: Any) -> str | None:
        """The first rule of PizzaPi's config the document breaks (None: none)."""
        from workbench.runtimes.pizzapi.config import check_config

        return check_config(doc)

    # ----------------------------------------------------------------------------- the parts

    def _built(self, agent: AgentConfig, servers: list[str], setting: PizzaSetting) -> ToolConfig:
        import json

        from workbench.config.servers import mcp_entries
        from workbench.errors import InputError
        from workbench.runtimes.base import ToolConfig
        from workbench.runtimes.pizzapi.config import config_doc

        doc, notes = config_doc(mcp_entries(agent), servers, setting)
        broken = self.check_config(doc)
        if broken is not None:
            raise InputError(f"the {self.name} config.json would break its rules: {broken}")
        advice = (f"merge this into ~/{CONFIG_FILE} (tune --runtime {self.name} --apply does)",)
        text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
        return ToolConfig(self.name, text, doc, tuple(notes), advice)

    def _doc(self, ws: Workspace, report: PizzaReport) -> tuple[dict[str, Any], list[str]]:
        from workbench.config.servers import mcp_entries
        from workbench.runtimes.pizzapi.config import config_doc
        from workbench.runtimes.pizzapi.tune import mcp_servers

        return config_doc(mcp_entries(ws.agent), mcp_servers(ws.catalog), report.setting)

    def config_write(self, ws: Workspace, path: Path, setting: PizzaSetting) -> ConfigWrite:
        """The merge of ``setting`` into the ``config.json`` at ``path`` (every other key kept;
        a file that does not load, or breaks PizzaPi's rules, is refused), and what to say of
        it (its warnings)."""
        from workbench.config.servers import mcp_entries
        from workbench.config.writeback.files import apply_plan
        from workbench.runtimes.base import ConfigWrite
        from workbench.runtimes.pizzapi.config import plan_config
        from workbench.runtimes.pizzapi.tune import mcp_servers

        project = Path(ws.agent.path).resolve().parent / CONFIG_FILE
        servers = mcp_servers(ws.catalog)
        plan, notes = plan_config(path, mcp_entries(ws.agent), servers, setting)
        if project.is_file() and project.resolve() != path.resolve():
            notes.append(f"{project} is PizzaPi's project config: its keys win over {path}")
        return ConfigWrite(
            plan.path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan),
            what="toolSearch and deferLoading",
            written="toolSearch and deferLoading written",
            unchanged="it already says that",
            warnings=tuple(notes),
        )

    def dashboard_write(self, request: WriteRequest) -> ConfigWrite:
        """The knobs' setting as PizzaPi's: the servers of the tools ``always_include`` names
        never deferred, every other MCP server deferred (as ``e`` shows it), merged into
        ``$PIZZAPI_CONFIG`` or ``~/.pizzapi/config.json``."""
        from dataclasses import replace

        from workbench.search.selection import always_included

        ws = request.ws
        kept = [
            ws.catalog.tools[i] for i in always_included(ws.catalog, request.setting.always_include)
        ]
        setting = self.kept_setting(ws.agent, ws.catalog, {t.full_name for t in kept})
        plan = self.config_write(ws, config_path(), setting)
        loaded = ", ".join(sorted({t.plugin for t in kept if t.kind == "mcp"})) or "none"
        summary = (
            f"{self.name} reads {plan.path}, not agent.yaml's tool_filtering: this merges "
            "toolSearch and deferLoading into it (every other key kept)",
            f"servers never deferred: {loaded} (those of the tools always_include names: a "
            f"toggles one; `holo-tune tune {Path(ws.agent.path).name} --runtime {self.name} "
            "--apply` chooses them from the labelled cases)",
        )
        worse = _worse_than_default(ws, setting, request.cases) if plan.changed else None
        return replace(plan, summary=summary, worse=worse)

    def _json(self, report: PizzaReport, ws: Workspace, doc: dict[str, Any]) -> dict[str, Any]:
        from workbench.evaluate.budget import SET_FIELDS
        from workbench.evaluate.tuner import gap

        return {
            "cases": report.heldout.cases,
            "engine": self.engine.text,
            "approximation": note(report.queries),
            "tokens": self.billing,
            "search_query": report.queries.to_json(),
            "budget": report.budget.to_json(SET_FIELDS),
            "setting": report.setting.to_json(),
            "loaded_servers": list(report.loaded),
            "mcp_chars": report.total_chars,
            "heldout": report.heldout.to_json(),
            "insample": report.insample.to_json(),
            "gap": gap(report.insample, report.heldout),
            "recurrence": report.bars.to_json(),
            "default": report.default.to_json(),
            "verdict": report.verdict.to_json(),
            "within_budget": report.within_budget,
            "folds": [s.to_json() for s in report.fold_settings],
            "config": doc,
        }

    def _text(self, report: PizzaReport, ws: Workspace, info: RuntimeInfo) -> str:
        from workbench.evaluate.generalise import bars_lines
        from workbench.evaluate.tuner import gap_text
        from workbench.evaluate.words import task_budget_text, task_line

        s = report.setting
        loaded = ", ".join(report.loaded)
        kept = f"kept loaded: {loaded}" if loaded else "every MCP server deferred"
        overrides = ", ".join(f"{n}={str(v).lower()}" for n, v in s.defer_loading) or "none"
        out = [
            f"{ws.agent.name}: {report.heldout.cases} cases, {len(ws.catalog)} tools, "
            f"{report.folds}-fold; {info.line()}",
            f"engine    {self.engine.text}",
            f"note      {note(report.queries)}",
            f"query     {report.queries.describe()}",
            f"bill      {self.billing}",
            f"budget    {task_budget_text(report.budget)}",
            f"{report.verdict.label}  maxResults {s.max_results}, tokenThreshold "
            f"{s.token_threshold:,} (the "
            f"agent's MCP tools: {report.total_chars:,} characters), keepLoadedTools "
            f"{str(s.keep_loaded_tools).lower()}; {kept}; deferLoading: {overrides}",
            f"  held-out  {task_line(report.heldout)}",
            f"  in-sample {task_line(report.insample)}",
            f"  gap       {gap_text(report.insample, report.heldout)}",
            *bars_lines(report.bars),
            f"default   PizzaPi's (threshold 10,000, 5 results, no deferLoading): "
            f"{task_line(report.default)}",
            *report.verdict.lines(),
            f"write     --apply merges toolSearch and deferLoading into PizzaPi's config.json "
            f"(--pizzapi-config PATH, ${CONFIG_ENV}, else ~/{CONFIG_FILE}); "
            f"export --runtime {self.name} prints the fragment",
        ]
        return "\n".join(out) + "\n"


def _setting_text(setting: PizzaSetting, loaded: Sequence[str]) -> str:
    """A setting in a few words (its row), ``loaded``: the servers it keeps loaded."""
    kept = f"{', '.join(loaded)} loaded" if loaded else "nothing loaded"
    return f"maxResults {setting.max_results}, threshold {setting.token_threshold:,}, {kept}"


def _worse_than_default(ws: Workspace, setting: PizzaSetting, cases: Path | None) -> str | None:
    """Why ``setting`` is measured worse than PizzaPi's default (what its tuner's verdict
    measures against) on the labelled cases, by the verdict every tuner shares; None: not
    worse, or no cases."""
    from workbench.evaluate.casesource import labelled_cases
    from workbench.evaluate.verdict import worse_than_now
    from workbench.runtimes.pizzapi.tune import PizzaSetting, measure

    items = labelled_cases(ws.agent, ws.catalog, cases)
    if not items:
        return None
    new = measure(setting, ws.catalog, ws.tokens, items)
    now = measure(PizzaSetting(), ws.catalog, ws.tokens, items)
    tokens_all = int(ws.tokens.all)
    return worse_than_now(new, now, tokens_all=tokens_all, same=setting == PizzaSetting())


RUNTIME = PizzaPi()
