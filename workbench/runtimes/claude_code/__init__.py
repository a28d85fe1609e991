"""Claude Code's MCP tool search: ``.mcp.json`` beside the agent, every server's tools deferred
but the servers marked ``alwaysLoad`` (a whole server is the unit kept loaded; a HoloDeck tool
that is not MCP has no place there). ``tune --apply`` writes ``alwaysLoad`` into ``.mcp.json``
(diff, backup, atomic); ``export`` prints the file."""

from __future__ import annotations

from collections.abc import Set
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.config.servers import mcp_entries
from workbench.runtimes.base import EngineNote
from workbench.runtimes.search_tool import STAND_IN, WORDS, SearchToolRuntime, SettingWords

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.evaluate.deferred_tune import DeferredSetting
    from workbench.runtimes.base import ConfigWrite, ToolConfig
    from workbench.workspace import Workspace

NAME = "claude-code"
MCP_JSON = ".mcp.json"


class ClaudeCode(SearchToolRuntime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "Claude Code (MCP tool search)"
    marker: ClassVar[tuple[str, str]] = ("C", "bright_red")
    per_server: ClassVar[bool] = True
    engine: ClassVar[EngineNote] = EngineNote(
        "anthropic",
        False,
        f"{STAND_IN} {WORDS}, for Claude Code's MCP tool search: its deferred loading (MCP "
        "tools loaded on search, alwaysLoad per server) is documented, its ranker is not "
        "published",
    )
    tunes: ClassVar[str] = "the servers kept loaded (alwaysLoad)"
    writes: ClassVar[str] = "alwaysLoad into .mcp.json beside the agent"
    config_file: ClassVar[str | None] = MCP_JSON
    words: ClassVar[SettingWords] = SettingWords(
        write="write     --apply sets alwaysLoad in {config} beside the agent",
        loaded="servers {names} ({count} tools)",
        json=(("always_load", "loaded"), ("config", "config")),
    )

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        from workbench.deferred import mcp_json, tool_search_advice
        from workbench.tokens import token_table

        hot = {t.plugin for t in catalog.tools if t.full_name in kept}
        doc, warnings = mcp_json(mcp_entries(agent), hot)
        model = agent.agent.model
        tokens = token_table(catalog, str(model.provider), model.name)
        mcp = [i for i, t in enumerate(catalog.tools) if t.kind == "mcp"]
        return self.built(doc, tuple(warnings), tuple(tool_search_advice(tokens.total(mcp))))

    def check_config(self, doc: Any) -> str | None:
        from workbench.deferred import check_mcp_json

        return check_mcp_json(doc)

    def setting_doc(self, setting: DeferredSetting, ws: Workspace) -> Any:
        from workbench.deferred import mcp_json
        from workbench.evaluate.deferred_tune import loaded_servers

        doc, _ = mcp_json(mcp_entries(ws.agent), set(loaded_servers(setting, ws.catalog)))
        return doc

    def current_setting(self, ws: Workspace) -> DeferredSetting | None:
        """The servers ``.mcp.json`` beside the agent marks ``alwaysLoad`` (their tools kept
        loaded); None when it marks none or there is no such file (Claude Code's default)."""
        import json

        from workbench.evaluate.deferred_tune import DeferredSetting

        try:
            doc = json.loads((Path(ws.agent.path).parent / MCP_JSON).read_text(encoding="utf-8"))
            servers = doc["mcpServers"]
            always = {n for n, e in servers.items() if isinstance(e, dict) and e.get("alwaysLoad")}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        loaded = tuple(
            i for i, t in enumerate(ws.catalog.tools) if t.kind == "mcp" and t.plugin in always
        )
        if not loaded:
            return None
        return DeferredSetting(self.variants[0], self.default_results, loaded)

    def config_write(self, ws: Workspace, setting: DeferredSetting) -> ConfigWrite:
        """``alwaysLoad`` on the servers kept loaded, in ``.mcp.json`` beside the agent."""
        from workbench.config.writeback.mcp_json import apply_mcp_json, plan_mcp_json
        from workbench.deferred import mcp_json
        from workbench.evaluate.deferred_tune import loaded_servers
        from workbench.runtimes.base import ConfigWrite

        path = Path(ws.agent.path).parent / MCP_JSON
        rendered, notes = mcp_json(mcp_entries(ws.agent), set())
        plan = plan_mcp_json(path, rendered, set(loaded_servers(setting, ws.catalog)))
        return ConfigWrite(
            path,
            plan.diff,
            plan.changed,
            lambda: apply_mcp_json(plan),
            what="alwaysLoad",
            written="alwaysLoad written",
            unchanged="alwaysLoad already says that",
            warnings=tuple(notes),
        )


RUNTIME = ClaudeCode()
