"""What the search-tool runtimes share (Anthropic's API, Claude Code, OpenAI's Responses API):
every tool deferred behind the provider's search tool but a few kept loaded.

The knobs are the loaded set, the search variant (where the provider has two) and the results
per search; the tuner is :mod:`workbench.evaluate.deferred_tune` (billed per task, the search
round trip included); the engine standing for the search is the strategy lab's ``anthropic``
engine. A subclass says what differs: its variants, whether a whole server is the unit kept
loaded, whether the model also sees every namespace, and its tool configuration
(:meth:`SearchToolRuntime.tool_config`) with where it goes (:meth:`SearchToolRuntime.apply`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.runtimes.base import (
    Change,
    ExportRequest,
    Knob,
    Runtime,
    RuntimeWords,
    ToolConfig,
    TuneOutcome,
    TuneRequest,
)

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config.filtering import ToolFiltering
    from workbench.evaluate.deferred_tune import DeferredReport, DeferredSetting
    from workbench.evaluate.diagnostics import Context, Finding
    from workbench.evaluate.metrics import Ranker
    from workbench.evaluate.search_queries import SearchQueries
    from workbench.runtimes.base import ConfigWrite, WriteRequest
    from workbench.runtimes.detect import RuntimeInfo
    from workbench.search.strategies.base import SearchEngine, TokenBill
    from workbench.search.types import FloatArray
    from workbench.workspace import Workspace


def search_knobs(variants: tuple[str, ...]) -> tuple[Knob, ...]:
    """The knobs of a search-tool runtime whose search has ``variants``."""
    return (
        Knob("loaded", "tools kept loaded beside the search tool", "none", "tool names"),
        Knob("variant", "the search tool's matching", variants[0], " | ".join(variants)),
        Knob(
            "max_results", "results per search (assumed: the provider takes no setting)", "5", "3-5"
        ),
    )


#: What stands in for an unpublished ranker, in words (each runtime's engine note uses it).
STAND_IN = "stand-in: the strategy lab's anthropic engine, BM25 (bm25s, Lucene)"
WORDS = "over the tools' names, descriptions and arguments"


#: Beyond this many tools the export line names a ``--keep-file`` instead of ``--keep`` flags.
KEEP_FLAGS = 8


@dataclass(frozen=True)
class SettingWords(RuntimeWords):
    """A search-tool runtime's words, as data (the dashboard's too: :class:`RuntimeWords`):
    templates of the tune report's ``proposed``, ``default`` and ``bill`` lines and of its
    ``compare --runtimes`` row, filled with ``{variant}`` (in the two lines, the variant's name
    in :attr:`variant_names` when it has one), ``{results}`` (per search), ``{loaded}`` (the
    loaded tools in words), ``{count}`` (how many are loaded) and ``{namespaces}`` (what the
    bill adds where every request shows each namespace); the loaded tools in words
    (:attr:`loaded`, filled with ``{names}``, as the configuration names them,
    :meth:`SearchToolRuntime.loaded_names`, and ``{count}``, how many tools; :attr:`nothing`
    when none is); the ``export`` command that prints the configuration (:attr:`export`,
    filled with ``{agent}``, ``{name}``, ``{variant}``, ``{results}`` and ``{keep}``, its
    ``--keep`` flags: holo-tune's full names, or with :attr:`keep_listed` the names the
    configuration lists); the report's last lines, how to get the configuration
    (:attr:`write`), filled with ``{export}`` (that command) and ``{config}`` (its file,
    :meth:`SearchToolRuntime.config_where`); and the keys ``tune --json`` adds for the runtime
    (:attr:`json`: each key with what it holds, :data:`JSON_VALUES`)."""

    proposed: str = (
        "{variant} search, {results} results per search (assumed: the provider takes no "
        "setting), loaded: {loaded}"
    )
    row: str = "{variant}, {results} results, {count} tools loaded"
    default: str = "nothing loaded, {variant}, {results} results"
    bill: str = (
        "per task: loaded tools + the search tool{namespaces}; when the loaded tools do not "
        "cover the task, a second request after the search with the same and the tools it "
        "returned"
    )
    write: str = "export    {export}"
    variant_names: Mapping[str, str] = field(default_factory=dict)
    loaded: str = "{names}"
    nothing: str = "nothing"
    export: str = "holo-tune export {agent} --runtime {name} {keep}"
    keep_listed: bool = False
    json: tuple[tuple[str, str], ...] = (("export", "export"),)

    def named(self, variant: str) -> str:
        return self.variant_names.get(variant, variant)

    def proposed_line(self, setting: DeferredSetting, loaded: str) -> str:
        """The proposal in words (the text report's ``proposed`` line); ``loaded``: its loaded
        tools in words (:func:`~workbench.runtimes.search_tool_tune.loaded_text`)."""
        s = setting
        return self.proposed.format(
            variant=self.named(s.variant), results=s.max_results, loaded=loaded
        )

    def row_line(self, setting: DeferredSetting) -> str:
        """The setting in a few words (its ``compare --runtimes`` row)."""
        s = setting
        return self.row.format(variant=s.variant, results=s.max_results, count=len(s.loaded))

    def default_line(self, variant: str, results: int) -> str:
        """The untuned setting in words (the text report's ``default`` line)."""
        return self.default.format(variant=self.named(variant), results=results)

    def bill_line(self, namespaces: bool) -> str:
        """How a task is billed (the text report's ``bill`` line); ``namespaces``: every
        request also shows each namespace's name and description."""
        shown = " + every namespace's name and description" if namespaces else ""
        return self.bill.format(namespaces=shown)

    def write_lines(self, export: str, config: str | None) -> str:
        """The report's last lines: how to get the configuration."""
        return self.write.format(export=export, config=config)

    def loaded_line(self, names: Sequence[str], count: int) -> str:
        """The loaded tools in words: ``names`` as the configuration names them, ``count``
        tools."""
        return self.loaded.format(names=", ".join(names), count=count) if names else self.nothing

    def export_line(
        self, name: str, agent: str, setting: DeferredSetting, names: Sequence[str]
    ) -> str:
        """The ``export`` command that prints the configuration at ``setting``, its ``--keep``
        flags naming ``names`` (a long list travels as a file: the tune's ``--json`` output,
        read by ``--keep-file``)."""
        keep = " ".join(f"--keep {shlex.quote(n)}" for n in names)
        if len(names) > KEEP_FLAGS:
            keep = "--keep-file tuned.json  (tuned.json: this command's --json output)"
        return self.export.format(
            agent=shlex.quote(agent),
            name=name,
            variant=setting.variant,
            results=setting.max_results,
            keep=keep,
        ).rstrip()


#: What a key of :attr:`SettingWords.json` may hold: the loaded tools as the configuration names
#: them, the results per search, the variant, the configuration, the ``export`` command, the
#: configuration's file; ``config.A.B`` is a value in the configuration (null without one).
JSON_VALUES = ("loaded", "results", "variant", "config", "export", "file")


class SearchToolRuntime(Runtime):
    """A runtime whose model finds tools through the provider's search tool."""

    searches: ClassVar[bool] = True
    #: Its words (the tune report's lines, its compare row, its export line and JSON keys,
    #: and the dashboard's).
    words: ClassVar[SettingWords] = SettingWords()
    #: Whose ranking the figures are when they are exact (None: an approximation of the
    #: provider's search): the first words of :meth:`figures_note`.
    exact_ranking: ClassVar[str | None] = None
    #: The search variants the provider offers (``bm25``, ``regex``).
    variants: ClassVar[tuple[str, ...]] = ("bm25",)
    knobs: ClassVar[tuple[Knob, ...]] = search_knobs(("bm25",))
    #: Whether what can be kept loaded is a whole server (else a tool).
    per_server: ClassVar[bool] = False
    #: Whether every request also shows each namespace's name and description.
    bills_namespaces: ClassVar[bool] = False
    #: Where the printed configuration is pasted (None: the runtime's file is written).
    paste_into: ClassVar[str | None] = None
    budget_flags: ClassVar[frozenset[str]] = frozenset(
        {"--max-tokens", "--min-reduction", "--min-hit"}
    )
    billing: ClassVar[str] = (
        "per task: the loaded tools and the search tool; a task the loaded tools do not cover "
        "takes a second request after the search, with the tools it returned"
    )
    #: The results per search the tuner tries, in the order it tries them.
    results: ClassVar[tuple[int, ...]] = (5, 4, 3)
    #: The results per search when nothing is tuned (the default row).
    default_results: ClassVar[int] = 5
    #: Whether the search's index also holds the loaded tools (they then take a result's place);
    #: else it holds the deferred tools only.
    index_holds_loaded: ClassVar[bool] = False

    def units(self, catalog: Catalog) -> list[tuple[int, ...]]:
        """What can be kept loaded, one unit at a time: a tool, or where the runtime keeps whole
        servers loaded (Claude Code's ``alwaysLoad`` is per ``.mcp.json`` server) an MCP server
        (a HoloDeck tool that is not MCP, such as a vectorstore, has no place there)."""
        if not self.per_server:
            return [(i,) for i in range(len(catalog))]
        servers: dict[str, list[int]] = {}
        for i, tool in enumerate(catalog.tools):
            if tool.kind == "mcp":
                servers.setdefault(tool.plugin, []).append(i)
        return [tuple(v) for v in servers.values()]

    def search_engine(
        self,
        catalog: Catalog,
        bill: TokenBill,
        setting: DeferredSetting,
        ranker: Ranker | None = None,
    ) -> SearchEngine:
        """The engine that stands for the search at ``setting`` (:attr:`Runtime.engine` names
        it): the strategy lab's ``anthropic`` engine, the loaded tools not deferred.
        ``ranker``: the workspace's engine (a runtime whose search is holo-tune's own uses it)."""
        from workbench.search.strategies.anthropic import AnthropicStrategy

        return AnthropicStrategy(catalog, bill, setting.params(catalog))

    def found_tokens(self, catalog: Catalog, bill: TokenBill) -> FloatArray | None:
        """What each catalog tool adds to the request after a search that returns it, as the
        tuner's greedy bills it (None: its definition, what the provider's search loads)."""
        return None

    def tuner_notes(self, ws: Workspace) -> list[str]:
        """What ``tune`` says on stderr before its report (what its figures cannot cover)."""
        return []

    def variants_for(self, ranker: Ranker | None) -> tuple[str, ...]:
        """The variants the tuner tries with the workspace's engine ``ranker`` (default: every
        one of :attr:`variants`: the provider's search needs nothing of the workspace)."""
        return self.variants

    def figures_note(self, queries: SearchQueries) -> str:
        """What the tuner's figures stand on, in words (text, ``--json`` and the compare row):
        the runtime's own ranking (:attr:`exact_ranking`) and what each case is searched with,
        else the approximation's words."""
        from workbench.evaluate.deferred_tune import approximation

        if self.exact_ranking is None:
            return approximation(queries)
        return f"{self.exact_ranking}; {queries.searched()}"

    def tune(self, request: TuneRequest) -> TuneOutcome:
        from workbench.runtimes.search_tool_tune import tune_search_tool

        return tune_search_tool(self, request)

    def refusal(self, info: RuntimeInfo, change: Change) -> str | None:
        read = "agent.yaml's tool_filtering" if change == "tool_filtering" else "agent.yaml"
        what = (
            f"`holo-tune export --runtime {self.name}` to print its configuration"
            if change == "tool_filtering"
            else f"`holo-tune export --runtime {self.name}`"
        )
        return f"refused: the runtime is {self.name}, which does not read {read}; use {what}"

    def export(self, request: ExportRequest) -> ToolConfig:
        return export_tool_config(self, request)

    def findings(self, ctx: Context) -> list[Finding]:
        from workbench.evaluate.diagnostics import not_read_findings

        return not_read_findings(ctx)

    # --------------------------------------------------------------- tune's report and --apply

    def loaded_names(self, setting: DeferredSetting, catalog: Catalog) -> list[str]:
        """The loaded tools of ``setting`` as its configuration names them (the report's
        ``loaded`` words and the ``loaded`` of its JSON): their full names, or where a whole
        server is kept loaded (:attr:`per_server`) the servers'."""
        from workbench.evaluate.deferred_tune import loaded_servers

        if self.per_server:
            return loaded_servers(setting, catalog)
        return setting.names(catalog)

    def config_where(self, ws: Workspace) -> str | None:
        """Its file for this agent, beside it (the write line's ``{config}``; default:
        :attr:`~workbench.runtimes.base.Runtime.config_file`)."""
        return self.config_file

    def config_write(self, ws: Workspace, setting: DeferredSetting) -> ConfigWrite | None:
        """The plan of the runtime's configuration file for ``setting`` (None: the
        configuration lives in the user's code). ``tune --apply`` and the dashboard's Write
        both write through it."""
        return None

    def current_setting(self, ws: Workspace) -> DeferredSetting | None:
        """What the runtime runs today, as its configuration reads (None: nothing configured,
        the runtime's default): the verdict measures the proposal against it."""
        return None

    def dashboard_setting(self, ws: Workspace, setting: ToolFiltering) -> DeferredSetting:
        """The knobs' setting as this runtime's: the tools ``always_include`` names kept loaded,
        the first variant, the default results per search."""
        from workbench.evaluate.deferred_tune import DeferredSetting
        from workbench.search.selection import always_included

        loaded = tuple(always_included(ws.catalog, setting.always_include))
        return DeferredSetting(self.variants[0], self.default_results, loaded)

    def dashboard_write(self, request: WriteRequest) -> ConfigWrite | None:
        if self.config_file is None:
            return None
        ws = request.ws
        setting = self.dashboard_setting(ws, request.setting)
        plan = self.config_write(ws, setting)
        if plan is None:
            return None
        kept = ", ".join(setting.names(ws.catalog)) or "nothing"
        summary = (
            f"{self.name} reads {self.config_file}, not agent.yaml's tool_filtering: this writes "
            "it for the knobs' setting",
            f"kept loaded: {kept} (the tools always_include names: a toggles one; "
            f"`holo-tune tune {Path(ws.agent.path).name} --runtime {self.name} --apply` chooses "
            "them from the labelled cases)",
        )
        worse = self.worse_than_now(ws, setting, request.cases) if plan.changed else None
        return replace(plan, summary=summary, worse=worse)

    def worse_than_now(
        self, ws: Workspace, setting: DeferredSetting, cases: Path | None
    ) -> str | None:
        """Why ``setting`` is measured worse than what the runtime runs now (its file's setting,
        else its default) on the labelled cases (the dashboard's ``cases`` file, else the one
        beside the agent), by the verdict every tuner shares; None: not worse, or no cases."""
        from workbench.evaluate.casesource import labelled_cases
        from workbench.evaluate.deferred_tune import (
            DeferredSetting,
            entry_descriptions,
            extra_tokens,
            measure,
        )
        from workbench.evaluate.verdict import worse_than_now

        items = labelled_cases(ws.agent, ws.catalog, cases)
        if not items:
            return None
        now = self.current_setting(ws) or DeferredSetting(
            self.variants[0], self.default_results, ()
        )
        extra = extra_tokens(self, ws.catalog, ws.tokens, entry_descriptions(ws.agent.agent))

        def run(s: DeferredSetting) -> list[Any]:
            return measure(s, ws.catalog, ws.tokens, items, extra, runtime=self, ranker=ws.engine)

        return worse_than_now(
            run(setting), run(now), tokens_all=int(ws.tokens.all), same=setting == now
        )

    def setting_doc(self, setting: DeferredSetting, ws: Workspace) -> Any:
        """The configuration at ``setting`` (``export --runtime``'s output, as data)."""
        kept = set(setting.names(ws.catalog))
        config = self.tool_config(ws.agent, ws.catalog, kept, setting.variant)
        return None if config is None else config.doc

    def tuned_doc(self, report: DeferredReport, ws: Workspace) -> Any:
        """The configuration with the tuned knobs (``export --runtime``'s output, as data)."""
        return self.setting_doc(report.setting, ws)

    def check_config(self, doc: Any) -> str | None:
        """The first documented rule of the provider the configuration breaks (None: none)."""
        return None

    def built(
        self, doc: Any, warnings: tuple[str, ...] = (), advice: tuple[str, ...] = ()
    ) -> ToolConfig:
        """``doc`` as a :class:`ToolConfig`, refused when it breaks the provider's rules."""
        from workbench.errors import InputError
        from workbench.runtimes.base import ToolConfig

        broken = self.check_config(doc)
        if broken is not None:
            raise InputError(f"the {self.name} output would break the API's rules: {broken}")
        text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
        return ToolConfig(self.name, text, doc, warnings, advice)


def export_tool_config(runtime: Runtime, request: ExportRequest) -> ToolConfig:
    """A runtime's own tool configuration for the agent's catalog, the ``--keep`` tools loaded
    (an unknown name is a usage error)."""
    from workbench.errors import InputError

    catalog = request.catalog()
    notes: tuple[str, ...] = ()
    if request.max_results is not None:
        notes = (f"--max-results: {runtime.name}'s configuration has no such setting; ignored",)
    kept = kept_names(catalog, request.keep)
    config = runtime.tool_config(request.agent, catalog, kept, request.variant)
    if config is None:
        raise InputError(f"{runtime.name} does not load tools lazily", field="--runtime")
    return replace(config, warnings=(*notes, *config.warnings))


def kept_names(catalog: Catalog, names: Sequence[str]) -> set[str]:
    """Full names of the tools ``names`` give (``export --keep``: full or bare names); an
    unknown name is a usage error."""
    from workbench.errors import InputError
    from workbench.evaluate.cases import resolve_name

    kept: set[str] = set()
    for name in names:
        found = resolve_name(name, catalog)
        if not found:
            raise InputError(f"no tool named {name!r} in the catalog", field="--keep")
        kept.update(catalog.tools[i].full_name for i in found)
    return kept
