"""OpenAI's Responses API with ``tool_search``: one ``namespace`` per server whose functions carry
``defer_loading`` but those kept loaded (:mod:`workbench.deferred`). The model still sees every
namespace's name and description, billed on every request. The configuration lives in the
user's code: ``export`` prints the request's ``tools``."""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.runtimes.base import EngineNote
from workbench.runtimes.search_tool import STAND_IN, WORDS, SearchToolRuntime

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.runtimes.base import ToolConfig

NAME = "openai"


class OpenAI(SearchToolRuntime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "OpenAI Responses API (tool_search)"
    marker: ClassVar[tuple[str, str]] = ("O", "bright_blue")
    bills_namespaces: ClassVar[bool] = True
    engine: ClassVar[EngineNote] = EngineNote(
        "anthropic",
        False,
        f"{STAND_IN} {WORDS}, for OpenAI's tool_search: its deferred loading (defer_loading, "
        "namespaces whose names and descriptions stay in the request) is documented, its "
        "ranker is not published",
    )
    tunes: ClassVar[str] = "the loaded tools"
    writes: ClassVar[str] = "the Responses API tools JSON (printed)"
    paste_into: ClassVar[str | None] = "Responses request"

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        from workbench.deferred import openai_tools
        from workbench.evaluate.deferred_tune import entry_descriptions

        return self.built(openai_tools(catalog, kept, entry_descriptions(agent.agent)))

    def check_config(self, doc: Any) -> str | None:
        from workbench.deferred import check_openai

        return check_openai(doc)


RUNTIME = OpenAI()
