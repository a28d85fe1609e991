"""The engine registry: an engine is one module plus its entry, and is named nowhere else.

The example of docs/architecture.md ("Adding an engine") runs here as a module dropped into the
package: the CLI's choices, ``eval --engine``, compare and the engines plot all have it.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_examples import python_block
from test_eval_cli import _args, world  # noqa: F401  (the fixture)

import workbench.search.strategies as strategies
from workbench.cli import build_parser, main
from workbench.errors import InputError
from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.evaluate.compare import compare, params_text, stages
from workbench.search.strategies import registry
from workbench.search.strategies.params import parse_params
from workbench.tui.widgets.engines_plot import engine_marks, engine_series
from workbench.workspace import open_workspace

REPO = Path(__file__).resolve().parents[1]
WORKBENCH = REPO / "workbench"

#: Where an engine's name is a literal that means something else (path under workbench/, name).
#: workbench/runtimes/ is left out of the scan whole: a runtime and the engine that reproduces
#: its search share a name (argus, pizzapi, fastmcp, anthropic), and a runtime's name is a literal
#: in its own module by the runtime registry's rule (docs/architecture.md, "Adding a runtime").
OTHER_MEANINGS: dict[tuple[str, str], str] = {
    ("config/models.py", "anthropic"): "a model provider (model.provider)",
    ("config/writeback/block.py", "anthropic"): "a model provider",
    ("evaluate/allowlist.py", "anthropic"): "a model provider",
    ("evaluate/diagnostics.py", "anthropic"): "a model provider",
    ("search/embedders/resolve.py", "anthropic"): "a model provider",
    ("tokens/models.py", "anthropic"): "a model provider",
    ("serve/logs.py", "fastmcp"): "the fastmcp library's logger",
    ("tui/screenshots.py", "stackone"): "the stackone data set's folder",
}


def example_engine() -> str:
    """The Python block of docs/architecture.md's "Adding an engine"."""
    return python_block("### Adding an engine")


@pytest.fixture
def words_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example engine as one more file of the package, found as the registry finds one."""
    (tmp_path / "words.py").write_text(example_engine(), encoding="utf-8")
    monkeypatch.setattr(strategies, "__path__", [*strategies.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_discovered", False)
    yield "words"
    registry.unregister("words")
    sys.modules.pop("workbench.search.strategies.words", None)
    if hasattr(strategies, "words"):
        delattr(strategies, "words")


def test_the_engines_keep_their_places() -> None:
    """compare's rows, its passes and the plot's legend keep this order (the golden outputs)."""
    order = ("stackone", "argus", "pizzapi", "anthropic", "toolkits", "fastmcp", "holo")
    assert registry.names() == strategies.ENGINES == order
    assert stages() == ["holodeck", *order[:4], "anthropic (regex)", *order[4:]]
    assert list(engine_marks()) == [
        "holodeck",
        *order[:4],
        "anthropic regex",
        *order[4:],
    ]
    eval_parser = build_parser()[2]["eval"]
    engine = next(a for a in eval_parser._actions if a.dest == "engine")
    assert tuple(engine.choices or ()) == ("holodeck", *order)


def test_a_new_engine_is_one_file_plus_its_entry(
    words_engine: str,
    world: dict[str, Path],  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert words_engine in registry.names()
    entry = registry.get_engine(words_engine)
    assert entry.module == "workbench.search.strategies.words"
    eval_parser = build_parser()[2]["eval"]
    engine_flag = next(a for a in eval_parser._actions if a.dest == "engine")
    assert words_engine in (engine_flag.choices or ())
    assert parse_params(words_engine, ["limit=1"]) == entry.params(limit=1)

    assert main(_args(world, "eval", "--engine", words_engine, "--param", "limit=1", "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["engine"] == words_engine and data["setting"] == {"limit": 1}
    assert all(len(case["selected"]) <= 1 for case in data["per_case"])
    assert data["metrics"]["hit"] > 0  # the names carry the cases' words

    ws = open_workspace(world["agent"], catalog_file=world["catalog"], embedder_spec="none")
    cases = resolve_cases(load_cases(world["cases"]), ws.catalog)
    assert words_engine in stages()
    report = compare(ws, cases, engines=(words_engine,))
    rows = [row for row in report.rows if row.engine == words_engine]
    assert [row.setting for row in rows] == ["default", "best"]
    assert params_text(words_engine, rows[0].params) == "limit 3"
    assert engine_marks()[words_engine] == ("◎", "cyan")
    series = {s.label: s for s in engine_series(report)}
    assert series[words_engine].marker == "◎" and len(series[words_engine].points) == 3


def test_a_name_is_registered_once() -> None:
    taken = registry.get_engine("argus")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(taken, module="elsewhere")
    assert registry.register(taken, module=taken.module) == taken  # a reload replaces it
    with pytest.raises(InputError, match="unknown engine 'nope'"):
        registry.get_engine("nope")


def _name_literals(names: set[str]) -> Iterator[tuple[str, str, int]]:
    """Each string constant of workbench/ (outside runtimes/) equal to one of ``names``: the
    file under workbench/, the name, the line."""
    for path in sorted(WORKBENCH.rglob("*.py")):
        relative = path.relative_to(WORKBENCH).as_posix()
        if relative.startswith("runtimes/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                yield relative, str(node.value), node.lineno


def test_an_engine_is_named_only_in_its_own_module() -> None:
    """Every registered engine's name, as a string literal, appears only in the module that
    registers it and in its own package (``search/<name>/``, holo's engine), or where the word
    means something else (:data:`OTHER_MEANINGS`)."""
    engines = {engine.name: engine for engine in registry.engines()}
    seen: set[tuple[str, str]] = set()
    stray = []
    for relative, name, line in _name_literals(set(engines)):
        module = engines[name].module.removeprefix("workbench.").replace(".", "/") + ".py"
        if relative == module or relative.startswith(f"search/{name}/"):
            continue
        if (relative, name) in OTHER_MEANINGS:
            seen.add((relative, name))
            continue
        stray.append(f"workbench/{relative}:{line}: {name!r}")
    assert not stray, "engine names outside their own module:\n" + "\n".join(stray)
    assert seen == set(OTHER_MEANINGS), "OTHER_MEANINGS lists places that no longer hold the name"
