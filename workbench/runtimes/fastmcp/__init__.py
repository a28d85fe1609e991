"""FastMCP's tool search (PyPI ``fastmcp``, since 3.1): a FastMCP proxy of the agent's MCP servers
(``create_proxy`` of an MCPConfig) with ``BM25SearchTransform`` or ``RegexSearchTransform`` lists
the ``always_visible`` tools, ``search_tools`` and ``call_tool`` in place of every tool. Tools are
named as the proxy mounts them: ``<server>_<tool>`` with several servers, bare with one.

Knobs: ``always_visible`` (the pinned tools, left out of the search's index), ``max_results``
(results per search, FastMCP's default 5) and the variant (``bm25`` or ``regex``). The search is
the strategy lab's ``fastmcp`` engine, FastMCP 4.1.6's transforms reproduced exactly (same
document text, tokens, scores and tie order; tests/test_fastmcp_oracle.py holds it to the
package). The tuner is the search-tool runtimes' (:mod:`workbench.evaluate.deferred_tune`): a
task the pins cover takes one request (the pins, ``search_tools`` and ``call_tool``), else the
search's and one after it that carries the search's results as JSON text. The agent's tools that
are not MCP tools stay outside the proxy: sent with every request, never searched.

The configuration lives in code: ``export`` prints a runnable Python file that builds the proxy
(:mod:`workbench.runtimes.fastmcp.proxy_file`); ``tune --apply`` writes it beside the agent as
``fastmcp_proxy.py`` (diff, backup). ``search --runtime fastmcp`` shows the transform's results in
its order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from workbench.runtimes.base import (
    EngineNote,
    Evidence,
    ExportRequest,
    Knob,
    Probe,
    SearchRanking,
    ToolConfig,
)
from workbench.runtimes.search_tool import SearchToolRuntime, SettingWords

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.evaluate.deferred_tune import DeferredSetting
    from workbench.evaluate.metrics import Ranker
    from workbench.runtimes.base import ConfigWrite, ToolConfig
    from workbench.search.flags import SearchFlags
    from workbench.search.strategies.base import SearchEngine, StrategyResult, TokenBill
    from workbench.search.strategies.fastmcp import FastMCPStrategy
    from workbench.search.types import FloatArray, IntArray
    from workbench.workspace import Workspace

NAME = "fastmcp"
#: FastMCP's ``max_results`` default.
DEFAULT_MAX_RESULTS = 5
#: The ``max_results`` values the tuner tries (the lab engine's grid), largest first.
MAX_RESULTS = tuple(range(10, 0, -1))
#: The FastMCP the proxy file runs with (``uvx --from`` in the agent's entry).
RUN_FROM = "fastmcp>=4.1.6,<5"
#: The variants in words.
TRANSFORMS = {"bm25": "BM25SearchTransform", "regex": "RegexSearchTransform"}
#: The largest proxy file detection reads.
_DETECT_BYTES = 1 << 20
#: ``search`` flags that set HoloDeck's filter, not the transform (ignored, with a warning).
_NOT_READ = ("method", "threshold", "top_n_used", "enabled", "usage")


class FastMCP(SearchToolRuntime):
    name: ClassVar[str] = NAME
    exact_ranking: ClassVar[str | None] = "the ranking is FastMCP 4.1.6's own (exact)"
    title: ClassVar[str] = "FastMCP (tool search transform)"
    marker: ClassVar[tuple[str, str]] = ("F", "bright_green")
    #: A proxy file beside the agent outweighs the agent YAML's blocks.
    detect_priority: ClassVar[int] = 2
    variants: ClassVar[tuple[str, ...]] = ("bm25", "regex")
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob(
            "always_visible",
            "tools listed beside search_tools and call_tool (never searched)",
            "[]",
            "tool names as the proxy lists them",
        ),
        Knob("max_results", "tools one search returns", str(DEFAULT_MAX_RESULTS), "1 or more"),
        Knob(
            "variant",
            "BM25SearchTransform (a query) or RegexSearchTransform (a pattern)",
            "bm25",
            "bm25 | regex",
        ),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "fastmcp",
        True,
        "the strategy lab's fastmcp engine: FastMCP 4.1.6's BM25SearchTransform and "
        "RegexSearchTransform over a proxy of the agent's MCP servers, reproduced exactly (same "
        "document text, tokens, scores and tie order)",
    )
    billing: ClassVar[str] = (
        "per task: the always_visible tools, search_tools and call_tool; a task the pinned tools "
        "do not cover takes a second request after the search, with the same and the search's "
        "results as JSON text"
    )
    tunes: ClassVar[str] = "always_visible, max_results and the variant (bm25 or regex)"
    writes: ClassVar[str] = "a runnable FastMCP proxy, fastmcp_proxy.py beside the agent"
    config_file: ClassVar[str | None] = "fastmcp_proxy.py"
    results: ClassVar[tuple[int, ...]] = MAX_RESULTS
    default_results: ClassVar[int] = DEFAULT_MAX_RESULTS
    words: ClassVar[SettingWords] = SettingWords(
        proposed="{variant}(max_results={results}), always_visible: {loaded}",
        row="{variant}, max_results {results}, {count} always visible",
        default="{variant}(max_results={results}), nothing always visible",
        bill=(
            "per task: always_visible + search_tools + call_tool; when the pinned tools do not "
            "cover the task, a second request after the search with the same and its results "
            "as JSON text"
        ),
        write=(
            "write     --apply writes {config} beside the agent (run: python {config})\n"
            "export    {export}"
        ),
        variant_names=TRANSFORMS,
        reasons={"yaml": "FastMCP proxy beside the agent"},
        nothing="none",
        export=(
            "holo-tune export {agent} --runtime {name} --variant {variant} "
            "--max-results {results} {keep}"
        ),
        keep_listed=True,
        json=(
            ("always_visible", "loaded"),
            ("max_results", "results"),
            ("variant", "variant"),
            ("transform", "config.transform.class"),
            ("file", "file"),
            ("export", "export"),
        ),
    )
    index_holds_loaded: ClassVar[bool] = False

    # ------------------------------------------------------------------------------ detection

    def detect(self, probe: Probe) -> Evidence | None:
        from workbench.runtimes.fastmcp.proxy_file import FILE_NAME

        if _is_proxy(probe.folder / FILE_NAME):
            return Evidence(f"{FILE_NAME} beside the agent builds a FastMCP search proxy", "yaml")
        return None

    # ---------------------------------------------------------------------------------- tuner

    def units(self, catalog: Catalog) -> list[tuple[int, ...]]:
        """A tool the proxy lists (only what is behind it can be pinned)."""
        from workbench.search.strategies.fastmcp import proxied_tools

        return [(t.index,) for t in proxied_tools(catalog) if t.index is not None]

    def search_engine(
        self,
        catalog: Catalog,
        bill: TokenBill,
        setting: DeferredSetting,
        ranker: Ranker | None = None,
    ) -> SearchEngine:
        return _Billed.of(self.strategy(catalog, bill, setting), catalog, bill)

    def found_tokens(self, catalog: Catalog, bill: TokenBill) -> FloatArray | None:
        """A found tool reaches the model as ``search_tools``' JSON text (its ``list_tools``
        definition under the proxy's name), which the engine bills as text: so is it billed here
        (each tool's own JSON array; a search's results share one array, a token or two less)."""
        import numpy as np

        from workbench.search.strategies.base import text_tokens
        from workbench.search.strategies.fastmcp import proxied_tools, result_text

        out = np.asarray(bill.per_tool, dtype=np.float64).copy()
        for tool in proxied_tools(catalog):
            if tool.index is not None:
                out[tool.index] = text_tokens(bill, result_text([tool]))
        return out

    def strategy(
        self, catalog: Catalog, bill: TokenBill, setting: DeferredSetting
    ) -> FastMCPStrategy:
        """The lab's engine at ``setting`` (the loaded tools pinned)."""
        from workbench.search.strategies.fastmcp import FastMCPParams, FastMCPStrategy, Variant

        pins = tuple(catalog.tools[i].full_name for i in setting.loaded)
        variant = cast("Variant", setting.variant)
        params = FastMCPParams(
            variant=variant, max_results=setting.max_results, always_visible=pins
        )
        return FastMCPStrategy(catalog, bill, params)

    def loaded_names(self, setting: DeferredSetting, catalog: Catalog) -> list[str]:
        """The pinned tools as the proxy lists them."""
        return pinned_names(catalog, setting.loaded)

    # --------------------------------------------------------------------------------- search

    def current_setting(self, ws: Workspace) -> DeferredSetting | None:
        """The transform of the proxy file beside the agent (its variant, ``max_results`` and
        ``always_visible``), None when there is none (FastMCP's default)."""
        from workbench.evaluate.deferred_tune import DeferredSetting
        from workbench.runtimes.fastmcp.proxy_file import FILE_NAME, read_setting
        from workbench.search.strategies.fastmcp import proxied_tools

        beside = read_setting(Path(ws.agent.path).parent / FILE_NAME)
        if beside is None:
            return None
        index = {t.name: t.index for t in proxied_tools(ws.catalog) if t.index is not None}
        loaded = tuple(sorted(index[n] for n in beside.always_visible if n in index))
        return DeferredSetting(beside.variant, beside.max_results, loaded)

    def search_ranker(
        self, ws: Workspace, flags: SearchFlags, warn: Callable[[str], None]
    ) -> Callable[[str], SearchRanking] | None:
        """The transform's results for a query, with the knobs of the proxy file beside the
        agent (FastMCP's defaults without one: bm25, 5 results, nothing pinned), overridden by
        ``--variant``, ``--top-k`` (``max_results``) and ``--always-include``
        (``always_visible``); the YAML's block is HoloDeck's, not read."""
        from workbench.config.namesfile import read_names
        from workbench.errors import InputError
        from workbench.runtimes.fastmcp.proxy_file import FILE_NAME, read_setting
        from workbench.search.strategies.fastmcp import FastMCPParams, FastMCPStrategy, Variant

        for flag in _NOT_READ:
            if getattr(flags, flag) is not None:
                warn(f"--{flag.replace('_', '-')}: {self.name}'s search does not read it; ignored")
        beside = read_setting(Path(ws.agent.path).parent / FILE_NAME)
        max_results = flags.top_k if flags.top_k is not None else DEFAULT_MAX_RESULTS
        if flags.top_k is None and beside is not None:
            max_results = beside.max_results
        if max_results < 1:
            raise InputError("max_results must be at least 1", field="--top-k")
        names = list(flags.always_include or [])
        if flags.always_include_file:
            names += read_names(flags.always_include_file, "--always-include-file")
        flagged = flags.always_include is not None or bool(flags.always_include_file)
        if not flagged and beside is not None:
            names = list(beside.always_visible)
        pins = proxy_names(ws.catalog, names, "--always-include")
        chosen = flags.variant or (beside.variant if beside else "bm25")
        variant = cast("Variant", chosen)
        params = FastMCPParams(variant=variant, max_results=max_results, always_visible=pins)
        engine = FastMCPStrategy(ws.catalog, ws.tokens, params)
        setting = {
            "method": variant,
            "top_k": max_results,
            "similarity_threshold": None,
            "always_visible": list(pins),
        }
        source = f" (knobs: {FILE_NAME} and flags)" if beside is not None else ""
        heading = (
            f"{TRANSFORMS[variant]}(max_results={max_results}) · always_visible: "
            f"{', '.join(pins) or 'none'} · {len(engine.searched)} tools searched{source}"
        )

        def rank(query: str) -> SearchRanking:
            order, values = engine.search(query)
            result = engine.result(query, order, values, max_results)
            found = [engine.searched[p] for p in order[:max_results]]
            return SearchRanking(
                query,
                tuple(t.name for t in found),
                tuple(
                    (engine.searched[p].name, float(v)) for p, v in zip(order, values, strict=True)
                ),
                tuple(t.index for t in found if t.index is not None),
                result.tokens,
                setting,
                heading,
            )

        return rank

    # --------------------------------------------------------------------------------- writer

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        chosen = [i for i, t in enumerate(catalog.tools) if t.full_name in kept]
        notes = _left_out(catalog, chosen)
        pins = pinned_names(catalog, chosen)
        return self.proxy_config(agent, catalog, pins, variant, DEFAULT_MAX_RESULTS, notes)

    def proxy_config(
        self,
        agent: AgentConfig,
        catalog: Catalog,
        pins: Sequence[str],
        variant: str,
        max_results: int,
        notes: Sequence[str] = (),
    ) -> ToolConfig:
        """The proxy file with ``pins`` (the proxy's names) always visible."""
        from workbench.config.servers import mcp_entries
        from workbench.errors import InputError
        from workbench.runtimes.base import ToolConfig
        from workbench.runtimes.fastmcp.proxy_file import FILE_NAME, proxy_doc, render_proxy
        from workbench.search.strategies.fastmcp import proxied_tools

        listed = [t.name for t in proxied_tools(catalog) if t.name in set(pins)]
        doc, said = proxy_doc(mcp_entries(agent), variant, max_results, listed, agent.name)
        warnings = [*notes, *said]
        if len(doc["mcpServers"]) != len(_servers(catalog)):
            warnings.append(
                "the proxy mounts fewer servers than the agent has: its tool names (and so the "
                "search's scores) may differ from holo-tune's figures"
            )
        broken = self.check_config(doc)
        if broken is not None:
            raise InputError(f"the {self.name} proxy would break FastMCP's rules: {broken}")
        advice = (
            f"save it as {FILE_NAME} beside the agent and give the agent one MCP entry in place of "
            f'these servers: command uvx, args ["--from", "{RUN_FROM}", "fastmcp", "run", '
            f'"./{FILE_NAME}"] (stdio; HoloDeck starts only npx, node, uvx and docker, and '
            "resolves ./ against the agent's folder); the entry's env must pass on the servers' "
            "variables (the proxy reads no .env file). By hand: python fastmcp_proxy.py",
        )
        return ToolConfig(self.name, render_proxy(doc), doc, tuple(warnings), advice)

    def check_config(self, doc: Any) -> str | None:
        from workbench.runtimes.fastmcp.proxy_file import check_proxy

        return check_proxy(doc)

    def export(self, request: ExportRequest) -> ToolConfig:
        """The proxy file: ``--keep`` names (the proxy's or holo-tune's) always visible,
        ``--variant`` and ``--max-results``."""
        from workbench.errors import InputError

        catalog = request.catalog()
        pins = proxy_names(catalog, list(request.keep), "--keep")
        if request.max_results is not None and request.max_results < 1:
            raise InputError("must be at least 1", field="--max-results")
        return self.proxy_config(
            request.agent,
            catalog,
            pins,
            request.variant,
            request.max_results or DEFAULT_MAX_RESULTS,
        )

    def setting_doc(self, setting: DeferredSetting, ws: Workspace) -> Any:
        return self._tuned(setting, ws).doc

    def _tuned(self, setting: DeferredSetting, ws: Workspace) -> ToolConfig:
        s = setting
        pins = pinned_names(ws.catalog, s.loaded)
        return self.proxy_config(ws.agent, ws.catalog, pins, s.variant, s.max_results)

    def config_write(self, ws: Workspace, setting: DeferredSetting) -> ConfigWrite:
        """The proxy file beside the agent (a new file, or the old one replaced with a backup):
        diff, atomic write, refused when the file changed since it was read."""
        from workbench.config.writeback.files import apply_plan
        from workbench.runtimes.base import ConfigWrite
        from workbench.runtimes.fastmcp.proxy_file import FILE_NAME, plan_proxy

        tuned = self._tuned(setting, ws)
        plan = plan_proxy(Path(ws.agent.path).parent / FILE_NAME, tuned.text)
        return ConfigWrite(
            plan.path,
            plan.diff,
            plan.changed,
            lambda: apply_plan(plan),
            what="the FastMCP proxy",
            written="FastMCP proxy written",
            unchanged="the proxy already says that",
            warnings=tuned.warnings,
        )


