"""``${VAR}`` substitution and ``.env`` files, as HoloDeck (and python-dotenv) do them."""

from __future__ import annotations

from pathlib import Path

import pytest
from provided import require

from workbench.config import load_agent
from workbench.config.envsubst import (
    UnsetVariable,
    default_dotenv_files,
    merged_environ,
    parse_dotenv,
    references,
    substitute,
)
from workbench.errors import ConfigError

AGENT = """\
name: env-agent
model:
  provider: openai
  name: ${MODEL_NAME}
instructions: {inline: hi}
tools:
  - name: brave
    type: mcp
    description: search
    command: npx
    env:
      BRAVE_API_KEY: ${BRAVE_API_KEY}
"""


@pytest.fixture
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agent directory, with HOME elsewhere so no user-level .env leaks in."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    directory = tmp_path / "agent"
    directory.mkdir()
    (directory / "agent.yaml").write_text(AGENT)
    return directory


def test_dotenv_beside_the_agent_fills_what_the_environment_lacks(agent_dir: Path) -> None:
    (agent_dir / ".env").write_text("MODEL_NAME=gpt-4o-mini\nBRAVE_API_KEY=from-dotenv\n")
    config = load_agent(agent_dir / "agent.yaml", environ={"BRAVE_API_KEY": "from-process"})
    # HoloDeck loads .env with override=False: the process environment wins.
    assert config.agent.model.name == "gpt-4o-mini"
    assert config.mcp_tools()[0].env == {"BRAVE_API_KEY": "from-process"}
    assert config.env_files == [agent_dir / ".env"]
    assert config.env["MODEL_NAME"] == "gpt-4o-mini"
    assert config.env["BRAVE_API_KEY"] == "from-process"


def test_user_level_dotenv_comes_after_the_agent_one(agent_dir: Path, tmp_path: Path) -> None:
    (agent_dir / ".env").write_text("MODEL_NAME=gpt-4o\n")
    user = tmp_path / "home" / ".holodeck"
    user.mkdir()
    (user / ".env").write_text("MODEL_NAME=gpt-3.5-turbo\nBRAVE_API_KEY=user-key\n")
    config = load_agent(agent_dir / "agent.yaml", environ={})
    assert config.agent.model.name == "gpt-4o"
    assert config.mcp_tools()[0].env == {"BRAVE_API_KEY": "user-key"}
    assert config.env_files == [agent_dir / ".env", user / ".env"]
    assert default_dotenv_files(agent_dir) == [agent_dir / ".env", user / ".env"]


