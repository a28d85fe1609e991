"""HoloDeck 0.4-0.6: the per-query ``tool_filtering`` block, the runtime holo-tune reproduces
exactly (the ``holodeck`` engine, held to HoloDeck 0.6.40's own module by the oracle tests).

Knobs: the block's ``search_method``, ``top_k``, ``similarity_threshold``, ``always_include``
and ``always_include_top_n_used``. A request carries the tools the filter selects for the user's
message. ``tune`` sweeps the block (:mod:`workbench.evaluate.tuner`), ``apply`` and ``tune
--apply`` write it back (:mod:`workbench.config.writeback.block`), ``export`` prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from workbench.runtimes.base import (
    Change,
    EngineNote,
    Evidence,
    ExportRequest,
    Knob,
    Probe,
    Runtime,
    RuntimeWords,
    ToolConfig,
    TuneOutcome,
    TuneRequest,
)
from workbench.runtimes.holodeck_versions import holodeck_evidence

if TYPE_CHECKING:
    from workbench.catalog.models import CatalogView
    from workbench.runtimes.detect import RuntimeInfo

NAME = "holodeck-0.6"


class HoloDeck06(Runtime):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "HoloDeck 0.4-0.6"
    generation: ClassVar[str] = "0.6"
    marker: ClassVar[tuple[str, str]] = ("6", "cyan")
    reads_tool_filtering: ClassVar[bool] = True
    #: Its filter ranks Semantic Kernel's functions: SK's skips, stand-ins and order.
    catalog_view: ClassVar[CatalogView] = "semantic-kernel"
    default: ClassVar[bool] = True
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("search_method", "how tools are scored", "semantic", "semantic | bm25 | hybrid"),
        Knob("top_k", "the most tools a request carries", "5", "1-100"),
        Knob("similarity_threshold", "the lowest score sent", "0.3", "0-1"),
        Knob("always_include", "tools sent on every request", "[]", "tool names"),
        Knob("always_include_top_n_used", "the most used tools, always sent", "3", "0-20"),
    )
    engine: ClassVar[EngineNote] = EngineNote(
        "holodeck", True, "holo-tune's holodeck engine, HoloDeck 0.6.40's filter to the score"
    )
    billing: ClassVar[str] = "per request: the tools the filter selects for the message"
    tunes: ClassVar[str] = "the tool_filtering block (method, top_k, threshold)"
    writes: ClassVar[str] = "the tool_filtering block of agent.yaml"
    words: ClassVar[RuntimeWords] = RuntimeWords(
        reasons={
            "default": "default: nothing says 0.7+",
            "yaml": "tool_filtering block in the YAML",
        }
    )

    def detect(self, probe: Probe) -> Evidence | None:
        found = holodeck_evidence(probe)
        if found is not None:
            return found[1] if found[0] == self.generation else None
        if probe.data is not None and "tool_filtering" in probe.data:
            return Evidence("the YAML has a tool_filtering block (HoloDeck 0.4-0.6)", "yaml")
        return None

    def tune(self, request: TuneRequest) -> TuneOutcome:
        from workbench.runtimes.holodeck06.tune import tune_filter

        return tune_filter(request)

    def refusal(self, info: RuntimeInfo, change: Change) -> str | None:
        if change == "tool_filtering":
            return None
        return (
            f"refused: the runtime is {self.name} ({info.reason}), whose filter is the "
            "tool_filtering block (its Semantic Kernel path ignores allowed_tools); use "
            f"`holo-tune tune --apply`, or --runtime {_runtime_of('0.7')} if the agent runs on 0.7"
        )

    def export(self, request: ExportRequest) -> ToolConfig:
        """The block: the file's, with the setting flags applied."""
        from workbench.config.writeback.block import render_block_text, runtime_warnings

        return ToolConfig(
            self.name,
            render_block_text(request.setting),
            warnings=tuple(runtime_warnings(request.agent.data)),
        )


def _runtime_of(generation: str) -> str:
    """The runtime of a HoloDeck generation (the registry's, by what it says of itself)."""
    from workbench.runtimes.registry import all_runtimes

    return next(r.name for r in all_runtimes() if getattr(r, "generation", None) == generation)


RUNTIME = HoloDeck06()
