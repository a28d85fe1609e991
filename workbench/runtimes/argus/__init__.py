"""Argus MCP (PyPI ``argus-mcp``): a gateway over the agent's MCP servers whose optimizer lists
``find_tool(query, limit=5)`` and ``call_tool(name, arguments)`` plus the ``keep_tools`` in place
of every tool. Its configuration is a YAML file validated by Argus's own ``ArgusConfig``; holo-tune
keeps it in ``argus/config.yaml`` beside the agent (run ``argus-mcp server --config
argus/config.yaml``): ``config.yaml`` beside the agent is HoloDeck's own project config, which
refuses Argus's keys.

Knobs: ``optimizer.keep_tools`` and the ``limit`` the model asks ``find_tool`` for (the model's
argument, Argus's default 5) and the scorer, which is not a setting but the install: scikit-learn
is not one of argus-mcp's dependencies, so a plain ``pip install argus-mcp`` ranks with its
word-overlap fallback (``overlap``, the default here) and one with scikit-learn beside it with
TF-IDF cosine (``tfidf``). The search is the strategy lab's ``argus`` engine, argus-mcp 0.8.6's
``ToolIndex`` reproduced for both (over ``"<name> <description>"``, scores > 0 best first, ties in
the index's order; the index holds every tool, the kept ones too). Tools are
named as Argus lists them: bare under its default ``first-wins`` conflict strategy, or when two
backends share a tool name ``<backend>_<tool>`` under the ``prefix`` strategy, which the written
config then sets. The tuner is the search-tool runtimes' (:mod:`workbench.evaluate.deferred_tune`):
a task the kept tools cover takes one request, else ``find_tool``'s and the one after it.
``export`` prints the config; ``tune --apply`` merges it into ``argus/config.yaml``
(:mod:`workbench.runtimes.argus.config_file`).

``check`` with cases runs them through ``find_tool`` as the config beside the agent sets it (its
``keep_tools`` and description overrides; Argus's default limit, the default scorer) and names the
expected tools it never finds; for those, Argus's per-tool description overrides
(``backends.<server>.tool_overrides.<tool>.description``) built from the words of the queries that
missed them are measured held-out (:mod:`workbench.runtimes.argus.overrides`), listed when the
gain is outside the error bars, and written by ``check --write-fixes``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from workbench.runtimes.base import EngineNote, Evidence, Knob, Probe
from workbench.runtimes.search_tool import SearchToolRuntime, SettingWords

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.evaluate.cases import CaseSet
    from workbench.evaluate.deferred_tune import DeferredSetting
    from workbench.evaluate.diagnostics import Finding
    from workbench.evaluate.metrics import Ranker
    from workbench.runtimes.argus.overrides import OverrideReport
    from workbench.runtimes.base import ConfigWrite, ToolConfig
    from workbench.search.strategies.base import SearchEngine, TokenBill
    from workbench.tokens import TokenTable
    from workbench.workspace import Workspace

NAME = "argus"
#: The ``limit`` values the tuner tries (the lab engine's grid), largest first.
LIMITS = tuple(range(10, 0, -1))
#: Argus's ``find_tool`` default.
DEFAULT_LIMIT = 5
#: The scorers in words: what the install needs for each.
SCORERS = {
    "overlap": "overlap scorer (argus-mcp alone)",
    "tfidf": "tfidf scorer (install scikit-learn beside argus-mcp)",
}
#: The largest config file detection reads.
_DETECT_BYTES = 1 << 20
#: The finding whose fix ``check --write-fixes`` writes.
OVERRIDES = "what-if-description-overrides"
#: What to do about tools find_tool never finds for the cases that need them.
UNREACHABLE_FIX = (
    "keep the most needed in optimizer.keep_tools (e.g. {tool}: {tokens:,} tokens on every "
    "request; `holo-tune tune --runtime argus --apply` picks them), ask find_tool for more "
    "results (its limit), or override their descriptions in Argus with the words these queries "
    f"use ({OVERRIDES} says when that is measured to help)"
)


def prefixed(catalog: Catalog) -> bool:
    """Whether two of the agent's MCP servers list a tool of the same name (Argus's default
    ``first-wins`` would then drop one: the written config asks for ``prefix`` instead)."""
    seen: dict[str, str] = {}
    for tool in catalog.tools:
        if tool.kind == "mcp" and seen.setdefault(tool.name, tool.plugin) != tool.plugin:
            return True
    return False


def argus_names(catalog: Catalog) -> list[str]:
    """Each tool's name as Argus lists it (see the module doc); a tool that is not MCP keeps
    the name the lab gives it (it is the agent's own, not behind Argus)."""
    from workbench.search.strategies.base import exposed_names

    names = exposed_names(catalog)
    if not prefixed(catalog):
        return [t.name if t.kind == "mcp" else n for t, n in zip(catalog.tools, names, strict=True)]
    return [
        f"{t.plugin}_{t.name}" if t.kind == "mcp" else n
        for t, n in zip(catalog.tools, names, strict=True)
    ]


class Argus(SearchToolRuntime):
    name: ClassVar[str] = NAME
    exact_ranking: ClassVar[str | None] = "the ranking is argus-mcp 0.8.6's own (exact)"
    title: ClassVar[str] = "Argus MCP (find_tool optimizer)"
    marker: ClassVar[tuple[str, str]] = ("R", "magenta")
    #: An Argus config with the optimizer on beside the agent outweighs the agent YAML's blocks.
    detect_priority: ClassVar[int] = 2
    #: argus-mcp's scorers: without scikit-learn (its plain install), then with it.
    variants: ClassVar[tuple[str, ...]] = ("overlap", "tfidf")
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob(
            "optimizer.keep_tools",
            "tools listed beside find_tool and call_tool",
            "[]",
            "tool names as Argus lists them",
        ),
        Knob("limit", "results find_tool returns (the model's argument)", "5", "1-10"),
        Knob(
            "scorer",
            "find_tool's ranking: overlap (argus-mcp alone) or tfidf (scikit-learn installed)",
            "overlap",
            "overlap | tfidf",
        ),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "argus",
        True,
        "the strategy lab's argus engine: argus-mcp 0.8.6's find_tool index over name + "
        "description (its word-overlap fallback, or TF-IDF cosine with scikit-learn installed), "
        "reproduced exactly",
    )
    billing: ClassVar[str] = (
        "per task: the keep_tools, find_tool and call_tool; a task the kept tools do not cover "
        "takes a second request after find_tool, with the tools it returned"
    )
    tunes: ClassVar[str] = "optimizer.keep_tools, find_tool's limit and whether to add scikit-learn"
    writes: ClassVar[str] = "optimizer.keep_tools into argus/config.yaml beside the agent"
    config_file: ClassVar[str | None] = "argus/config.yaml"
    fixes: ClassVar[str | None] = "description overrides into argus/config.yaml"
    results: ClassVar[tuple[int, ...]] = LIMITS
    default_results: ClassVar[int] = DEFAULT_LIMIT
    words: ClassVar[SettingWords] = SettingWords(
        proposed=(
            "{variant}, find_tool limit {results} (the model's argument; Argus's default "
            f"{DEFAULT_LIMIT}), keep_tools: {{loaded}}"
        ),
        row="{variant}, limit {results}, {count} keep_tools",
        default="{variant}, no keep_tools, limit {results}",
        bill=(
            "per task: keep_tools + find_tool + call_tool; when the kept tools do not cover "
            "the task, a second request after find_tool with the same and the tools it returned"
        ),
        write="write     --apply merges optimizer.keep_tools into {config} beside the agent",
        variant_names=SCORERS,
        reasons={"yaml": "Argus config beside the agent"},
        nothing="none",
        json=(
            ("keep_tools", "loaded"),
            ("limit", "results"),
            ("scorer", "variant"),
            ("config", "config"),
            ("export", "export"),
        ),
    )
    index_holds_loaded: ClassVar[bool] = True

    # ------------------------------------------------------------------------------ detection

    def detect(self, probe: Probe) -> Evidence | None:
        from workbench.runtimes.argus.config_file import CONFIG_NAMES, FOLDER

        for name in CONFIG_NAMES:
            if _optimizer_on(probe.folder / FOLDER / name):
                where = f"{FOLDER}/{name}"
                return Evidence(f"{where} beside the agent enables Argus's optimizer", "yaml")
        return None

    # ---------------------------------------------------------------------------------- tuner

    def units(self, catalog: Catalog) -> list[tuple[int, ...]]:
        """An MCP tool (only what is behind the gateway can be kept)."""
        return [(i,) for i, tool in enumerate(catalog.tools) if tool.kind == "mcp"]

    def search_engine(
        self,
        catalog: Catalog,
        bill: TokenBill,
        setting: DeferredSetting,
        ranker: Ranker | None = None,
    ) -> SearchEngine:
        from workbench.search.strategies.argus import ArgusParams, ArgusStrategy, Scorer

        keep = tuple(catalog.tools[i].full_name for i in setting.loaded)
        scorer = cast("Scorer", setting.variant)
        params = ArgusParams(limit=setting.max_results, keep_tools=keep, scorer=scorer)
        return ArgusStrategy(catalog, bill, params, names=argus_names(catalog))

    def loaded_names(self, setting: DeferredSetting, catalog: Catalog) -> list[str]:
        """The kept tools as Argus lists them."""
        return _kept_names(catalog, setting.loaded)

    # --------------------------------------------------------------------------------- writer

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        from workbench.config.servers import mcp_entries
        from workbench.runtimes.argus.config_file import dump, render_argus
        from workbench.runtimes.base import ToolConfig

        entries = mcp_entries(agent)
        chosen = [i for i, t in enumerate(catalog.tools) if t.full_name in kept]
        doc, notes = render_argus(entries, _kept_names(catalog, chosen, entries), prefixed(catalog))
        notes += _left_out(catalog, chosen, entries)
        advice = (
            "save it as argus/config.yaml (not config.yaml beside the agent: HoloDeck reads that "
            "one), run `argus-mcp server --config argus/config.yaml` and give the agent one MCP "
            "entry for Argus in place of these servers; find_tool's limit is the model's "
            f"argument (default {DEFAULT_LIMIT})",
        )
        return ToolConfig(self.name, dump(doc), doc, tuple(notes), advice)

    def check_config(self, doc: Any) -> str | None:
        return check_argus(doc)

    # ------------------------------------------------------------------------------- findings

    def file_setting(self, ws: Workspace) -> tuple[DeferredSetting, Catalog, TokenTable]:
        """find_tool as Argus's config beside the agent sets it: its keep_tools, the catalog with
        its description overrides (and their tokens), Argus's default limit, the default scorer."""
        from workbench.evaluate.deferred_tune import DeferredSetting
        from workbench.runtimes.argus.config_file import config_path, read_argus
        from workbench.runtimes.argus.overrides import with_overrides

        found = read_argus(config_path(Path(ws.agent.path).parent))
        names, kept = argus_names(ws.catalog), set(found.keep_tools)
        tools = ws.catalog.tools
        loaded = tuple(i for i, n in enumerate(names) if n in kept and tools[i].kind == "mcp")
        current = {
            i: said
            for i, t in enumerate(tools)
            if t.kind == "mcp"
            and (said := found.descriptions.get(t.plugin, {}).get(listed_name(t))) is not None
        }
        catalog, table = with_overrides(ws.catalog, ws.tokens, current)
        setting = DeferredSetting(self.variants[0], DEFAULT_LIMIT, loaded)
        return setting, catalog, table

    def case_findings(
        self, ws: Workspace, cases: CaseSet, *, folds: int, what_if: bool, quiet: bool
    ) -> list[Finding]:
        """The expected tools find_tool never finds under the config beside the agent and, for
        them, description overrides measured held-out (listed when outside the error bars)."""
        from workbench.config.servers import mcp_entries
        from workbench.evaluate.catalog_findings import unreachable_tools
        from workbench.evaluate.deferred_tune import measure
        from workbench.progress import ProgressLine
        from workbench.runtimes.argus.overrides import measure_overrides

        setting, catalog, table = self.file_setting(ws)

        def run(cat: Catalog, bill: TokenTable, items: Any) -> Any:
            return measure(setting, cat, bill, items, runtime=self)

        base = run(catalog, table, cases.cases)
        said = {"setting": _setting_json(setting, catalog)}
        out = [
            dataclasses.replace(f, evidence={**f.evidence, **said})
            for f in unreachable_tools(
                catalog, table, base, fix=UNREACHABLE_FIX, names=argus_names(catalog)
            )
        ]
        if not out or not what_if or not 2 <= folds <= len(cases):
            return out
        served = _backend_names(mcp_entries(ws.agent))
        tools = catalog.tools
        with ProgressLine("check: description overrides", quiet=quiet) as line:
            report = measure_overrides(
                catalog, table, cases.cases, run, argus_names(catalog), folds=folds,
                allowed=lambda i: tools[i].kind == "mcp" and tools[i].plugin in served,
                baseline=base, on_progress=line,
            )  # fmt: skip
        if report.significant:
            out.append(_overrides_finding(report, catalog, table, said))
        return out

    def fix_write(self, ws: Workspace, findings: list[Finding]) -> ConfigWrite | None:
        """The description overrides of ``findings`` merged into Argus's config beside the agent
        (a new file when there is none): diff, backup, atomic write."""
        from workbench.config.servers import mcp_entries
        from workbench.config.writeback.files import apply_plan
        from workbench.runtimes.argus.config_file import (
            config_path,
            plan_argus,
            read_argus,
            render_argus,
        )
        from workbench.runtimes.base import ConfigWrite

        rows = [row for f in findings if f.code == OVERRIDES for row in f.evidence["overrides"]]
        if not rows:
            return None
        descriptions: dict[str, dict[str, str]] = {}
        for row in rows:
            descriptions.setdefault(row["backend"], {})[row["name"]] = row["description"]
        path = config_path(Path(ws.agent.path).parent)
        kept = list(read_argus(path).keep_tools)
        doc, notes = render_argus(mcp_entries(ws.agent), kept, prefixed(ws.catalog), descriptions)
        plan = plan_argus(path, doc)
        return ConfigWrite(
            plan.path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan),
            what="description overrides",
            written=f"description overrides of {len(rows)} tool(s) written",
            unchanged="the overrides already say that",
            warnings=tuple(notes),
            no_backup="a new file",
        )

    def config_where(self, ws: Workspace) -> str | None:
        """``argus/config.yaml``, or the ``config.yml`` there."""
        from workbench.runtimes.argus.config_file import config_path

        path = config_path(Path(ws.agent.path).parent)
        return f"{path.parent.name}/{path.name}"

    def config_write(self, ws: Workspace, setting: DeferredSetting) -> ConfigWrite:
        """``optimizer.keep_tools`` merged into Argus's config beside the agent (a new file when
        there is none): diff, backup, atomic write."""
        from workbench.config.writeback.files import apply_plan
        from workbench.runtimes.argus.config_file import config_path, plan_argus
        from workbench.runtimes.base import ConfigWrite

        kept = set(setting.names(ws.catalog))
        built = self.tool_config(ws.agent, ws.catalog, kept, setting.variant)
        plan = plan_argus(config_path(Path(ws.agent.path).parent), built.doc)
        return ConfigWrite(
            plan.path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan),
            what="optimizer.keep_tools",
            written="optimizer.keep_tools written",
            unchanged="keep_tools already says that",
            warnings=built.warnings,
        )


