"""serve's engine settings from the tool_filtering knobs (workbench/search/holo/knobs.py): the one
mapping the dashboard's query lab ranks serve's engine under."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.config.filtering import ToolFiltering
from workbench.search.holo.knobs import knob_settings
from workbench.search.holo.settings import DEFAULT_WEIGHTS, HoloSettings


def test_the_knobs_set_top_k_threshold_pins_and_the_dense_signal() -> None:
    block = ToolFiltering(
        enabled=True, top_k=3, similarity_threshold=0.42, always_include=("read_file", "s-t")
    )
    mapped = knob_settings(block)
    assert mapped.top_k == 3 and mapped.threshold == 0.42
    assert mapped.pins == ("read_file", "s-t")
    assert dict(mapped.weights) == DEFAULT_WEIGHTS  # semantic: the dense signal as it is
    assert dict(knob_settings(block.with_(search_method="hybrid")).weights) == DEFAULT_WEIGHTS
    bm25 = knob_settings(block.with_(search_method="bm25"))
    assert dict(bm25.weights) == {**DEFAULT_WEIGHTS, "dense": 0.0}


def test_a_threshold_of_zero_is_no_threshold() -> None:
    assert knob_settings(ToolFiltering(similarity_threshold=0.0)).threshold is None


def test_what_the_knobs_do_not_set_is_the_bases() -> None:
    base = HoloSettings(
        weights={"dense": 0.7, "lexical": 1.0, "name": 0.2, "cost": 0.1},
        fields={"name": 3, "description": 1},
        top_k=None,
        max_tokens=4000,
        name_first=False,
        pins=("old",),
        embedder="local:minilm",
        cases="cases.yaml",
    )
    mapped = knob_settings(ToolFiltering(top_k=7, search_method="bm25"), base)
    assert mapped.weights == {**base.weights, "dense": 0.0}
    assert mapped.fields == base.fields and mapped.max_tokens == 4000
    assert not mapped.name_first and mapped.embedder == "local:minilm"
    assert mapped.cases == "cases.yaml"
    assert mapped.top_k == 7 and mapped.pins == ()  # the knobs' always_include is the pins
    assert base.weights["dense"] == 0.7  # the base is not changed


@settings(max_examples=50, deadline=None)
@given(
    top_k=st.integers(1, 50),
    threshold=st.floats(0.0, 1.0),
    method=st.sampled_from(["semantic", "bm25", "hybrid"]),
    pins=st.lists(st.text(min_size=1, max_size=20).filter(str.strip), max_size=4),
)
def test_every_setting_the_knobs_take_maps_to_valid_settings(
    top_k: int, threshold: float, method: str, pins: list[str]
) -> None:
    block = ToolFiltering(
        top_k=top_k,
        similarity_threshold=threshold,
        search_method=method,  # type: ignore[arg-type]
        always_include=tuple(pins),
    )
    mapped = knob_settings(block)
    assert mapped.top_k == top_k and mapped.pins == block.always_include
    assert mapped.threshold == (threshold or None)
    assert (mapped.weights["dense"] == 0.0) == (method == "bm25")
