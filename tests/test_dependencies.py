"""The dependencies pyproject.toml declares are the ones holo-tune's code uses."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The extras whose packages workbench/ imports (dev holds the tests' and the tools' packages).
CODE_EXTRAS = ("local", "serve")


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9_.\-]+", requirement)
    assert found is not None, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def _declared() -> tuple[set[str], set[str]]:
    """The base dependencies, and those with the code's extras."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = {_name(r) for r in project["dependencies"]}
    extras = {_name(r) for extra in CODE_EXTRAS for r in project["optional-dependencies"][extra]}
    return base, base | extras


def _imported() -> tuple[set[str], set[str]]:
    """The top-level modules workbench/ imports (inside functions too), and its string literals."""
    modules: set[str] = set()
    strings: set[str] = set()
    for path in (REPO / "workbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules.add(node.module.split(".")[0])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
    return modules - set(sys.stdlib_module_names) - {"workbench", "__future__"}, strings


def _requirements(distribution: str) -> set[str]:
    try:
        return {_name(r) for r in requires(distribution) or ()}
    except PackageNotFoundError:
        return set()


def test_every_base_dependency_is_used_by_the_code() -> None:
    """A base dependency is imported by workbench/, or named there (a data package it reads)."""
    base, _ = _declared()
    modules, strings = _imported()
    by_module = packages_distributions()
    used = {_name(d) for m in modules | (strings & set(by_module)) for d in by_module.get(m, ())}
    assert base - used == set(), "declared, never used: move it to the extra that uses it"


def test_every_import_is_declared_or_comes_with_a_declared_package() -> None:
    _, declared = _declared()
    brought = set().union(*(_requirements(d) for d in declared))
    modules, _ = _imported()
    by_module = packages_distributions()
    missing = {
        module
        for module in modules
        if not {_name(d) for d in by_module.get(module, ())} & (declared | brought)
    }
    assert missing == set(), "imported by workbench/, declared nowhere"
