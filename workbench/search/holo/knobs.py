"""serve's engine settings from the ``tool_filtering`` knobs: the one mapping of HoloDeck's setting
onto :class:`~.settings.HoloSettings`.

The dashboard's query lab ranks with serve's engine under its knobs (the serve runtime), and a
command that takes the block's setting for serve can call the same function:

- ``top_k`` is the most tools a search returns;
- ``similarity_threshold`` is the no-answer threshold (0: none, every query gets an answer);
- ``always_include`` are the pins (listed beside ``search_tools``);
- ``search_method`` ``bm25`` scores no dense signal (its weight 0); ``semantic`` and ``hybrid``
  keep the base's weights (the dense signal fused with the lexical and name ones);
- ``enabled`` and ``always_include_top_n_used`` mean nothing to serve (it always searches, and
  counts no use).

Every other setting (the fields, the other weights, ``max_tokens``, ``name_first``, the embedder
and the cases) is the base's: a settings file's, or the defaults.
"""

from __future__ import annotations

from dataclasses import replace

from workbench.config.filtering import ToolFiltering
from workbench.search.holo.settings import HoloSettings


def knob_settings(setting: ToolFiltering, base: HoloSettings | None = None) -> HoloSettings:
    """``base`` (default: :class:`HoloSettings`' defaults) under the knobs of ``setting`` (see the
    module's doc)."""
    base = base or HoloSettings()
    weights = dict(base.weights)
    if setting.search_method == "bm25":
        weights["dense"] = 0.0
    threshold = float(setting.similarity_threshold)
    return replace(
        base,
        weights=weights,
        top_k=setting.top_k,
        threshold=threshold if threshold > 0.0 else None,
        pins=tuple(setting.always_include),
    )
