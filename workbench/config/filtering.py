"""The ``tool_filtering`` block: HoloDeck's ``ToolFilterConfig`` rules, bounds and defaults.

This is the *setting* every part of holo-tune passes around: the search engine's selection, the
evaluation, the tuner and the write-back all take a :class:`ToolFiltering`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SearchMethod = Literal["semantic", "bm25", "hybrid"]
SEARCH_METHODS: tuple[SearchMethod, ...] = ("semantic", "bm25", "hybrid")

#: Bounds HoloDeck 0.4-0.6 enforces (``holodeck.lib.tool_filter.models.ToolFilterConfig``).
TOP_K_MIN, TOP_K_MAX = 1, 50
THRESHOLD_MIN, THRESHOLD_MAX = 0.0, 1.0
TOP_N_USED_MIN, TOP_N_USED_MAX = 0, 20

#: Key order of the block as holo-tune writes it.
BLOCK_KEYS = (
    "enabled",
    "top_k",
    "similarity_threshold",
    "always_include",
    "always_include_top_n_used",
    "search_method",
)


class ToolFiltering(BaseModel):
    """One tool-filtering setting, validated exactly as HoloDeck validates the YAML block."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=False, description="Filter tools per request.")
    top_k: int = Field(
        default=5,
        ge=TOP_K_MIN,
        le=TOP_K_MAX,
        description="Most tools sent per request, always-included tools counted (1-50).",
    )
    similarity_threshold: float = Field(
        default=0.3,
        ge=THRESHOLD_MIN,
        le=THRESHOLD_MAX,
        description="Least score a searched tool needs to be sent (0.0-1.0).",
    )
    always_include: tuple[str, ...] = Field(
        default=(),
        description="Tools always sent: a full name <plugin>-<function> or a bare function name.",
    )
    always_include_top_n_used: int = Field(
        default=3,
        ge=TOP_N_USED_MIN,
        le=TOP_N_USED_MAX,
        description="The N most used tools are always sent (0-20). Counts start at 0 on restart.",
    )
    search_method: SearchMethod = Field(
        default="semantic", description="semantic (embeddings), bm25 (keywords) or hybrid (RRF)."
    )

    @field_validator("always_include", mode="before")
    @classmethod
    def _entries(cls, value: Any) -> Any:
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            for entry in value:
                if not isinstance(entry, str) or not entry.strip():
                    raise ValueError("always_include entries must be non-empty strings")
        return value

    def block(self) -> dict[str, Any]:
        """The setting as the YAML block holds it (plain types, HoloDeck's key names)."""
        data = self.model_dump()
        data["always_include"] = list(self.always_include)
        return {key: data[key] for key in BLOCK_KEYS}

    def with_(self, **changes: Any) -> ToolFiltering:
        """A copy with ``changes`` applied and validated."""
        return ToolFiltering.model_validate({**self.block(), **changes})


DEFAULT_FILTERING = ToolFiltering()