@dataclass
class _Billed:
    """The lab's engine as the tuner bills it: the agent's tools that are not MCP tools (outside
    the proxy) ride with every request, the first one too."""

    engine: FastMCPStrategy
    meta_tokens: int

    @classmethod
    def of(cls, engine: FastMCPStrategy, catalog: Catalog, bill: TokenBill) -> _Billed:
        outside = [i for i, tool in enumerate(catalog.tools) if tool.kind != "mcp"]
        extra = int(sum(int(bill.per_tool[i]) for i in outside))
        return cls(engine, engine.meta_tokens + extra)

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        return self.engine.ranking(query)

    def run(self, query: str) -> StrategyResult:
        return self.engine.run(query)


def _servers(catalog: Catalog) -> list[str]:
    from workbench.search.strategies.fastmcp import proxy_servers

    return proxy_servers(catalog)


def pinned_names(catalog: Catalog, chosen: Sequence[int]) -> list[str]:
    """The chosen tools' names as the proxy lists them, in its listing order (tools outside the
    proxy left out)."""
    from workbench.search.strategies.fastmcp import proxied_tools

    wanted = set(chosen)
    return [t.name for t in proxied_tools(catalog) if t.index is not None and t.index in wanted]


def proxy_names(catalog: Catalog, names: Sequence[str], flag: str) -> tuple[str, ...]:
    """``names`` as the proxy lists them: a proxy name as it is, else a name holo-tune resolves
    (full or bare); an unknown name is a usage error naming ``flag``."""
    from workbench.errors import InputError
    from workbench.evaluate.cases import resolve_name
    from workbench.search.strategies.fastmcp import proxied_tools

    listed = proxied_tools(catalog)
    known = {t.name for t in listed}
    out: list[str] = []
    for name in names:
        if name in known:
            out.append(name)
            continue
        found = pinned_names(catalog, resolve_name(name, catalog))
        if not found:
            raise InputError(f"no tool named {name!r} behind the FastMCP proxy", field=flag)
        out += found
    return tuple(dict.fromkeys(out))


def _left_out(catalog: Catalog, chosen: Sequence[int]) -> list[str]:
    """Notes on chosen tools the proxy cannot pin (the agent's own tools are outside it)."""
    from workbench.search.strategies.fastmcp import proxied_tools

    behind = {t.index for t in proxied_tools(catalog)}
    return [
        f"{catalog.tools[i].full_name} is not behind the proxy: sent with every request, not "
        "always_visible"
        for i in chosen
        if i not in behind
    ]


def _is_proxy(path: Path) -> bool:
    """Whether ``path`` builds a FastMCP proxy with a search transform (as holo-tune writes it,
    or edited since)."""
    from workbench.runtimes.fastmcp.proxy_file import TRANSFORMS as CLASSES

    try:
        if not path.is_file() or path.stat().st_size > _DETECT_BYTES:
            return False
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return "create_proxy(" in text and any(f"{c}(" in text for c in CLASSES.values())


RUNTIME = FastMCP()
