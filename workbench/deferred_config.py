"""A deferred-loading runtime's tool configuration for one agent and catalog, in one call.

``holo-tune export --runtime anthropic|claude-code|openai`` prints it and the dashboard shows it
(instead of writing a ``tool_filtering`` block those runtimes do not read); both call
:func:`deferred_config`. The pieces are :mod:`workbench.deferred`'s.
"""

from __future__ import annotations

import json
from collections.abc import Set
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from workbench.catalog.models import Catalog
from workbench.config import AgentConfig
from workbench.deferred import (
    anthropic_tools,
    check_anthropic,
    check_mcp_json,
    check_openai,
    mcp_json,
    openai_tools,
    tool_search_advice,
)
from workbench.errors import InputError
from workbench.runtime import RuntimeInfo
from workbench.tokens import token_table

Variant = Literal["bm25", "regex"]


@dataclass(frozen=True)
class DeferredConfig:
    """What to paste (``doc``: JSON) and what to tell the user beside it: ``warnings`` (what
    the output cannot carry) and ``advice`` (Claude Code's ``ENABLE_TOOL_SEARCH``)."""

    runtime: str
    doc: Any
    warnings: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return json.dumps(self.doc, ensure_ascii=False, indent=2) + "\n"


def deferred_config(
    agent: AgentConfig,
    catalog: Catalog,
    runtime: RuntimeInfo,
    kept: Set[str] = frozenset(),
    variant: Variant = "bm25",
) -> DeferredConfig:
    """The configuration of ``runtime`` (a deferred-loading one): every tool deferred but the
    ``kept`` full names. InputError when the result would break the API's documented rules."""
    warnings: list[str] = []
    advice: list[str] = []
    doc: Any
    if runtime.name == "anthropic":
        doc = anthropic_tools(catalog, kept, variant)
        broken = check_anthropic(doc)
    elif runtime.name == "openai":
        described = {t.name: t.description or "" for t in agent.agent.tools or []}
        doc = openai_tools(catalog, kept, described)
        broken = check_openai(doc)
    elif runtime.name == "claude-code":
        raw = yaml.safe_load(agent.text) or {}
        entries = [
            t for t in raw.get("tools") or [] if isinstance(t, dict) and t.get("type") == "mcp"
        ]
        hot = {t.plugin for t in catalog.tools if t.full_name in kept}
        doc, found = mcp_json(entries, hot)
        warnings += found
        broken = check_mcp_json(doc)
        model = agent.agent.model
        tokens = token_table(catalog, str(model.provider), model.name)
        mcp = [i for i, t in enumerate(catalog.tools) if t.kind == "mcp"]
        advice += tool_search_advice(tokens.total(mcp))
    else:
        raise InputError(f"{runtime.name} does not load tools lazily", field="--runtime")
    if broken is not None:
        raise InputError(f"the {runtime.name} output would break the API's rules: {broken}")
    return DeferredConfig(runtime.name, doc, tuple(warnings), tuple(advice))