def listed_name(tool: Any) -> str:
    """The tool's name as its MCP server lists it (what Argus's ``tool_overrides`` are keyed
    by)."""
    listed = tool.definition.get("name") if tool.definition else None
    return listed if isinstance(listed, str) and listed else str(tool.name)


def _setting_json(setting: DeferredSetting, catalog: Catalog) -> dict[str, Any]:
    return {
        "keep_tools": _kept_names(catalog, setting.loaded),
        "limit": setting.max_results,
        "scorer": setting.variant,
    }


def _overrides_finding(
    report: OverrideReport, catalog: Catalog, table: TokenTable, said: dict[str, Any]
) -> Finding:
    """The measured overrides as a finding: the gain as a what-if row says it, the overrides in
    Argus's shape (``--write-fixes`` writes them from the evidence)."""
    from workbench.evaluate.diagnostics import NAMES_SHOWN, Finding
    from workbench.evaluate.whatif import gain_text
    from workbench.runtimes.argus.config_file import CONFIG_NAMES, FOLDER
    from workbench.runtimes.argus.overrides import with_overrides

    new = {o.tool: o.description for o in report.proposal}
    _, after = with_overrides(catalog, table, new)
    rows: list[dict[str, Any]] = [
        {
            "tool": catalog.tools[o.tool].full_name,
            "backend": catalog.tools[o.tool].plugin,
            "name": listed_name(catalog.tools[o.tool]),
            "words": list(o.words),
            "description": o.description,
            "missed": o.missed,
            "queries": list(o.queries),
            "tokens_added": int(after.per_tool[o.tool] - table.per_tool[o.tool]),
        }
        for o in report.proposal
    ]
    config: dict[str, dict[str, Any]] = {}
    for row in rows:
        config.setdefault(row["backend"], {})[row["name"]] = {"description": row["description"]}
    gain = gain_text(report.baseline, report.heldout, report.gain, report.interval, "task")
    shown = "; ".join(
        f"{catalog.tools[o.tool].full_name}: + {' '.join(o.words)}"
        for o in report.proposal[:NAMES_SHOWN]
    )
    more = f"; and {len(rows) - NAMES_SHOWN} more" if len(rows) > NAMES_SHOWN else ""
    return Finding(
        "info",
        OVERRIDES,
        f"Argus description overrides for {len(rows)} tool(s) find_tool does not reach: {gain}",
        {
            **said,
            "heldout": report.heldout.to_json(),
            "baseline": report.baseline.to_json(),
            "gain": report.gain,
            "ci95": list(report.interval),
            "hit_gain": report.hit_gain,
            "folds": report.folds,
            "overrides": rows,
            "tool_overrides": config,
        },
        fix=(
            "override their descriptions in Argus (backends.<server>.tool_overrides.<tool>."
            f"description: the description kept, the missed queries' words added): {shown}{more}. "
            f"`check --write-fixes` merges them into {FOLDER}/{CONFIG_NAMES[0]} beside the "
            "agent. In each held-out round they were built from the training folds' queries only"
        ),
    )


