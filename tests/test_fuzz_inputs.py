"""Property tests (Hypothesis): any agent YAML, catalog or cases file ends in success or in
holo-tune's own one-line error, within a time bound; never a traceback, a hang or a crash.

Inputs are the samples mutated (bytes cut, repeated or replaced by characters YAML and JSON give
meaning to), plus documents generated from scratch. Examples are few and bounded (a deadline per
example) so that ``make test`` stays quick; ``HOLO_TUNE_FUZZ_EXAMPLES`` raises the count for a
longer hunt.
"""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle.mutations import mutated

from workbench.catalog.snapshot import load_snapshot
from workbench.config import load_agent
from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write
from workbench.errors import HoloTuneError
from workbench.evaluate.cases import load_cases

REPO = Path(__file__).resolve().parents[1]
AGENTS = [
    REPO / "sample_configs" / "research-agent.yaml",
    REPO / "tests" / "configs" / "valid_full.yaml",
    REPO / "tests" / "writeback" / "commented.yaml",
    REPO / "tests" / "writeback" / "flow.yaml",
]
CATALOG = REPO / "sample_configs" / "python-servers.catalog.json"
CASES_JSONL = REPO / "tests" / "data" / "datasets" / "stackone" / "cases.jsonl"
CASES_YAML = (
    "# labelled\ncases:\n  - query: find news\n    expected: [brave_news_search]\n"
    "    category: news\n  - query: graph\n    expected:\n      - name: read_graph\n"
    "  - query: &q remember this\n    expected: [create_entities, *q]\n"
)

EXAMPLES = int(os.environ.get("HOLO_TUNE_FUZZ_EXAMPLES", "25"))
#: Each example must end within this (a hostile input that hangs or crawls fails the test).
BOUND = timedelta(seconds=5)
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=BOUND,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _ends_well(call: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``call``: it returns, or raises holo-tune's own error (a one-line message)."""
    started = time.monotonic()
    try:
        return call(*args, **kwargs)
    except HoloTuneError as err:
        assert "\n" not in str(err) and str(err).strip()
        return None
    finally:
        assert time.monotonic() - started < BOUND.total_seconds()


def _load(path: Path) -> Any:
    return load_agent(path, environ={}, dotenv_files=[], global_configs=[], missing_env="warn")


@FUZZ
@given(st.sampled_from(AGENTS).flatmap(lambda p: mutated(p.read_text(encoding="utf-8"))))
def test_mutated_agent_yaml_loads_or_fails_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _ends_well(_load, path)


@FUZZ
@given(st.sampled_from(AGENTS).flatmap(lambda p: mutated(p.read_text(encoding="utf-8"))))
def test_mutated_agent_yaml_writes_back_or_refuses(tmp_path: Path, text: str) -> None:
    """Whatever the file, a write-back plan is made or refused in one line; a plan that is made
    gives a file whose block reads back as the setting."""
    path = tmp_path / "agent.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    setting = ToolFiltering(enabled=True, top_k=7, search_method="bm25")
    plan = _ends_well(plan_write, path, setting)
    if plan is not None:
        # libyaml, as the loader reads it (pure PyYAML refuses a few files libyaml reads).
        block = yaml.load(plan.new_text, Loader=yaml.CSafeLoader)["tool_filtering"]
        assert ToolFiltering.model_validate(block) == setting


#: JSON-like values, for generated documents.
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=30,
)


@FUZZ
@given(
    st.dictionaries(
        st.sampled_from(
            ["name", "model", "instructions", "tools", "tool_filtering", "test_cases", "x"]
        ),
        VALUES,
        max_size=6,
    )
)
def test_generated_agent_yaml_loads_or_fails_in_one_line(
    tmp_path: Path, data: dict[str, Any]
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    _ends_well(_load, path)


@FUZZ
@given(mutated(CATALOG.read_text(encoding="utf-8")))
def test_mutated_catalog_loads_or_fails_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "catalog.json"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _ends_well(load_snapshot, path)


@FUZZ
@given(st.lists(VALUES, max_size=4), VALUES)
def test_generated_tools_in_a_catalog_list_or_fail_in_one_line(
    tmp_path: Path, tools: list[Any], schema: Any
) -> None:
    """Odd tools and input schemas go through the whole ``tools`` command (catalog, names,
    token counting)."""
    from workbench import cli

    listed = [*tools, {"name": "t", "description": "d", "inputSchema": schema}]
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"holo_tune_catalog": 1, "servers": {"s": {"tools": listed}}}))
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
    )
    started = time.monotonic()
    code = cli.main(["tools", str(agent), "--catalog", str(path), "--json"])
    assert code in (0, 2)
    assert time.monotonic() - started < BOUND.total_seconds()


@FUZZ
@given(mutated(CASES_JSONL.read_text(encoding="utf-8")[:3000]))
def test_mutated_jsonl_cases_load_or_fail_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _ends_well(load_cases, path)


@FUZZ
@given(mutated(CASES_YAML))
def test_mutated_yaml_cases_load_or_fail_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cases.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    _ends_well(load_cases, path)


@pytest.mark.parametrize("agent", AGENTS, ids=lambda p: p.name)
def test_the_samples_themselves_load(agent: Path) -> None:
    """The unmutated samples load (so the mutations above start from files that work)."""
    assert _load(agent).agent is not None
