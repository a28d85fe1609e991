"""HoloDeck's YAML reader: a file libyaml reads but PyYAML's pure-Python loader refuses is flagged.

HoloDeck parses with ``yaml.safe_load`` (PyYAML's pure-Python reader); holo-tune reads with
libyaml, which accepts a few things the former refuses (a tab after a value, a ``?`` inside a
flow scalar). Such a file loads here but HoloDeck refuses it, so the loader warns (a refusal:
``check`` makes it an error). ``test_config_oracle.py`` holds the same files against HoloDeck's
own loader; here the pure reader itself is the oracle on mutated samples.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle.mutations import mutated

from workbench import cli
from workbench.config import load_agent
from workbench.config.envsubst import substitute
from workbench.config.source import PURE_CHECK_BYTES
from workbench.errors import HoloTuneError

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "sample_configs" / "research-agent.catalog.json"
BASE = "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\ninstructions: {inline: hi}\n"


def _load(path: Path) -> object:
    return load_agent(path, environ={}, dotenv_files=[], global_configs=[], missing_env="warn")


def _reader_warnings(agent: object) -> list[str]:
    return [w for w in getattr(agent, "warnings", []) if w.kind == "yaml-reader"]


def test_a_trailing_tab_is_a_refusal_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(BASE.replace("gpt-4o\n", "gpt-4o\t\n"))
    agent = _load(path)
    [warning] = _reader_warnings(agent)
    assert warning.refused and warning.line == 4
    assert warning == (
        f"{path}:4: HoloDeck's YAML reader (PyYAML's pure-Python safe_load) refuses the file, "
        "which libyaml (holo-tune's reader) accepts: found character '\\t' that cannot start any "
        "token (column 15); replace the tab with spaces"
    )


def test_check_reports_it_as_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(BASE.replace("instructions: {inline: hi}", "instructions: {inline: h?i}"))
    code = cli.main(["check", str(path), "--catalog", str(CATALOG), "--json"])
    report = json.loads(capsys.readouterr().out)
    found = [f for f in report["findings"] if f["code"] == "config-yaml-reader"]
    assert code == 1 and len(found) == 1
    assert found[0]["severity"] == "error"
    assert "expected ',' or '}', but got '?'" in found[0]["message"]


def test_the_cases_file_is_read_as_holodeck_reads_it_too(tmp_path: Path) -> None:
    (tmp_path / "cases.yaml").write_text("- input: first\n- input: second\t\n")
    path = tmp_path / "agent.yaml"
    path.write_text(BASE + "test_cases_file: cases.yaml\n")
    [warning] = _reader_warnings(_load(path))
    assert warning.startswith(f"{tmp_path / 'cases.yaml'}:2: ")


def test_a_global_config_is_read_as_holodeck_reads_it_too(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("execution: {llm_timeout: 30}\t\n")
    path = tmp_path / "agent.yaml"
    path.write_text(BASE)
    agent = load_agent(path, environ={}, dotenv_files=[], global_configs=[tmp_path / "config.yaml"])
    [warning] = _reader_warnings(agent)
    assert warning.startswith(f"{tmp_path / 'config.yaml'}:1: ") and warning.refused


def test_a_file_both_readers_read_has_no_such_warning() -> None:
    for sample in sorted((REPO / "sample_configs").glob("*.yaml")):
        if sample.name.endswith(".cases.yaml"):
            continue
        assert _reader_warnings(_load(sample)) == [], sample.name


def test_only_files_up_to_the_size_cap_are_read_twice(tmp_path: Path) -> None:
    """The pure reader takes about a second per MB; larger files are not read a second time."""
    path = tmp_path / "agent.yaml"
    filler = "# " + "x" * 98 + "\n"
    path.write_text(BASE.replace("gpt-4o\n", "gpt-4o\t\n") + filler * (PURE_CHECK_BYTES // 100))
    assert _reader_warnings(_load(path)) == []


SAMPLES = [
    REPO / "sample_configs" / "research-agent.yaml",
    REPO / "tests" / "writeback" / "commented.yaml",
    REPO / "tests" / "configs" / "valid_full.yaml",
]


@settings(
    max_examples=int(os.environ.get("HOLO_TUNE_FUZZ_EXAMPLES", "40")),
    deadline=timedelta(seconds=5),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(SAMPLES).flatmap(lambda p: mutated(p.read_text(encoding="utf-8"))))
def test_the_warning_is_there_exactly_when_the_pure_reader_refuses(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        agent = _load(path)
    except HoloTuneError:
        event("holo-tune refuses")
        return
    substituted = substitute(text.lstrip("\ufeff"), {}, file=path, missing={}).text
    try:
        yaml.safe_load(substituted)
        refused = False
    except yaml.YAMLError:
        refused = True
    except Exception:  # not a YAML refusal: a value Python cannot build
        return
    event(f"pure reader {'refuses' if refused else 'reads'}")
    assert bool(_reader_warnings(agent)) == refused
