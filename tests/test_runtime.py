"""Which runtime reads the agent: each detection signal, their order, and the write refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.cli import build_parser, main
from workbench.runtimes.detect import (
    RUNTIMES,
    RuntimeInfo,
    check_writable,
    detect_runtime,
    find_pin,
    spec_generation,
)

SIX = {"name": "a", "tool_filtering": {"enabled": True}}
SEVEN = {"name": "a", "openai": {"tool_search": {"enabled": True}}}
AGENT_07 = """\
name: seven
model:
  provider: openai
  name: gpt-4.1
instructions:
  inline: Help.
openai:
  max_turns: 4
tool_filtering:
  enabled: true
"""


def _none() -> str | None:
    return None


def _project(tmp_path: Path) -> Path:
    """A project folder (a .git marks its root, so the search stops there)."""
    (tmp_path / ".git").mkdir()
    return tmp_path / "agent.yaml"


def test_the_flag_wins_over_everything(tmp_path: Path) -> None:
    agent = _project(tmp_path)
    info = detect_runtime(agent, SEVEN, explicit="anthropic", installed=lambda: "0.7.1")
    assert info == RuntimeInfo("anthropic", "--runtime", "flag")


@pytest.mark.parametrize(
    ("version", "name"), [("0.7.1", "holodeck-0.7"), ("0.6.40", "holodeck-0.6")]
)
def test_the_installed_holodeck_wins_over_pin_and_yaml(
    tmp_path: Path, version: str, name: str
) -> None:
    agent = _project(tmp_path)
    (tmp_path / "requirements.txt").write_text("holodeck-ai==0.5.0\n")
    info = detect_runtime(agent, SEVEN, installed=lambda: version)
    assert info.name == name and info.source == "installed"
    assert version in info.reason


def test_the_installed_version_is_read_from_package_metadata(tmp_path: Path) -> None:
    """The real lookup (importlib.metadata): holodeck-ai is not installed in the test venv."""
    info = detect_runtime(_project(tmp_path), None)
    assert info.source == "default" and info.name == "holodeck-0.6"


@pytest.mark.parametrize(
    ("file", "text", "name"),
    [
        ("requirements.txt", "httpx\nholodeck-ai==0.7.1  # the agent runtime\n", "holodeck-0.7"),
        ("requirements-dev.txt", "HoloDeck_AI[claude]>=0.7,<0.8\n", "holodeck-0.7"),
        ("requirements.txt", "holodeck-ai~=0.6.40\n", "holodeck-0.6"),
        ("requirements.txt", "holodeck-ai<0.7\n", "holodeck-0.6"),
        ("pyproject.toml", '[project]\ndependencies = ["holodeck-ai>=0.7.0"]\n', "holodeck-0.7"),
        (
            "pyproject.toml",
            '[tool.poetry.dependencies]\nholodeck-ai = "^0.6.40"\n',
            "holodeck-0.6",
        ),
        (
            "uv.lock",
            'version = 1\n[[package]]\nname = "holodeck-ai"\nversion = "0.7.1"\n',
            "holodeck-0.7",
        ),
    ],
)
def test_a_pin_beside_the_agent(tmp_path: Path, file: str, text: str, name: str) -> None:
    agent = _project(tmp_path)
    (tmp_path / file).write_text(text)
    info = detect_runtime(agent, SIX, installed=_none)
    assert (info.name, info.source) == (name, "pin")
    assert file in info.reason


def test_a_pin_in_a_parent_folder_up_to_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "agents" / "research").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\ndependencies = ["holodeck-ai==0.7.1"]\n')
    (tmp_path / "requirements.txt").write_text("holodeck-ai==0.6.40\n")  # above the root: unread
    info = detect_runtime(root / "agents" / "research" / "agent.yaml", SIX, installed=_none)
    assert info.name == "holodeck-0.7" and "pyproject.toml" in info.reason


def test_a_pin_that_admits_both_generations_says_nothing(tmp_path: Path) -> None:
    agent = _project(tmp_path)
    (tmp_path / "requirements.txt").write_text("holodeck-ai>=0.6\n")
    info = detect_runtime(agent, SEVEN, installed=_none)
    assert info.source == "yaml" and info.name == "holodeck-0.7"
    assert find_pin(tmp_path) is None


def test_the_yaml_openai_block_then_the_default(tmp_path: Path) -> None:
    agent = _project(tmp_path)
    seven = detect_runtime(agent, SEVEN, installed=_none)
    assert (seven.name, seven.source) == ("holodeck-0.7", "yaml")
    assert "openai:" in seven.reason
    six = detect_runtime(agent, SIX, installed=_none)
    assert (six.name, six.source) == ("holodeck-0.6", "yaml")
    bare = detect_runtime(agent, {"name": "a"}, installed=_none)
    assert (bare.name, bare.source) == ("holodeck-0.6", "default")


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("==0.7.1", "holodeck-0.7"),
        ("==0.6.40", "holodeck-0.6"),
        (">=0.7", "holodeck-0.7"),
        ("<0.7", "holodeck-0.6"),
        ("", None),
        (">=0.5", None),
        ("not a specifier", None),
    ],
)
def test_spec_generation(spec: str, name: str | None) -> None:
    assert spec_generation(spec) == name


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    file=st.sampled_from(["requirements.txt", "pyproject.toml", "uv.lock"]),
    text=st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda op, v: f"holodeck-ai{op}{v}\n",
            st.sampled_from(["==", ">=", "<", "~=", "!=", "==="]),
            st.from_regex(r"[0-9]{1,2}(\.[0-9]{1,2}){0,2}", fullmatch=True),
        ),
    ),
)
def test_any_pin_file_gives_a_runtime_never_an_error(tmp_path: Path, file: str, text: str) -> None:
    folder = tmp_path / "p"
    folder.mkdir(exist_ok=True)
    (folder / ".git").mkdir(exist_ok=True)
    (folder / file).write_text(text, encoding="utf-8")
    info = detect_runtime(folder / "agent.yaml", SIX, installed=_none)
    assert info.name in RUNTIMES and info.reason


def test_check_writable_matrix() -> None:
    def info(name: str) -> RuntimeInfo:
        return RuntimeInfo(name, "why", "flag")  # type: ignore[arg-type]

    assert check_writable(info("holodeck-0.6"), "tool_filtering") is None
    assert check_writable(info("holodeck-0.7"), "allowlists") is None
    seven = check_writable(info("holodeck-0.7"), "tool_filtering")
    assert seven is not None and "removed tool_filtering" in seven
    assert "--force" not in seven  # the dashboard offers no --force; the CLI adds it
    assert "tune --runtime holodeck-0.7" in seven and "\n" not in seven
    six = check_writable(info("holodeck-0.6"), "allowlists")
    assert six is not None and "tool_filtering" in six
    for name in ("anthropic", "claude-code", "openai"):
        for change in ("tool_filtering", "allowlists"):
            why = check_writable(info(name), change)  # type: ignore[arg-type]
            assert why is not None and f"export --runtime {name}" in why


def test_every_command_takes_runtime() -> None:
    tui, _, commands = build_parser()
    for parser in (tui, *commands.values()):
        actions = {a.dest: a for a in parser._actions}
        assert tuple(actions["runtime"].choices or ()) == RUNTIMES, parser.prog


def _write_07(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT_07)
    return path


def test_check_names_holodeck_07_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_07(tmp_path)
    assert main(["check", str(path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["runtime"] == {
        "name": "holodeck-0.7",
        "reason": "the YAML has an 'openai:' block (0.7+ only)",
        "source": "yaml",
    }
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    assert [f["code"] for f in errors] == ["filtering-removed-0.7"]
    assert errors[0]["evidence"]["line"] == 9
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("runtime holodeck-0.7 (the YAML has an 'openai:' block")


def test_check_runtime_flag_turns_the_error_into_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On a deferred-loading API the block is not read (a warning), and the flag is the reason."""
    path = _write_07(tmp_path)
    assert main(["check", str(path), "--json", "--runtime", "claude-code"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runtime"]["source"] == "flag"
    codes = {f["code"]: f["severity"] for f in data["findings"]}
    assert codes["filtering-not-read"] == "warning" and "filtering-removed-0.7" not in codes


@pytest.mark.parametrize(
    ("runtime", "knob_findings"),
    [("holodeck-0.6", True), ("holodeck-0.7", False), ("anthropic", False), ("openai", False)],
)
def test_the_knobs_findings_only_where_the_runtime_reads_the_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runtime: str, knob_findings: bool
) -> None:
    """Where the block is not read, what its knobs would do (a cold-start top_n_used, an
    always_include that matches nothing) is not what the runtime does: only the block's
    generation finding and the catalog's remain."""
    (tmp_path / ".git").mkdir()
    path = tmp_path / "agent.yaml"
    path.write_text(
        "name: a\nmodel: {provider: openai, name: gpt-4o}\ninstructions: {inline: hi}\n"
        "tool_filtering:\n  enabled: true\n  always_include_top_n_used: 3\n"
        "  always_include: [no_such_tool]\n"
    )
    samples = Path(__file__).resolve().parents[1] / "sample_configs"
    catalog, cases = samples / "research-agent.catalog.json", samples / "research-agent.cases.yaml"
    flags = ["--runtime", runtime, "--catalog", str(catalog), "--cases", str(cases)]
    main(["check", str(path), "--json", "--no-what-if", *flags])
    codes = {f["code"] for f in json.loads(capsys.readouterr().out)["findings"]}
    # The cases run under the block's filter: which expected tools it never sends.
    knobs = {"top-n-used-cold-start", "always-include-unmatched", "unreachable-tools"}
    assert (codes & knobs == knobs) if knob_findings else not codes & knobs, codes
    if not knob_findings:
        assert codes & {"filtering-not-read", "filtering-removed-0.7"}


def test_the_installed_holodeck_is_seen_in_a_real_environment(tmp_path: Path) -> None:
    """A fake holodeck-ai distribution on sys.path: importlib.metadata finds its version."""
    site = tmp_path / "site"
    info = site / "holodeck_ai-0.7.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: holodeck-ai\nVersion: 0.7.1\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from workbench.runtimes.detect import detect_runtime\n"
        "print(detect_runtime(sys.argv[2], {}).to_json())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(site), str(_project(tmp_path))],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "'name': 'holodeck-0.7'" in result.stdout and "'source': 'installed'" in result.stdout