def _backend_names(entries: list[dict[str, Any]]) -> set[str]:
    from workbench.runtimes.argus.config_file import BACKEND_TYPES

    return {
        str(e.get("name")) for e in entries if str(e.get("transport") or "stdio") in BACKEND_TYPES
    }


def _kept_names(
    catalog: Catalog, chosen: Any, entries: list[dict[str, Any]] | None = None
) -> list[str]:
    """The kept tools' names as Argus lists them: MCP tools of a backend Argus has."""
    names = argus_names(catalog)
    served = None if entries is None else _backend_names(entries)
    return [
        names[i]
        for i in chosen
        if catalog.tools[i].kind == "mcp" and (served is None or catalog.tools[i].plugin in served)
    ]


def _left_out(catalog: Catalog, chosen: list[int], entries: list[dict[str, Any]]) -> list[str]:
    """Notes on kept tools the config cannot keep (the agent's own, or an entry Argus lacks)."""
    served = _backend_names(entries)
    notes = []
    for i in chosen:
        tool = catalog.tools[i]
        if tool.kind != "mcp":
            notes.append(f"{tool.full_name} is the agent's own tool, not behind Argus: not kept")
        elif tool.plugin not in served:
            notes.append(f"{tool.full_name}: its server is not an Argus backend: not kept")
    return notes


