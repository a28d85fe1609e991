"""holo-tune's own ``serve`` (:mod:`workbench.serve`): the tuned search as an MCP server in front
of the agent's MCP servers. Its listing is the pinned tools, ``search_tools(query)`` and
``call_tool(name, arguments)``; ``search_tools`` answers with what ``holo-tune search`` selects,
best first, as full definitions.

Knobs: the search's setting (``--method``, ``--top-k``, ``--threshold``) and the pins (``--pin``).
The engine is holo-tune's own ``holodeck`` engine and selection: exact, since serve runs them.
The bill is a search-tool design's: every request carries the pins and the two meta tools; a
task the pins do not cover takes a second request with the search's results (the found tools'
definitions as JSON text; they are called through ``call_tool``). The tuner is the search-tool
runtimes' (:mod:`workbench.evaluate.deferred_tune`): pins that recur, and ``top_k``, within the
budget, held-out; the search is tuned as BM25 here (what an agent with no embedding service
gets), threshold 0, so that ``top_k`` is the cut.

The configuration is where the client reads its servers: ``export`` prints a ``.mcp.json`` with
one ``holo-tune`` server (``holo-tune serve AGENT`` with the tuned flags) in place of the agent's
MCP servers, and says the streamable-HTTP URL for the providers' MCP connectors; ``tune --apply``
writes that ``.mcp.json`` beside the agent (the servers serve proxies replaced, every other kept;
diff, backup).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.runtimes.base import EngineNote, Knob
from workbench.runtimes.search_tool import SearchToolRuntime

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.evaluate.deferred_tune import DeferredReport, DeferredSetting
    from workbench.evaluate.search_queries import SearchQueries
    from workbench.runtimes.base import ToolConfig
    from workbench.runtimes.search_tool import SearchEngine
    from workbench.search.strategies.base import StrategyResult, TokenBill
    from workbench.search.types import FloatArray, IntArray
    from workbench.workspace import Workspace

NAME = "serve"
#: The ``.mcp.json`` server name serve is given.
SERVER = "holo-tune"
MCP_JSON = ".mcp.json"
#: The ``top_k`` values the tuner tries, largest first (HoloDeck's default is 5).
TOP_K = (10, 8, 6, 5, 4, 3, 2, 1)
#: serve's own tools as a client lists them (what every request carries besides the pins).
META_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "search_tools",
        "description": "Find the tools for a task: the tools this agent's tuned search selects "
        "for the query, best first, with their input schemas. Call one with call_tool.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "what the task needs"}},
            "required": ["query"],
        },
    },
    {
        "name": "call_tool",
        "description": "Call a tool search_tools returned, by name, with its arguments.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "the tool's name"},
                "arguments": {"type": "object", "description": "the tool's arguments"},
            },
            "required": ["name"],
        },
    },
)


class Serve(SearchToolRuntime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "holo-tune serve (the tuned search as an MCP server)"
    marker: ClassVar[tuple[str, str]] = ("S", "bright_cyan")
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("--pin", "tools listed beside search_tools and call_tool", "none", "tool names"),
        Knob("--top-k", "the most tools one search returns", "5", "1-100"),
        Knob("--method", "how the search scores", "bm25", "semantic | bm25 | hybrid"),
        Knob("--threshold", "the lowest score returned", "0.0", "0-1"),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "holodeck",
        True,
        "holo-tune's own search (the holodeck engine and selection), exact: serve runs it; "
        "tuned as BM25 here, threshold 0",
    )
    billing: ClassVar[str] = (
        "per task: the pinned tools, search_tools and call_tool; a task the pins do not cover "
        "takes a second request after the search, with the same and the search's results as "
        "JSON text"
    )
    tunes: ClassVar[str] = "the pins and top_k (BM25, threshold 0)"
    writes: ClassVar[str] = "a .mcp.json with one holo-tune serve server in place of the agent's"
    results: ClassVar[tuple[int, ...]] = TOP_K
    default_results: ClassVar[int] = 5
    #: serve's search ranks every tool, pinned ones too (they take a result's place).
    index_holds_loaded: ClassVar[bool] = True

    def units(self, catalog: Catalog) -> list[tuple[int, ...]]:
        """An MCP tool (only what is behind serve can be pinned)."""
        return [(i,) for i, tool in enumerate(catalog.tools) if tool.kind == "mcp"]

    def search_engine(
        self, catalog: Catalog, bill: TokenBill, setting: DeferredSetting
    ) -> SearchEngine:
        return ServeSearch(catalog, bill, setting.max_results, setting.loaded)

    def figures_note(self, queries: SearchQueries) -> str:
        searched = (
            "the user's message is searched (a model writes its own query)"
            if queries.llm is None
            else f"searched with the query {queries.llm} writes for each case"
        )
        return f"exact: holo-tune's own search, as serve runs it; {searched}"

    def setting_text(self, report: DeferredReport, ws: Workspace) -> str:
        s = report.setting
        return f"bm25, top_k {s.max_results}, threshold 0, pinned: {self.loaded_text(report, ws)}"

    def row_text(self, setting: DeferredSetting) -> str:
        return f"bm25 top_k {setting.max_results}, {len(setting.loaded)} tools pinned"

    def default_text(self) -> str:
        return f"nothing pinned, bm25, top_k {self.default_results}"

    # --------------------------------------------------------------------------------- writer

    def serve_args(self, agent: Path, top_k: int, pins: Sequence[str]) -> list[str]:
        """``holo-tune serve``'s arguments for the tuned setting."""
        args = ["serve", str(agent), "--method", "bm25", "--top-k", str(top_k)]
        args += ["--threshold", "0", "--no-always-include", "--top-n-used", "0"]
        for name in pins:
            args += ["--pin", name]
        return args

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        pins = [t.full_name for t in catalog.tools if t.full_name in kept]
        doc = self._mcp_json(agent, self.default_results, pins)
        advice = (
            f"or over HTTP: holo-tune serve {Path(agent.path).name} --transport http --port 8765 "
            "... and give the client (a provider's MCP connector, `claude mcp add --transport "
            "http`) the URL http://127.0.0.1:8765/mcp",
        )
        return self.built(doc, advice=advice)

    def _mcp_json(self, agent: AgentConfig, top_k: int, pins: Sequence[str]) -> dict[str, Any]:
        path = Path(agent.path).resolve()
        return {
            "mcpServers": {
                SERVER: {"command": "holo-tune", "args": self.serve_args(path, top_k, pins)}
            }
        }

    def tuned_doc(self, report: DeferredReport, ws: Workspace) -> Any:
        pins = report.setting.names(ws.catalog)
        return self._mcp_json(ws.agent, report.setting.max_results, pins)

    def export_command(self, report: DeferredReport, ws: Workspace) -> str:
        args = self.serve_args(
            ws.agent.path, report.setting.max_results, report.setting.names(ws.catalog)
        )
        return "holo-tune " + " ".join(args)

    def write_line(self, report: DeferredReport, ws: Workspace) -> str:
        return f"serve     {self.export_command(report, ws)}  (--apply writes it into {MCP_JSON})"

    def report_json(self, report: DeferredReport, ws: Workspace, config: Any) -> dict[str, Any]:
        return {"serve": self.export_command(report, ws), "config": config}

    def apply(
        self, args: argparse.Namespace, ws: Workspace, report: DeferredReport, config: Any
    ) -> None:
        """``.mcp.json`` beside the agent: the ``holo-tune`` server in place of the agent's MCP
        servers it proxies (every other server and key kept)."""
        from workbench.commands.apply import show_and_write
        from workbench.config.writeback.json_file import apply_json, plan_json, read_json_object

        path = Path(ws.agent.path).parent / MCP_JSON
        read = read_json_object(path, ".mcp.json file", {"mcpServers": {}})
        doc = read.copy()
        servers = doc.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            from workbench.errors import ConfigError

            raise ConfigError("mcpServers is not an object", file=str(path))
        for name in {t.plugin for t in ws.catalog.tools if t.kind == "mcp"}:
            servers.pop(name, None)
        servers[SERVER] = config["mcpServers"][SERVER]
        plan = plan_json(read, doc)
        if not plan.changed:
            print(f"{path}: no change (serve is already set so)", file=sys.stderr)
            return
        show_and_write(
            path,
            plan.diff,
            lambda: apply_json(plan),
            to_stdout=not args.json,
            written=f"{SERVER} server written",
            no_backup="a new file",
        )


