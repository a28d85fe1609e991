"""``eval --engine NAME --param KEY=VALUE``: another design measured like HoloDeck's filter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_cli import CASES, _args, world  # noqa: F401  (the fixture)

from workbench.cli import main
from workbench.errors import InputError
from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.evaluate.compare import compare
from workbench.search.strategies import (
    AnthropicParams,
    ArgusParams,
    StackOneParams,
    ToolkitsParams,
)
from workbench.search.strategies.params import parse_params
from workbench.workspace import open_workspace


def test_params_are_read_by_their_field_types() -> None:
    assert parse_params("stackone", ["alpha=0.35", "bm25_norm=clamp", "limit=3"]) == (
        StackOneParams(alpha=0.35, bm25_norm="clamp", limit=3)
    )
    assert parse_params("argus", ["keep_tools=a, mail-send_email", "scorer=overlap"]) == (
        ArgusParams(keep_tools=("a", "mail-send_email"), scorer="overlap")
    )
    assert parse_params("anthropic", ["server_defer=mail:false,files:yes"]) == AnthropicParams(
        server_defer={"mail": False, "files": True}
    )
    assert parse_params("toolkits", ["keywords=mail:email inbox,files:file"]) == ToolkitsParams(
        keywords={"mail": ("email", "inbox"), "files": ("file",)}
    )
    assert parse_params("pizzapi", []) == parse_params("pizzapi", ())


@pytest.mark.parametrize(
    ("engine", "item", "says"),
    [
        ("stackone", "nope=1", "stackone has no parameter 'nope'"),
        ("stackone", "alpha", "expected KEY=VALUE"),
        ("stackone", "alpha=lots", "'lots' is not a number"),
        ("stackone", "bm25_norm=tanh", "must be one of sigmoid, clamp"),
        ("pizzapi", "keep_loaded_tools=maybe", "'maybe' is not true or false"),
        ("anthropic", "server_defer=mail", "expected NAME:VALUE"),
        ("toolkits", "toolkits=x", "set in code"),
        ("anthropic", "max_results=9", "max_results"),
        ("stackone", "alpha=2", "--param alpha: must be between 0 and 1, got 2.0"),
        ("stackone", "alpha=nan", "must be between 0 and 1"),
    ],
)
def test_bad_params_are_one_clear_error(engine: str, item: str, says: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_params(engine, [item])
    assert says in str(caught.value) and "\n" not in str(caught.value)


def test_eval_engine_equals_compares_default_row(
    world: dict[str, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(_args(world, "eval", "--engine", "stackone", "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == "stackone" and data["setting"]["alpha"] == 0.2
    assert data["cases"] == len(CASES) == len(data["per_case"])
    ws = open_workspace(world["agent"], catalog_file=world["catalog"], embedder_spec="none")
    cases = resolve_cases(load_cases(world["cases"]), ws.catalog)
    report = compare(ws, cases, engines=("stackone",))
    row = next(r for r in report.rows if r.engine == "stackone" and r.setting == "default")
    assert data["metrics"] == row.metrics.to_json()


def test_eval_engine_params_change_what_is_sent(
    world: dict[str, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    more = ("--engine", "argus", "--param", "limit=1", "--param", "keep_tools=files-write_file")
    assert main(_args(world, "eval", "--json", *more)) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["setting"]["limit"] == 1 and data["setting"]["keep_tools"] == ["files-write_file"]
    for case in data["per_case"]:
        assert "files-write_file" in case["selected"] and len(case["selected"]) <= 2
    assert main(_args(world, "eval", *more)) == 0
    out = capsys.readouterr().out
    assert "engine    argus" in out and "recall" in out


@pytest.mark.parametrize(
    ("more", "says"),
    [
        (("--engine", "stackone", "--top-k", "3"), "--top-k: --top-k is a holodeck setting"),
        (("--param", "alpha=0.3"), "holodeck takes the setting flags"),
        (("--engine", "argus", "--param", "limit=0"), "limit"),
    ],
)
def test_engine_flag_mistakes_exit_2_with_one_line(
    world: dict[str, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    more: tuple[str, ...],
    says: str,
) -> None:
    assert main(_args(world, "eval", *more)) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