def _optimizer_on(path: Path) -> bool:
    """Whether ``path`` is an Argus config (a ``backends`` mapping) with the optimizer on."""
    import yaml

    try:
        if not path.is_file() or path.stat().st_size > _DETECT_BYTES:
            return False
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(data, Mapping) or not isinstance(data.get("backends"), Mapping):
        return False
    optimizer = data.get("optimizer")
    return isinstance(optimizer, Mapping) and optimizer.get("enabled") is True


def check_argus(doc: Any) -> str | None:
    """The first of Argus's schema rules the config breaks (None: none): version "1", each
    backend a known type with its required field, the optimizer on with a list of names."""
    if not isinstance(doc, Mapping) or str(doc.get("version")) != "1":
        return 'version is not "1"'
    backends = doc.get("backends")
    if not isinstance(backends, Mapping):
        return "backends is not a mapping"
    for name, spec in backends.items():
        if not isinstance(spec, Mapping) or spec.get("type") not in (
            "stdio",
            "sse",
            "streamable-http",
        ):
            return f"backends.{name}: type is not stdio, sse or streamable-http"
        if spec["type"] == "stdio" and not str(spec.get("command", "")).strip():
            return f"backends.{name}: a stdio backend needs a command"
        if spec["type"] != "stdio" and not str(spec.get("url", "")).startswith(
            ("http://", "https://", "${")
        ):
            return f"backends.{name}: url must start with http:// or https://"
    optimizer = doc.get("optimizer")
    if not isinstance(optimizer, Mapping) or optimizer.get("enabled") is not True:
        return "optimizer.enabled is not true"
    keep = optimizer.get("keep_tools")
    if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
        return "optimizer.keep_tools is not a list of names"
    return None


RUNTIME = Argus()
