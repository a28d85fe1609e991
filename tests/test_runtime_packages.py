"""A runtime is one package (docs/architecture.md, "Adding a runtime"): ``runtimes/<module>/``
holds its detection, tuner, writer and engine adapter; runtimes share only the modules of
``runtimes/`` itself (the interface, the registry, detection, the search-tool base) and the
layers below; and a runtime's name is a literal only in its own package and the registry."""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from doc_examples import python_block

from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.runtimes.registry import BUILTIN, all_runtimes

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
RUNTIMES = PACKAGE / "runtimes"

#: Where a runtime's name is a literal with another meaning: the same word names an engine of
#: the lab (registered in its own file), a model provider, the ``serve`` command or the library
#: a runtime is. (path under workbench/, the word) -> what it means there.
OTHER_MEANINGS: dict[tuple[str, str], str] = {
    ("search/strategies/anthropic.py", "anthropic"): "the lab's engine of that name",
    ("search/strategies/argus.py", "argus"): "the lab's engine of that name",
    ("search/strategies/pizzapi.py", "pizzapi"): "the lab's engine of that name",
    ("search/strategies/fastmcp.py", "fastmcp"): "the lab's engine of that name",
    ("config/models.py", "anthropic"): "a model provider",
    ("config/models.py", "openai"): "a model provider",
    ("config/writeback/block.py", "anthropic"): "a model provider",
    ("evaluate/allowlist.py", "anthropic"): "a model provider",
    ("evaluate/diagnostics.py", "anthropic"): "a model provider",
    ("search/embedders/resolve.py", "anthropic"): "a model provider",
    ("search/embedders/resolve.py", "openai"): "a model provider",
    ("tokens/models.py", "anthropic"): "a model provider",
    ("config/checks.py", "openai"): "a model provider",
    ("config/loader.py", "openai"): "a model provider",
    ("config/writeback/allowlist.py", "openai"): "a model provider",
    ("config/writeback/block.py", "openai"): "a model provider",
    ("evaluate/allowlist.py", "openai"): "a model provider",
    ("evaluate/chat.py", "openai"): "a model provider",
    ("search/embedders/base.py", "openai"): "a model provider",
    ("runtimes/holodeck07/__init__.py", "openai"): "a model provider (0.7's backends)",
    ("runtimes/claude_code/__init__.py", "anthropic"): "the lab's engine it searches with",
    ("runtimes/openai/__init__.py", "anthropic"): "the lab's engine it searches with",
    ("serve/logs.py", "fastmcp"): "the fastmcp library's logger",
    ("cli.py", "serve"): "the serve command",
    ("commands/serve.py", "serve"): "the serve command",
    ("config/servers.py", "serve"): "the serve command in an agent's entry",
    ("config/writeback/served.py", "serve"): "the serve command in an agent's entry",
    ("search/flags.py", "serve"): "the serve command in a client's entry",
}


def _literals(path: Path) -> set[str]:
    """The string constants of a module, docstrings and f-string parts left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    }  # fmt: skip


def _home(relative: str) -> str | None:
    """The runtime package a path under workbench/ belongs to (None: none)."""
    parts = relative.split("/")
    if parts[0] == "runtimes" and len(parts) > 2:
        return parts[1]
    return None


def test_every_built_in_runtime_is_a_package() -> None:
    for module in BUILTIN:
        assert (RUNTIMES / module / "__init__.py").is_file(), f"runtimes/{module}/ is no package"
        assert not (RUNTIMES / f"{module}.py").exists()
    loose = {p.stem for p in RUNTIMES.glob("*.py")}
    shared = {
        "__init__",
        "base",
        "compare",
        "detect",
        "registry",
        "holodeck_versions",
        "search_tool",
    }
    assert loose == shared | {"search_tool_tune"}, "a runtime's part outside its package"


def test_no_runtime_package_imports_another() -> None:
    pattern = re.compile(r"workbench\.runtimes\.(\w+)")
    for module in BUILTIN:
        for path in (RUNTIMES / module).rglob("*.py"):
            for found in pattern.findall(path.read_text(encoding="utf-8")):
                assert found == module or found not in BUILTIN, (
                    f"{path.relative_to(ROOT)} imports the {found} runtime: share through "
                    "runtimes/ or a lower layer"
                )


def test_a_runtimes_name_is_a_literal_only_in_its_package_and_the_registry() -> None:
    module_of = {r.name: type(r).__module__.split(".")[2] for r in all_runtimes()}
    strays: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = str(path.relative_to(PACKAGE))
        literals = _literals(path)
        for name, module in module_of.items():
            if name not in literals or _home(relative) == module:
                continue
            if relative == "runtimes/registry.py":
                continue
            if (relative, name) in OTHER_MEANINGS:
                used.add((relative, name))
                continue
            strays.append(f"{relative}: {name!r}")
    assert not strays, "a runtime's name outside its package: " + ", ".join(strays)
    assert used == set(OTHER_MEANINGS), f"no longer there: {set(OTHER_MEANINGS) - used}"


def test_the_scan_can_fail(tmp_path: Path) -> None:
    """A module that spells a runtime's name is seen."""
    probe = tmp_path / "probe.py"
    probe.write_text('"""doc: claude-code"""\nRUNTIME = "claude-code"\n', encoding="utf-8")
    assert "claude-code" in _literals(probe)
    probe.write_text('"""doc: claude-code"""\n', encoding="utf-8")
    assert "claude-code" not in _literals(probe)


def example_runtime() -> str:
    """The Python block of docs/architecture.md's "Adding a runtime"."""
    return python_block("### Adding a runtime")


@pytest.fixture
def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The example runtime as one more package of runtimes/, in the registry's list."""
    import workbench.runtimes as runtimes
    from workbench.runtimes import registry

    folder = tmp_path / "gateway"
    folder.mkdir()
    (folder / "__init__.py").write_text(example_runtime(), encoding="utf-8")
    monkeypatch.setattr(runtimes, "__path__", [*runtimes.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "BUILTIN", (*registry.BUILTIN, "gateway"))
    registry.all_runtimes.cache_clear()
    yield "my-gateway"
    registry.all_runtimes.cache_clear()
    sys.modules.pop("workbench.runtimes.gateway", None)


def test_a_new_runtime_is_one_package_plus_a_registry_line(
    gateway: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main
    from workbench.runtimes import get_runtime
    from workbench.runtimes.compare import compare_runtimes
    from workbench.workspace import open_workspace

    samples = ROOT / "sample_configs"
    agent = tmp_path / "research-agent.yaml"
    shutil.copy(samples / "research-agent.yaml", agent)
    shutil.copy(samples / "research-agent.cases.yaml", tmp_path)
    catalog = samples / "research-agent.catalog.json"
    common = [str(agent), "--catalog", str(catalog), "--runtime", gateway]
    assert main(["tune", *common, "--folds", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["runtime"]["name"] == gateway and report["cases"] > 0
    assert 0.0 <= report["heldout"]["recall"] <= 1.0 and f"--runtime {gateway}" in report["export"]
    assert main(["export", *common, "--keep", "read_graph"]) == 0
    assert json.loads(capsys.readouterr().out) == {"keep": ["memory-read_graph"]}

    runtime = get_runtime(gateway)
    ws = open_workspace(agent, catalog_file=catalog, embedder_spec="none")
    cases = resolve_cases(load_cases(tmp_path / "research-agent.cases.yaml"), ws.catalog)
    rows = compare_runtimes(ws, cases, registry=(runtime,), folds=3, budget=4000).rows
    assert [row.runtime for row in rows] == [gateway]
    assert len(rows[0].cases) == len(cases)