class ServeSearch:
    """serve's search as the tuner bills it: what ``holo-tune search`` selects under serve's
    flags (the holodeck engine's BM25 and HoloDeck's selection, top_k, threshold 0, no
    always_include), in ranking order, returned as definitions in JSON text; the pins and the
    two meta tools on every request."""

    def __init__(self, catalog: Catalog, bill: TokenBill, top_k: int, pins: Sequence[int]) -> None:
        from workbench.config.filtering import ToolFiltering
        from workbench.search.engine import HoloDeckEngine
        from workbench.search.strategies.base import definitions_tokens

        self.catalog = catalog
        self.bill = bill
        self.top_k = top_k
        self.pins = tuple(pins)
        self.engine = HoloDeckEngine(catalog, None)
        self.meta_tokens = definitions_tokens(bill, list(META_TOOLS))
        #: What serve's flags set (``serve_args``): bm25, top_k, threshold 0, no always_include.
        self.setting = ToolFiltering(
            enabled=True,
            search_method="bm25",
            top_k=top_k,
            similarity_threshold=0.0,
            always_include=(),
            always_include_top_n_used=0,
        )

    def ranking(self, query: str) -> tuple[IntArray, FloatArray]:
        ranked = self.engine.rank(query, "bm25")
        return ranked.order, ranked.scores

    def run(self, query: str) -> StrategyResult:
        from workbench.search.selection import select
        from workbench.search.strategies.base import StrategyResult, request_tokens, text_tokens

        ranked = self.engine.rank(query, "bm25")
        chosen = set(select(ranked, self.setting, self.catalog).indices)
        found = [int(i) for i in ranked.order if int(i) in chosen]
        defs = [dict(self.catalog.tools[i].definition) for i in found]
        text = json.dumps(defs, separators=(",", ":"), ensure_ascii=False)
        meta = self.meta_tokens + text_tokens(self.bill, text)
        sent = self.pins + tuple(i for i in found if i not in self.pins)
        return StrategyResult(
            query=query,
            engine=NAME,
            order=ranked.order,
            scores=ranked.scores,
            sent=sent,
            meta_tokens=meta,
            tokens=request_tokens(self.bill, list(self.pins), meta),
        )


RUNTIME = Serve()