def test_missing_variable_names_it_its_line_and_key(agent_dir: Path) -> None:
    (agent_dir / ".env").write_text("MODEL_NAME=gpt-4o\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(agent_dir / "agent.yaml", environ={})
    err = caught.value
    assert isinstance(err, UnsetVariable) and (err.name, err.column) == ("BRAVE_API_KEY", 21)
    assert (err.line, err.field) == (12, "tools[0].env.BRAVE_API_KEY")
    assert "'BRAVE_API_KEY' is not set" in str(err)
    assert str(err).startswith(f"{agent_dir / 'agent.yaml'}:12: tools[0].env.BRAVE_API_KEY: ")


def test_missing_variable_in_a_comment_is_still_an_error(tmp_path: Path) -> None:
    """HoloDeck substitutes the raw text, comments included."""
    path = tmp_path / "agent.yaml"
    path.write_text("name: a  # owner ${OWNER}\nmodel: {provider: openai, name: gpt-4o}\n")
    with pytest.raises(ConfigError, match=r":1: name: environment variable 'OWNER' is not set"):
        load_agent(path, environ={}, dotenv_files=[], global_configs=[])


def test_missing_variables_can_be_warnings(agent_dir: Path) -> None:
    config = load_agent(
        agent_dir / "agent.yaml", environ={"MODEL_NAME": "gpt-4o"}, missing_env="warn"
    )
    assert config.mcp_tools()[0].env == {"BRAVE_API_KEY": "holo-tune-unset-BRAVE_API_KEY"}
    assert config.warnings == [
        f"{agent_dir / 'agent.yaml'}:12: environment variable 'BRAVE_API_KEY' is not set; "
        "'holo-tune-unset-BRAVE_API_KEY' stands in (HoloDeck would refuse the file)"
    ]


def test_environ_defaults_to_the_process_environment(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_NAME", "gpt-4.1")
    monkeypatch.setenv("BRAVE_API_KEY", "k")
    assert load_agent(agent_dir / "agent.yaml").agent.model.name == "gpt-4.1"


def test_only_the_holodeck_pattern_is_substituted() -> None:
    text = "a: ${A}\nb: $A\nc: ${A:-x}\nd: ${1A}\ne: $${A}\n"
    result = substitute(text, {"A": "1"}, file="f.yaml")
    assert result.text == "a: 1\nb: $A\nc: ${A:-x}\nd: ${1A}\ne: $1\n"
    assert references(text) == [("A", 1), ("A", 5)]


def test_line_map_follows_values_with_newlines() -> None:
    result = substitute("x: ${V}\ny: 2\n", {"V": "a\nb"}, file="f.yaml")
    assert result.text == "x: a\nb\ny: 2\n"
    assert result.line_map == (1, 1, 2)
    assert result.source_line(2) == 2 and result.source_line(99) == 2


def test_dotenv_dialect() -> None:
    text = (
        "# comment\n"
        "\n"
        "PLAIN=value\n"
        "export EXPORTED=yes\n"
        "SPACED = padded   \n"
        "INLINE=abc # a comment\n"
        "HASH=abc#not-a-comment\n"
        "SINGLE='raw \\n'\n"
        'DOUBLE="tab\\there ${PLAIN}"\n'
        'MULTI="line one\nline two"\n'
        "EXPANDED=${PLAIN}-${OUTER}-${NONE:-fallback}-${NONE}\n"
        "EMPTY=\n"
        "NO_EQUALS\n"
    )
    assert parse_dotenv(text, {"OUTER": "out"}) == {
        "PLAIN": "value",
        "EXPORTED": "yes",
        "SPACED": "padded",
        "INLINE": "abc",
        "HASH": "abc#not-a-comment",
        "SINGLE": "raw \\n",
        "DOUBLE": "tab\there value",
        "MULTI": "line one\nline two",
        "EXPANDED": "value-out-fallback-",
        "EMPTY": "",
    }


def test_merged_environ_first_file_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a.env", tmp_path / "b.env"
    first.write_text("X=1\n")
    second.write_text("X=2\nY=2\n")
    env, read = merged_environ({"Z": "0"}, [first, tmp_path / "absent.env", second])
    assert env == {"Z": "0", "X": "1", "Y": "2"} and read == [first, second]


DOTENV_CASES = [
    "A=1\nB=two words\nC = spaced  \n",
    "export A=1\n# comment\n\nB='single ${A}'\nC=\"double ${A}\"\n",
    "A=abc # comment\nB=abc#hash\nC=\"quoted\" # comment\nD='it''s'\n",
    'A="line one\nline two"\nB="esc \\" \\n \\t \\\\ done"\n',
    "A=${OUTER}\nB=${A}-${MISSING:-dflt}-${MISSING}\nC=${OUTER:-unused}\n",
    "EMPTY=\nNO_VALUE\n1BAD=x\nGOOD=y\n  INDENTED=z\n",
    "A='unterminated\nB=after\n",
    'A="a"b\nB=ok\nexport\nC=${C}x\n',
    "A=1\r\nB='two'\r\nC=\"x ${A}\"\r\n",
    "A= \t spaced value \t # c\nB=#nocomment\nC= #comment\n",
]


@pytest.mark.parametrize("text", DOTENV_CASES)
def test_dotenv_dialect_matches_python_dotenv(text: str, tmp_path: Path) -> None:
    """HoloDeck's CLI reads .env with python-dotenv (``load_dotenv``, interpolation on)."""
    require("python-dotenv (the dev extra)", modules=["dotenv"])
    import dotenv

    path = tmp_path / ".env"
    path.write_text(text)
    outer = {"OUTER": "out"}
    with pytest.MonkeyPatch.context() as patch:
        for key in ("A", "B", "C", "D", "MISSING"):
            patch.delenv(key, raising=False)
        patch.setenv("OUTER", "out")
        expected = {k: v for k, v in dotenv.dotenv_values(path).items() if v is not None}
    assert parse_dotenv(text, outer) == expected


def test_a_missing_variable_where_a_number_belongs_is_named_not_its_stand_in(
    agent_dir: Path,
) -> None:
    """With missing variables as warnings, ``top_k: ${TOPK}`` fails validation: the error says
    TOPK is not set, never 'expected an integer, got holo-tune-unset-TOPK'."""
    path = agent_dir / "agent.yaml"
    path.write_text(AGENT + "tool_filtering:\n  top_k: ${TOPK}\n")
    with pytest.raises(ConfigError) as err:
        load_agent(path, environ={"MODEL_NAME": "gpt-4o", "BRAVE_API_KEY": "k"}, missing_env="warn")
    assert str(err.value) == (
        f"{path}:14: tool_filtering.top_k: ${{TOPK}} is not set, and this field needs a value "
        "from it"
    )
