"""HoloDeck's YAML reader: a file libyaml reads but PyYAML's pure-Python loader refuses is flagged.

HoloDeck parses with ``yaml.safe_load`` (PyYAML's pure-Python reader); holo-tune reads with
libyaml, which accepts a few things the former refuses (a tab after a value, a ``?`` inside a
flow scalar). Such a file loads here but HoloDeck refuses it, so the loader warns (a refusal:
``check`` makes it an error). ``test_config_oracle.py`` holds the same files against HoloDeck's
own loader; here the pure reader itself is the oracle on mutated samples, and on samples given
one such construct at a known line (a tab after a value or after a colon, a ``?`` in a flow
scalar), so that the refusal, and its line, come up in a good share of examples.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle.mutations import mutated

from workbench import cli
from workbench.config import load_agent
from workbench.config.envsubst import substitute
from workbench.config.source import PURE_CHECK_BYTES
from workbench.errors import ConfigError

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
#: Flow values with a ``?`` inside a plain scalar: libyaml reads them, the pure reader does not.
FLOW_QUESTIONS = ["[x, y?z]", "{k: v?w}", "[a?b]", "{k: [1, t?u]}"]


def _block_values(text: str) -> list[yaml.ScalarEvent]:
    """The values (and list items) outside flow collections that end their line (before
    blanks or a comment): a tab after one is what the pure reader refuses. Block scalars
    (``|``, ``>``) and ``${VAR}`` references (substituted away) are left out."""
    found: list[yaml.ScalarEvent] = []
    # One entry per open collection: whether it is a mapping, nodes in it so far, whether flow.
    stack: list[list[Any]] = []
    flow = 0
    for node in yaml.parse(text, Loader=yaml.CSafeLoader):
        if isinstance(node, yaml.CollectionEndEvent):
            flow -= bool(stack.pop()[2])
            continue
        if not isinstance(node, yaml.NodeEvent):
            continue
        is_key = bool(stack) and stack[-1][0] and stack[-1][1] % 2 == 0
        if stack:
            stack[-1][1] += 1
        if isinstance(node, yaml.CollectionStartEvent):
            mapping = isinstance(node, yaml.MappingStartEvent)
            stack.append([mapping, 0, bool(node.flow_style)])
            flow += bool(node.flow_style)
            continue
        if isinstance(node, yaml.ScalarEvent) and not is_key and not flow and stack:
            rest = text[node.end_mark.index :].split("\n", 1)[0]
            plain_end = rest.strip() == "" or rest.lstrip().startswith("#")
            if plain_end and node.style not in ("|", ">") and "${" not in node.value:
                found.append(node)
    return found


def _top_level_lines(text: str) -> list[int]:
    """The 0-based lines of the top-level keys."""
    root = yaml.compose(text, Loader=yaml.CSafeLoader)
    return [key.start_mark.line for key, _ in root.value]


@st.composite
def refused_by_the_pure_reader(draw: st.DrawFn) -> tuple[str, int, str]:
    """A sample with one construct libyaml reads and the pure reader refuses: the text, the
    construct's file line and what the refusal says."""
    text = draw(st.sampled_from(SAMPLES)).read_text(encoding="utf-8")
    kind = draw(st.sampled_from(["tab after a value", "tab after a colon", "? in flow"]))
    if kind == "? in flow":  # a new top-level key: ``openai:``, whose contents are free (an
        # unknown key would be refused before the reader's warning is reached)
        line0 = draw(st.sampled_from(_top_level_lines(text)))
        lines = text.splitlines(keepends=True)
        note = f"openai: {{note: {draw(st.sampled_from(FLOW_QUESTIONS))}}}\n"
        return "".join([*lines[:line0], note, *lines[line0:]]), line0 + 1, "but got '?'"
    values = _block_values(text)
    if kind == "tab after a value":
        value = draw(st.sampled_from(values))
        at = value.end_mark.index
        return text[:at] + "\t" + text[at:], value.end_mark.line + 1, "'\\t'"
    value = draw(st.sampled_from([v for v in values if text[: v.start_mark.index].endswith(": ")]))
    at = value.start_mark.index - 1
    return text[:at] + "\t" + text[at + 1 :], value.start_mark.line + 1, "'\\t'"


def _pure_refusal_line(text: str) -> int | None:
    """The file line at which PyYAML's pure reader (HoloDeck's ``yaml.safe_load``) refuses
    ``text`` (None: it reads it)."""
    try:
        yaml.safe_load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        assert mark is not None
        return int(mark.line) + 1
    return None


MUTATED = (
    st.sampled_from(SAMPLES)
    .flatmap(lambda p: mutated(p.read_text(encoding="utf-8")))
    .map(lambda text: (text, None, ""))
)


@settings(
    max_examples=int(os.environ.get("HOLO_TUNE_FUZZ_EXAMPLES", "40")),
    deadline=timedelta(seconds=5),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    # The branch is drawn first, half and half: one_of(MUTATED, ...) took the constructed files
    # in one example of six, and booleans() favours False.
    st.sampled_from([True, False]).flatmap(
        lambda constructed: refused_by_the_pure_reader() if constructed else MUTATED
    )
)
def test_the_warning_is_there_exactly_when_the_pure_reader_refuses(
    tmp_path: Path, case: tuple[str, int | None, str]
) -> None:
    """Samples mutated (the pure reader's own verdict is the oracle) and samples given one
    construct it refuses (its line known from where it was put): the warning is there exactly
    when the pure reader refuses, at its line."""
    text, line, words = case
    path = tmp_path / "agent.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        agent = _load(path)
    except ConfigError as err:  # holo-tune refuses the file itself: one line naming it
        assert line is None, f"libyaml reads the constructed file: {err}"
        assert err.one_line().startswith(str(path)) and "\n" not in err.one_line()
        event("holo-tune refuses")
        return
    substituted = substitute(text.lstrip("\ufeff"), {}, file=path, missing={}).text
    refused_at = _pure_refusal_line(substituted)
    if line is not None:
        assert refused_at == line
    made = "mutated" if line is None else "constructed"
    event(f"pure reader {'refuses' if refused_at else 'reads'} ({made})")
    warnings = _reader_warnings(agent)
    if refused_at is None:
        assert warnings == []
    else:
        [warning] = warnings
        assert warning.refused and warning.line == refused_at
        assert words in warning
