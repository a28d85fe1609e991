"""holo-tune's own ``serve`` (:mod:`workbench.serve`): the tuned search as an MCP server in front
of the agent's MCP servers. Its listing is the pinned tools, ``search_tools(query)`` and
``call_tool(name, arguments)``; ``search_tools`` answers with holo-tune's own engine
(:mod:`workbench.search.holo`) under serve's settings (``--settings FILE``, and ``--top-k``,
``--max-tokens``, ``--threshold``, ``--method``, ``--pin`` over it), best first, as definitions,
or that no tool fits. ``search --runtime serve`` (:meth:`Serve.search_ranker`) and ``eval
--runtime serve`` (:meth:`Serve.case_search`) answer through the function serve's
``search_tools`` calls (:func:`workbench.search.serving.answer`): exact, since serve runs it.

The bill is a search-tool design's: every request carries the pins and the two meta tools; a
task the pins do not cover takes a second request with the search's answer (the found tools'
definitions as JSON text; they are called through ``call_tool``). The tuner fits the engine held
out (:mod:`workbench.evaluate.serve_tune`): the signals' weights, the fields, names first, the
no-answer threshold and what a search returns, within the budget.

The configuration is where the client reads its servers: ``tune --apply`` writes the settings
file beside the agent and a ``.mcp.json`` with one ``holo-tune`` server (``holo-tune serve AGENT
--settings FILE``) in place of the agent's MCP servers (every other kept; diff, backup), or points
a HoloDeck 0.7 agent at serve. The dashboard's Write writes the same two files for the knobs
(:meth:`Serve.knobs_settings`: what serve runs now under ``top_k``, the threshold, the pins and
bm25), asking again when the labelled cases measure them worse than what serve runs now;
``export`` prints the knobs' settings file. An older entry with flags (``--method``, ``--top-k``,
``--pin``) still runs, and is read as serve reads it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from workbench.errors import HoloTuneError
from workbench.runtimes.base import EngineNote, ExportRequest, Knob, TuneOutcome, TuneRequest
from workbench.runtimes.search_tool import SearchToolRuntime, SettingWords
from workbench.search.selection import pinned_indices
from workbench.search.strategies.holo import META_TOOLS as HOLO_META_TOOLS

if TYPE_CHECKING:
    from collections.abc import Callable

    from workbench.catalog.models import Catalog, Tool
    from workbench.config import AgentConfig
    from workbench.config.filtering import SearchMethod, ToolFiltering
    from workbench.evaluate.deferred_tune import DeferredSetting
    from workbench.evaluate.metrics import Ranker
    from workbench.runtimes.base import (
        CaseSearch,
        ConfigWrite,
        SearchRanking,
        ToolConfig,
        WriteRequest,
    )
    from workbench.search.flags import SearchFlags
    from workbench.search.holo.engine import HoloEngine
    from workbench.search.holo.settings import HoloSettings
    from workbench.search.strategies.base import SearchEngine, StrategyResult, TokenBill
    from workbench.search.types import FloatArray, IntArray
    from workbench.workspace import Workspace

NAME = "serve"
#: The ``.mcp.json`` server name serve is given.
SERVER = "holo-tune"
MCP_JSON = ".mcp.json"
#: The engine's settings file ``tune --apply`` writes beside the agent.
SETTINGS_FILE = "holo-tune.settings.json"
#: The ``top_k`` values the tuner tries, largest first (HoloDeck's default is 5).
TOP_K = (10, 8, 6, 5, 4, 3, 2, 1)
#: serve's own tools as a client lists them (what every request carries besides the pins).
META_TOOLS = HOLO_META_TOOLS


class Serve(SearchToolRuntime):
    name: ClassVar[str] = NAME
    exact_ranking: ClassVar[str | None] = "exact: holo-tune's own search, as serve runs it"
    title: ClassVar[str] = "holo-tune serve (the tuned search as an MCP server)"
    marker: ClassVar[tuple[str, str]] = ("S", "bright_cyan")
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("--settings", "the engine's settings file (tune --runtime serve --json)", "none"),
        Knob("--pin", "tools listed beside search_tools and call_tool", "none", "tool names"),
        Knob("--top-k", "the most tools one search returns", "5", "1-100"),
        Knob("--max-tokens", "the most tool tokens one search returns", "none", ">= 1"),
        Knob("--threshold", "below this confidence no tool fits (0: none)", "none", "0-1"),
        Knob(
            "--method",
            "bm25: no dense signal; semantic, hybrid: the settings' weights (older .mcp.json)",
            "the settings' weights",
            "semantic | bm25 | hybrid",
        ),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "holo",
        True,
        "holo-tune's own engine (workbench/search/holo), exact: serve runs it; BM25 and the "
        "names, and the dense signal with the workspace's embedder, threshold 0",
    )
    billing: ClassVar[str] = (
        "per task: the pinned tools, search_tools and call_tool; a task the pins do not cover "
        "takes a second request after the search, with the same and the search's results as "
        "JSON text"
    )
    tunes: ClassVar[str] = (
        "its engine, fitted held out: the signals' weights, the fields, names first, the "
        "no-answer threshold, and top_k or each search's budget"
    )
    writes: ClassVar[str] = (
        f"its settings file ({SETTINGS_FILE}; export prints it) and a .mcp.json with one "
        "holo-tune server (serve AGENT --settings FILE) in place of the agent's; a HoloDeck 0.7 "
        "agent pointed at serve (its MCP entries moved to a servers file)"
    )
    config_file: ClassVar[str | None] = (
        f"{SETTINGS_FILE} and its .mcp.json entry (a HoloDeck 0.7 agent: the agent file)"
    )
    lab_engine = "holo"
    #: The dashboard's lab ranks with serve's own engine, the knobs mapped onto it.
    words: ClassVar[SettingWords] = SettingWords(
        knobs=(
            "the lab ranks as {name} does: top_k, threshold (below it no tool fits), "
            "always_include as pins, bm25 without embeddings"
        )
    )
    runs_given_embedder: ClassVar[bool] = True
    results: ClassVar[tuple[int, ...]] = TOP_K
    default_results: ClassVar[int] = 5
    #: serve's search ranks every tool, pinned ones too (they take a result's place).
    index_holds_loaded: ClassVar[bool] = True

    def found_tokens(self, catalog: Catalog, bill: TokenBill) -> FloatArray | None:
        """A found tool reaches the model in ``search_tools``' JSON text (its definition, as
        :class:`ServeSearch` bills it), not as a definition in the request: so is it billed
        here (each tool's own JSON array; a search's results share one, a token or two less)."""
        import numpy as np

        from workbench.search.strategies.base import text_tokens

        out = np.asarray(bill.per_tool, dtype=np.float64).copy()
        for i, tool in enumerate(catalog.tools):
            out[i] = text_tokens(bill, result_text([tool]))
        return out

    def units(self, catalog: Catalog) -> list[tuple[int, ...]]:
        """An MCP tool (only what is behind serve can be pinned)."""
        return [(i,) for i, tool in enumerate(catalog.tools) if tool.kind == "mcp"]

    def search_engine(
        self,
        catalog: Catalog,
        bill: TokenBill,
        setting: DeferredSetting,
        ranker: Ranker | None = None,
    ) -> SearchEngine:
        s = setting
        return ServeSearch(catalog, bill, s.max_results, s.loaded, s.variant, ranker)

    def variants_for(self, ranker: Ranker | None) -> tuple[str, ...]:
        """BM25, and semantic and hybrid when the workspace's engine has an embedder."""
        if getattr(ranker, "embedder", None) is None:
            return self.variants
        from workbench.config.filtering import SEARCH_METHODS

        return ("bm25", *(m for m in SEARCH_METHODS if m != "bm25"))

    def tune(self, request: TuneRequest) -> TuneOutcome:
        """serve's engine fitted held out (:mod:`workbench.evaluate.serve_tune`): its signals'
        weights, fields, names first, the no-answer threshold, and each search's size or
        budget; ``--apply`` writes the settings file and the client's entry."""
        from workbench.runtimes.serve.tune import tune_serve_outcome

        return tune_serve_outcome(self, request)

    def tuner_notes(self, ws: Workspace) -> list[str]:
        """Whether the fit tried the dense signals (an embedder runs here), and if not, why."""
        if ws.embedder.embedder is not None:
            return [f"serve: the dense signals tried, with the embedder {ws.embedder.spec}"]
        from workbench.search.embedders.resolve import LOCAL_HINT

        choice = ws.embedder
        if choice.missing:
            why = f"{choice.runtime} cannot run here without {choice.missing}"
        elif choice.runtime_fallback:
            why = "the agent configures no embedding model"
        else:
            why = "embeddings are off (--embedder none)"
        return [
            f"serve: fitted without the dense signals: no embedder runs here ({why}); "
            f"--embedder {LOCAL_HINT} runs offline, and serve is then given it"
        ]

    # --------------------------------------------------------------------------------- search

    def served(
        self, ws: Workspace, flags: SearchFlags, warn: Callable[[str], None]
    ) -> tuple[HoloSettings, HoloEngine]:
        """The settings and engine serve runs for these flags (``--settings`` and the flags over
        it, :mod:`workbench.search.flags`), on the workspace's catalog and tokens, with the
        embedder serve would score with (the workspace's, or the settings' own)."""
        from workbench.evaluate.serve_tune import labelled_of
        from workbench.search.flags import check_embedder, serve_settings
        from workbench.search.serving import build_engine

        settings = serve_settings(flags, warn)
        for flag in ("variant", "enabled", "usage"):
            if getattr(flags, flag) is not None:
                warn(f"--{flag}: serve's search does not read it; ignored")
        choice = ws.embedder
        if flags.embedder is None and settings.embedder is not None:
            choice = check_embedder(flags, settings, ws.agent)
        labelled = labelled_of(settings, ws.catalog)
        engine = build_engine(
            ws.catalog, ws.tokens, settings, choice.embedder, choice.cache, labelled
        )
        if engine.tool_error:
            warn(f"no dense signal: {engine.tool_error}")
        return settings, engine

    def search_ranker(
        self, ws: Workspace, flags: SearchFlags, warn: Callable[[str], None]
    ) -> Callable[[str], SearchRanking] | None:
        """serve's ``search_tools`` for a query (:func:`workbench.search.serving.answer`, the
        function serve calls): the tools it returns, every tool's fused score best first with
        each signal's share, the confidence, and the request after the search as serve bills
        it (the pins, the two meta tools and the answer's text)."""
        from workbench.runtimes.base import SearchRanking
        from workbench.search.serving import answer

        settings, engine = self.served(ws, flags, warn)
        search = ServeSearch(
            ws.catalog,
            ws.tokens,
            settings.top_k or 0,
            pinned_indices(ws.catalog, settings.pins),
            settings=settings,
            engine=engine,
        )
        setting = {
            "method": "holo",
            "top_k": settings.top_k,
            "similarity_threshold": settings.threshold,
            **settings.to_json(),
        }
        heading = f"{_settings_words(settings, engine)} · {len(ws.catalog)} tools"
        tools = ws.catalog.tools

        def rank(query: str) -> SearchRanking:
            found = answer(engine, settings, query)
            ranking = found.result.ranking
            order = [int(i) for i in ranking.order]
            shares = tuple(
                {name: float(values[i]) for name, values in ranking.shares.items()} for i in order
            )
            sig = engine.signals(query)
            extra = {
                "confidence": round(float(found.confidence), 6),
                "confidence_of": sig.confidence_of,
                "refused": found.refused,
                "answer": found.text() if found.refused else None,
            }
            return SearchRanking(
                query,
                tuple(t.full_name for t in found.tools),
                tuple((tools[i].full_name, float(ranking.scores[i])) for i in order),
                tuple(found.result.indices),
                search.run(query).tokens,
                setting,
                heading,
                shares=shares,
                extra=extra,
                note=found.text() if found.refused else None,
            )

        return rank

    def case_search(
        self, ws: Workspace, flags: SearchFlags, warn: Callable[[str], None]
    ) -> CaseSearch:
        """serve's search measured as serve answers (:class:`ServeSearch` under the flags'
        settings)."""
        from workbench.runtimes.base import CaseSearch

        settings, engine = self.served(ws, flags, warn)
        pins = pinned_indices(ws.catalog, settings.pins)
        search = ServeSearch(
            ws.catalog, ws.tokens, settings.top_k or 0, pins, settings=settings, engine=engine
        )
        dense = engine.embedder is not None and engine.dense
        spec = getattr(engine.embedder, "spec", None) if dense else None
        return CaseSearch(search, _settings_words(settings, engine), {"dense": spec})

    # --------------------------------------------------------------------------------- writer

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        """The settings file for the YAML's block with ``kept`` pinned (the dashboard's ``e``,
        its knobs' always_include), as ``export --runtime serve`` prints it."""
        from workbench.config.writeback.block import start_setting

        pins = [t.full_name for t in catalog.tools if t.full_name in kept]
        setting = start_setting(agent.filtering).with_(always_include=pins)
        return self.settings_config(agent, catalog, setting)

    def dashboard_write(self, request: WriteRequest) -> ConfigWrite | None:
        """The dashboard's Write: the knobs' settings (:meth:`knobs_settings`; BM25 when no
        embedder runs here) written as ``tune --apply`` writes the fitted ones, the settings
        file and the client's entry starting serve with it (:meth:`settings_writes`), shown as
        one diff and written together; measured against what serve runs now on the labelled
        cases (:meth:`settings_worse`)."""
        from dataclasses import replace

        ws = request.ws
        knobs = request.setting
        runs = ws.embedder.embedder is not None
        if not runs and knobs.search_method != "bm25":
            knobs = knobs.with_(search_method="bm25")
        settings = self.knobs_settings(
            Path(ws.agent.path), ws.catalog, knobs, ws.embedder.spec if runs else None
        )
        plan = self.settings_write(ws, settings)
        pins = ", ".join(settings.pins) or "nothing"
        bar = settings.threshold
        threshold = "no threshold" if bar is None else f"threshold {bar:g}"
        dense = "" if runs else " (bm25: no embedder runs here)"
        summary = (
            f"{self.name} reads its settings file through the client's entry, not agent.yaml's "
            f"tool_filtering: this writes both for the knobs' setting{dense}",
            f"top_k {settings.top_k}, {threshold}, pinned: {pins} (the tools always_include "
            "names: a toggles one); the other settings are what serve runs now",
            f"`holo-tune tune {Path(ws.agent.path).name} --runtime {self.name} --apply` fits them "
            "all on the labelled cases",
        )
        worse = self.settings_worse(ws, settings, request.cases) if plan.changed else None
        return replace(plan, summary=summary, worse=worse)

    def knobs_settings(
        self,
        agent_path: Path,
        catalog: Catalog,
        setting: ToolFiltering,
        embedder: str | None = None,
    ) -> HoloSettings:
        """The engine's settings for the knobs' ``setting`` (the dashboard's Write and
        ``export``): what serve runs now (:meth:`current_settings`: its entry's settings file
        and flags, else the engine's defaults, ``embedder`` scoring the dense signal where they
        name none) under the knobs (:func:`~workbench.search.holo.knobs.knob_settings`:
        ``top_k``, the threshold, bm25 without the dense signal, and the MCP tools
        ``always_include`` names pinned, by their full names)."""
        from workbench.search.holo.knobs import knob_settings
        from workbench.search.holo.settings import HoloSettings
        from workbench.search.selection import always_included

        base = self.lab_base(agent_path) or HoloSettings()
        if base.embedder is None and embedder is not None:
            base = base.with_(embedder=embedder)
        tools = catalog.tools
        pins = tuple(
            tools[i].full_name
            for i in always_included(catalog, setting.always_include)
            if tools[i].kind == "mcp"
        )
        return knob_settings(setting.with_(always_include=pins), base)

    def lab_base(self, agent_path: Path) -> HoloSettings | None:
        """What serve runs now for the agent (:meth:`settings_at`): the lab ranks under it, as
        the Write and ``export`` build on it (:meth:`knobs_settings`)."""
        return self.settings_at(agent_path)

    def settings_worse(
        self, ws: Workspace, settings: HoloSettings, cases: Path | None
    ) -> str | None:
        """Why ``settings`` are measured worse than what serve runs now (:meth:`current_settings`,
        else the engine's defaults) on the labelled cases (the dashboard's ``cases`` file, else
        the one beside the agent), each case as the tuner measures it and judged by the verdict
        every tuner shares; None: not worse, or no cases."""
        from workbench.evaluate.casesource import labelled_cases
        from workbench.evaluate.serve_tune import measure_settings
        from workbench.evaluate.verdict import worse_than_now
        from workbench.search.holo.settings import HoloSettings

        items = labelled_cases(ws.agent, ws.catalog, cases)
        if not items:
            return None
        embedder = ws.embedder.embedder
        now = self.current_settings(ws) or HoloSettings(
            embedder=ws.embedder.spec if embedder is not None else None
        )

        def run(s: HoloSettings) -> list[Any]:
            return list(
                measure_settings(ws.catalog, ws.tokens, items, s, embedder, ws.embedder.cache)
            )

        return worse_than_now(
            run(settings), run(now), tokens_all=int(ws.tokens.all), same=settings == now
        )

    def export(self, request: ExportRequest) -> ToolConfig:
        """``export --runtime serve``: the settings file for the setting the flags and the
        YAML's block give (:meth:`settings_config`; ``--keep`` pins too), on stdout alone."""
        from dataclasses import replace

        from workbench.runtimes.search_tool import kept_names

        catalog = request.catalog()
        notes = tuple(
            f"{flag}: serve's settings have no such key (--top-k, --method); ignored"
            for flag, value in (
                ("--max-results", request.max_results),
                ("--variant", request.variant),
            )
            if value not in (None, "bm25")
        )
        setting = request.setting
        kept = kept_names(catalog, request.keep)
        if kept:
            extra = [t.full_name for t in catalog.tools if t.full_name in kept]
            setting = setting.with_(
                always_include=list(dict.fromkeys([*setting.always_include, *extra]))
            )
        config = self.settings_config(request.agent, catalog, setting)
        return replace(config, warnings=(*notes, *config.warnings))

    def settings_config(
        self, agent: AgentConfig, catalog: Catalog, setting: ToolFiltering
    ) -> ToolConfig:
        """The settings file for the knobs' ``setting`` (:meth:`knobs_settings`; a cases path
        relative to the agent's folder, where the file goes), what it cannot pin, and where it
        goes: what ``export`` prints and the dashboard's ``e`` shows."""
        from workbench.runtimes.base import ToolConfig
        from workbench.search.selection import always_included

        warnings = tuple(
            f"{catalog.tools[i].full_name} is not an MCP tool: serve cannot pin it (the agent "
            "keeps it)"
            for i in always_included(catalog, setting.always_include)
            if catalog.tools[i].kind != "mcp"
        )
        path = Path(agent.path)
        doc = self.knobs_settings(path, catalog, setting).to_json()
        if doc.get("cases"):
            doc["cases"] = _relative(Path(doc["cases"]), path.parent)
        where = f"{path.name}'s {SERVER} entry" if _is_07(agent) else MCP_JSON
        advice = (
            f"save this as {SETTINGS_FILE} beside {path.name}; {where} starts serve with "
            f"`holo-tune serve {path.name} --settings {SETTINGS_FILE}` (`holo-tune tune "
            f"{path.name} --runtime serve --apply`, or the dashboard's Write, writes both)",
            f"or over HTTP: holo-tune serve {path.name} --settings {SETTINGS_FILE} --transport "
            "http --port 8765, and give the client (a provider's MCP connector, `claude mcp add "
            "--transport http`) the URL http://127.0.0.1:8765/mcp",
        )
        text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
        return ToolConfig(self.name, text, doc, warnings, advice)

    def flags_write(self, ws: Workspace, flags: list[str]) -> ConfigWrite:
        """The write that starts serve with ``flags`` where the client reads its servers: a
        HoloDeck 0.7 agent pointed at serve, else ``.mcp.json`` beside the agent."""
        from workbench.runtimes.base import ConfigWrite

        if _is_07(ws.agent):
            from workbench.config.writeback.files import apply_plans
            from workbench.config.writeback.served import plan_served

            plans = plan_served(ws.agent.path, flags, original=ws.agent.raw)
            names = [name for plan in plans for name in plan.changes]
            moved = f", {', '.join(names)} moved to the servers file" if names else ""
            return ConfigWrite(
                Path(ws.agent.path),
                "".join(plan.diff for plan in plans),
                any(plan.changed for plan in plans),
                lambda: apply_plans(plans),
                what="holo-tune serve",
                written=f"pointed at holo-tune serve{moved}",
                unchanged="serve is already set so",
                warnings=tuple(w for plan in plans for w in plan.warnings),
                no_backup="no backup kept",
                plans=tuple(plans),
            )
        from workbench.config.writeback.files import apply_plan
        from workbench.config.writeback.json_file import plan_json, read_json_object

        path = Path(ws.agent.path).parent / MCP_JSON
        read = read_json_object(path, ".mcp.json file", {"mcpServers": {}})
        doc = read.copy()
        servers = doc.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            from workbench.errors import ConfigError

            raise ConfigError("mcpServers is not an object", file=str(path))
        for name in {t.plugin for t in ws.catalog.tools if t.kind == "mcp"}:
            servers.pop(name, None)
        agent = Path(ws.agent.path).resolve()
        servers[SERVER] = {"command": program(), "args": ["serve", str(agent), *flags]}
        plan = plan_json(read, doc)
        return ConfigWrite(
            path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan),
            what=f"the {SERVER} server",
            written=f"{SERVER} server written",
            unchanged="serve is already set so",
            plans=(plan,),
        )

    # ----------------------------------------------------------------- the engine's settings

    def settings_path(self, ws: Workspace) -> Path:
        """Where ``tune --runtime serve --apply`` writes the engine's settings: beside the
        agent."""
        return Path(ws.agent.path).parent / SETTINGS_FILE

    def settings_writes(self, ws: Workspace, settings: HoloSettings) -> list[ConfigWrite]:
        """The settings file (:meth:`settings_path`; a cases path in it relative to it) and
        the client's entry starting serve with ``--settings`` that file."""
        from workbench.config.writeback.files import apply_plan
        from workbench.config.writeback.json_file import plan_json, read_json_object
        from workbench.runtimes.base import ConfigWrite

        path = self.settings_path(ws)
        doc = settings.to_json()
        if doc.get("cases"):
            doc["cases"] = _relative(Path(doc["cases"]), path.parent)
        read = read_json_object(path, "settings file", {})
        plan = plan_json(read, doc)
        first = ConfigWrite(
            path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan),
            what="serve's engine settings",
            written="settings written",
            unchanged="the settings are already these",
            plans=(plan,),
        )
        return [first, self.flags_write(ws, ["--settings", str(path.resolve())])]

    def settings_write(self, ws: Workspace, settings: HoloSettings) -> ConfigWrite:
        """:meth:`settings_writes` as one write (``tune --apply``'s and the dashboard's): one
        diff, and both files checked before either is written."""
        return _joined(self.settings_writes(ws, settings))

    def current_settings(self, ws: Workspace) -> HoloSettings | None:
        """What serve runs now, as the client's entry starts it: its ``--settings`` file and
        flags (serve's defaults for what they leave out; an older entry's ``--method``,
        ``--top-k`` and pins read as serve reads them); None when no entry starts serve."""
        return self.settings_at(Path(ws.agent.path))

    def settings_at(self, agent_path: Path) -> HoloSettings | None:
        """:meth:`current_settings` for the agent at ``agent_path`` (its ``.mcp.json``)."""
        import json

        from workbench.search.flags import read_serve_argv, serve_settings

        path = agent_path.parent / MCP_JSON
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            args = [str(a) for a in doc["mcpServers"][SERVER]["args"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        flags = read_serve_argv(args)
        if flags is None:
            return None
        try:
            return serve_settings(flags)
        except HoloTuneError:
            return None


def _joined(plans: Sequence[ConfigWrite]) -> ConfigWrite:
    """``plans`` (the settings file, then the client's entry) as one write: one diff, and each
    changed file written in turn (atomic, a backup, refused when it changed since it was read),
    the settings first (the entry names them); the last backup returned."""
    from dataclasses import replace

    from workbench.config.writeback.files import apply_plans

    first, *rest = plans
    changed = [p for p in plans if p.changed]

    def write() -> Path | None:
        if all(plan.plans for plan in changed):  # every file checked before any is written
            return apply_plans([file for plan in changed for file in plan.plans])
        backup = None
        for plan in changed:
            backup = plan.write() or backup
        return backup

    names = " and ".join(p.path.name for p in rest)
    return replace(
        first,
        diff="".join(p.diff for p in changed),
        changed=bool(changed),
        write=write,
        what=f"{first.what} (and {names}'s entry)" if names else first.what,
        written=f"{first.written}, and {names}'s entry" if names else first.written,
        warnings=tuple(w for p in plans for w in p.warnings),
        plans=tuple(file for plan in plans for file in plan.plans),
    )


def _relative(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` when it is under it, else absolute."""
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path.resolve())


def _settings_words(settings: HoloSettings, engine: HoloEngine) -> str:
    """The settings in words: the signals that count, the cut, the threshold, the pins."""
    dense = engine.embedder is not None and engine.dense
    spec = getattr(engine.embedder, "spec", None) if dense else None
    signals = [
        f"{name} {weight:g}" + (f" ({spec})" if name == "dense" and spec else "")
        for name, weight in settings.weights.items()
        if weight and (name != "dense" or dense)
    ]
    cut = [f"top_k {settings.top_k}"] if settings.top_k is not None else []
    if settings.max_tokens is not None:
        cut.append(f"max_tokens {settings.max_tokens:,}")
    bar = settings.threshold
    threshold = f"threshold {bar:g}" if bar is not None else "no threshold"
    pins = f"pinned: {', '.join(settings.pins)}" if settings.pins else "nothing pinned"
    return f"holo ({', '.join(signals) or 'no signal'}) · {', '.join(cut)} · {threshold} · {pins}"


def program() -> str:
    """The command a client starts serve with: this installation's ``holo-tune`` script, as an
    absolute path (Claude Code starts a server from its own folder, with its own PATH, where a
    virtual environment's script is not found), else the bare name."""
    import sys

    script = Path(sys.executable).parent / "holo-tune"
    return str(script) if script.is_file() else "holo-tune"


def _is_07(agent: AgentConfig) -> bool:
    """A HoloDeck 0.7 agent (serve is then its one MCP entry): the YAML says so (an ``openai:``
    block), or the installed ``holodeck-ai`` or a pin beside the agent does, as runtime
    detection reads them."""
    from workbench.config.loader import GENERATION_0_7
    from workbench.runtimes.base import Probe
    from workbench.runtimes.holodeck_versions import holodeck_evidence, installed_version

    if agent.generation == GENERATION_0_7:
        return True
    found = holodeck_evidence(Probe(Path(agent.path), agent.data, installed_version))
    return found is not None and found[0] == "0.7"


def result_text(tools: Sequence[Tool]) -> str:
    """What ``search_tools`` returns for ``tools``: their definitions as one JSON array, the
    very text serve sends (the search's bill, and the tuner's estimate of a found tool: one
    text, so they cannot differ)."""
    from workbench.search.serving import result_text as served

    return served(tools)


#: Engines kept for the tuner's searches (one per catalog, token table, embedder and fields).
_ENGINES: dict[tuple[int, int, int, tuple[tuple[str, int], ...]], tuple[Any, ...]] = {}
_ENGINES_KEPT = 8


def _engine_for(
    catalog: Catalog, bill: TokenBill, settings: HoloSettings, ranker: Ranker | None
) -> HoloEngine:
    """serve's engine for ``catalog`` with the workspace engine's embedder and disk cache
    (``ranker``: the tuner's), built once per catalog, token table, embedder and fields."""
    from workbench.search.serving import build_engine

    dense = settings.weights.get("dense") or settings.weights.get("server_text")
    embedder = getattr(ranker, "embedder", None) if dense else None
    key = (id(catalog), id(bill), id(embedder), settings.fields_key)
    kept = _ENGINES.get(key)
    if kept is not None:
        engine: HoloEngine = kept[0]
        return engine
    cache = getattr(ranker, "embedding_cache", None)
    engine = build_engine(catalog, bill, settings, embedder, cache)
    if len(_ENGINES) >= _ENGINES_KEPT:
        _ENGINES.pop(next(iter(_ENGINES)))
    _ENGINES[key] = (engine, catalog, bill, embedder)  # the ids stay theirs while kept
    return engine


def method_settings(top_k: int, pins: Sequence[str], method: str) -> HoloSettings:
    """The engine settings serve's flags ``--method METHOD --top-k K --threshold 0 --pin ...``
    give (what an older ``tune --apply`` wrote into ``.mcp.json``): the dashboard's mapping of the
    knobs (:func:`~workbench.search.holo.knobs.knob_settings`)."""
    from workbench.config.filtering import ToolFiltering
    from workbench.search.holo.knobs import knob_settings

    setting = ToolFiltering(
        enabled=True,
        search_method=cast("SearchMethod", method),
        top_k=top_k,
        similarity_threshold=0.0,
        always_include=tuple(pins),
        always_include_top_n_used=0,
    )
    return knob_settings(setting)


class ServeSearch:
    """serve's search as the tuner and ``eval --runtime serve`` bill it: what serve's
    ``search_tools`` answers (:func:`workbench.search.serving.answer`, holo-tune's engine under
    serve's settings: by default those of serve's flags ``--method``, ``--top-k``, threshold 0,
    with the workspace's embedder), returned as definitions in JSON text (or "no tool fits");
    the pins and the two meta tools on every request."""

    name: ClassVar[str] = NAME

    def __init__(
        self,
        catalog: Catalog,
        bill: TokenBill,
        top_k: int,
        pins: Sequence[int],
        method: str = "bm25",
        ranker: Ranker | None = None,
        *,
        settings: HoloSettings | None = None,
        engine: HoloEngine | None = None,
    ) -> None:
        from workbench.search.strategies.base import definitions_tokens

        self.catalog = catalog
        self.bill = bill
        self.top_k = top_k
        self.pins = tuple(pins)
        self.method = method
        names = [catalog.tools[i].full_name for i in self.pins]
        self.settings = settings if settings is not None else method_settings(top_k, names, method)
        self.engine = (
            engine if engine is not None else _engine_for(catalog, bill, self.settings, ranker)
        )
        self.meta_tokens = definitions_tokens(bill, list(META_TOOLS))

    @property
    def params(self) -> HoloSettings:
        return self.settings

    def grid(self) -> list[HoloSettings]:
        return [self.settings]

    def run_grid(self, query: str) -> list[StrategyResult]:
        return [self.run(query)]

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        ranked = self.engine.rank(query, self.settings)
        return ranked.order, ranked.scores

    def run(self, query: str) -> StrategyResult:
        from workbench.search.serving import answer
        from workbench.search.strategies.base import StrategyResult, request_tokens, text_tokens

        found = answer(self.engine, self.settings, query)
        ranking = found.result.ranking
        meta = self.meta_tokens + text_tokens(self.bill, found.text())
        sent = self.pins + tuple(i for i in found.result.indices if i not in self.pins)
        return StrategyResult(
            query=query,
            engine=NAME,
            order=ranking.order,
            scores=ranking.scores,
            sent=sent,
            meta_tokens=meta,
            tokens=request_tokens(self.bill, list(self.pins), meta),
        )


RUNTIME = Serve()
