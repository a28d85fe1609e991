"""Anthropic's Messages API with the tool search tool: every tool sent with ``defer_loading``
but those kept loaded, and one ``tool_search_tool_{bm25,regex}`` (:mod:`workbench.deferred`).
The configuration lives in the user's code: ``export`` prints the request's ``tools``."""

from __future__ import annotations

from collections.abc import Set
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.runtimes.base import EngineNote, Knob
from workbench.runtimes.search_tool import (
    STAND_IN,
    WORDS,
    SearchToolRuntime,
    SettingWords,
    search_knobs,
)

if TYPE_CHECKING:
    from workbench.catalog.models import Catalog
    from workbench.config import AgentConfig
    from workbench.runtimes.base import ToolConfig

NAME = "anthropic"


class Anthropic(SearchToolRuntime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "Anthropic API (tool search tool)"
    marker: ClassVar[tuple[str, str]] = ("A", "yellow")
    variants: ClassVar[tuple[str, ...]] = ("bm25", "regex")
    knobs: ClassVar[tuple[Knob, ...]] = search_knobs(("bm25", "regex"))
    engine: ClassVar[EngineNote] = EngineNote(
        "anthropic",
        False,
        f"{STAND_IN} or regex (Python re) {WORDS}, for Anthropic's tool search tool: its "
        "deferred loading (defer_loading, 3-5 tools per search, their tokens billed) is "
        "documented, its ranker is not published",
    )
    tunes: ClassVar[str] = "the loaded tools, the search variant"
    writes: ClassVar[str] = "the Messages API tools JSON (printed)"
    paste_into: ClassVar[str | None] = "Messages API request"
    words: ClassVar[SettingWords] = SettingWords(
        export="holo-tune export {agent} --runtime {name} --variant {variant} {keep}"
    )

    def tool_config(
        self, agent: AgentConfig, catalog: Catalog, kept: Set[str], variant: str = "bm25"
    ) -> ToolConfig:
        from workbench.deferred import anthropic_tools

        return self.built(anthropic_tools(catalog, kept, "regex" if variant == "regex" else "bm25"))

    def check_config(self, doc: Any) -> str | None:
        from workbench.deferred import check_anthropic

        return check_anthropic(doc)


RUNTIME = Anthropic()
