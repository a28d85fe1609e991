"""Imports point down the layers of docs/design.md, and no import circle (design.md, Layers).

The import graph of ``workbench/`` is built from the source with ``ast``: every ``import`` and
``from ... import``, those inside functions included. An import under ``if TYPE_CHECKING:`` counts
for the order and the rules, not for circles (it runs nothing). The order is read from
design.md's Layers block, bottom up.

:data:`KNOWN` is a ratchet: the edges that break a rule today, each with a one-word reason. The
test fails on a broken rule not listed and on a listed edge that no longer breaks one, so the
list only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
DESIGN = ROOT / "docs" / "design.md"

#: Layers whose modules return data: they never import the commands or the parser.
RETURN_DATA = ("catalog", "config", "search", "evaluate", "runtimes", "serve")
#: (the layers the rule binds, an import they must not make, the rule's name).
RULES: tuple[tuple[frozenset[str] | None, str, str], ...] = (
    (frozenset(RETURN_DATA), "workbench.commands", "commands/ imported below it"),
    (frozenset(RETURN_DATA), "workbench.cli", "cli imported below it"),
    (frozenset({"runtimes"}), "argparse", "argparse under runtimes/"),
    (None, "textual", "textual outside tui/"),
)
#: Layers a rule marked ``None`` leaves free (textual is the TUI's).
FREE = frozenset({"tui"})

#: Today's broken rules, ``(module, imported) -> reason`` (one word). Remove an entry when its
#: import goes; never add one to let a new import in.
KNOWN: dict[tuple[str, str], str] = {}


@dataclass(frozen=True, slots=True)
class Edge:
    """One module importing another (the first import statement of the pair)."""

    source: str
    target: str
    line: int
    #: Every import of the pair is under ``if TYPE_CHECKING:``.
    typing_only: bool = False


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """``workbench.x.y`` -> its file, for every module of the package (a package is its
    ``__init__.py``)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(node: ast.AST, typing: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement under ``node`` (at any depth: in functions, classes, ``try``), with
    whether it is under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, typing
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _imports(ast.Module(body=[stmt], type_ignores=[]), True)
            for stmt in child.orelse:
                yield from _imports(ast.Module(body=[stmt], type_ignores=[]), typing)
        else:
            yield from _imports(child, typing)


def _targets(
    node: ast.stmt, module: str, is_package: bool, modules: Mapping[str, Path]
) -> Iterator[str]:
    """The modules one import statement names: ``from a import b`` names ``a.b`` when that is a
    module, else ``a``; another package's imports are named by their top-level name."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
        return
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join([*base, node.module] if node.module else base)
    else:
        origin = node.module or ""
    for alias in node.names:
        sub = f"{origin}.{alias.name}"
        yield sub if sub in modules else origin


def import_graph(package: Path = PACKAGE) -> tuple[dict[str, Path], dict[tuple[str, str], Edge]]:
    """The package's modules and its imports, ``(source, target) -> Edge``. A target inside the
    package is a module name (an unknown one is kept as written, for the test to name); one outside
    is its top-level name."""
    modules = module_names(package)
    edges: dict[tuple[str, str], Edge] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, typing in _imports(tree):
            for target in _targets(node, name, path.name == "__init__.py", modules):
                top = target.split(".")[0]
                if top != package.name:
                    target = top
                if target == name:
                    continue
                old = edges.get((name, target))
                if old is None:
                    edges[(name, target)] = Edge(name, target, node.lineno, typing)
                elif old.typing_only and not typing:
                    edges[(name, target)] = Edge(name, target, node.lineno, False)
    return modules, edges


def design_order(text: str) -> list[str]:
    """The layers of design.md's Layers block, bottom up: ``errors.py`` is ``errors``,
    ``catalog/`` is ``catalog``, ``__init__.py`` the package itself."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("    workbench/\n", 1)[1].split("\n\n", 1)[0]
    order = []
    for line in block.splitlines():
        match = re.match(r"      (\w+)(?:/|\.py)\s", line)
        assert match, f"design.md, Layers: cannot read {line!r}"
        order.append(match.group(1))
    return order


def layer_of(module: str) -> str:
    """``workbench.search.engine`` -> ``search``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in succ and b in succ:
            succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)


def broken_rules(edge: Edge, order: Sequence[str]) -> list[str]:
    """Why ``edge`` breaks the layers (empty: it does not)."""
    source = layer_of(edge.source)
    why = []
    if edge.target.startswith("workbench"):
        target = layer_of(edge.target)
        if source in order and target in order and order.index(target) > order.index(source):
            why.append(f"points up ({source} -> {target})")
    for layers, banned, rule in RULES:
        binds = source not in FREE if layers is None else source in layers
        hit = edge.target == banned or edge.target.startswith(banned + ".")
        if binds and hit:
            why.append(rule)
    return why


def problems(
    modules: Iterable[str],
    edges: Mapping[tuple[str, str], Edge],
    order: Sequence[str],
    known: Mapping[tuple[str, str], str],
) -> list[str]:
    """Every way the graph breaks the layers that ``known`` does not excuse, and every entry of
    ``known`` that excuses nothing any more; empty when all is well."""
    modules = set(modules)
    out: list[str] = []
    for module in sorted(modules):
        if layer_of(module) not in order:
            out.append(f"{module}: in no layer of design.md (add it to the Layers block)")
    for layer in order:
        if not any(layer_of(m) == layer for m in modules):
            out.append(f"design.md, Layers: {layer} is no module of workbench/")
    broken: set[tuple[str, str]] = set()
    for key, edge in sorted(edges.items()):
        if edge.target.startswith("workbench") and edge.target not in modules:
            out.append(f"{edge.source}:{edge.line} imports {edge.target}, which does not exist")
            continue
        why = broken_rules(edge, order)
        if why:
            broken.add(key)
            if key not in known:
                out.append(f"{edge.source}:{edge.line} imports {edge.target}: {'; '.join(why)}")
    running = [k for k, e in edges.items() if not e.typing_only]
    tolerated = [k for k in running if k not in known]
    for component in cycles(modules, tolerated):
        members = set(component)
        inside = sorted(f"{a} -> {b}" for a, b in tolerated if a in members and b in members)
        out.append(f"import circle of {len(component)} modules: {', '.join(inside)}")
    for key, reason in sorted(known.items()):
        if key not in edges:
            out.append(f"KNOWN {key[0]} -> {key[1]} ({reason}): no such import any more, remove it")
        elif key not in broken and not _closes_circle(key, modules, tolerated, edges):
            out.append(f"KNOWN {key[0]} -> {key[1]} ({reason}): breaks no rule now, remove it")
    return out


def _closes_circle(
    key: tuple[str, str],
    modules: Iterable[str],
    tolerated: Sequence[tuple[str, str]],
    edges: Mapping[tuple[str, str], Edge],
) -> bool:
    """Whether the import ``key`` would close a circle with the imports not excused."""
    if edges[key].typing_only:
        return False
    return any(set(key) <= set(c) for c in cycles(modules, [*tolerated, key]))


def test_layers_hold() -> None:
    modules, edges = import_graph()
    order = design_order(DESIGN.read_text(encoding="utf-8"))
    assert order[0] == "__init__" and "runtimes" in order and "commands" in order
    assert order.index("runtimes") < order.index("commands"), "commands/ sits above runtimes/"
    assert len(edges) > 500, "the graph was not built"
    found = problems(modules, edges, order, KNOWN)
    assert not found, "\n".join(found)


def test_known_reasons_are_one_word() -> None:
    for key, reason in KNOWN.items():
        assert re.fullmatch(r"[a-z-]+", reason), (key, reason)


def test_graph_sees_imports_in_functions_and_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "workbench"
    (package / "search").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "search" / "__init__.py").write_text("from . import engine\n")
    (package / "search" / "engine.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from workbench.cli import main\n"
        "def f():\n"
        "    import argparse\n"
        "    from workbench.search import other\n"
        "    from ..search import engine\n"
    )
    (package / "search" / "other.py").write_text("from workbench.search import thing\n")
    (package / "cli.py").write_text("import workbench.search.engine\n")
    modules, edges = import_graph(package)
    assert sorted(modules) == [
        "workbench",
        "workbench.cli",
        "workbench.search",
        "workbench.search.engine",
        "workbench.search.other",
    ]
    assert edges[("workbench.search.engine", "workbench.cli")].typing_only
    assert edges[("workbench.search.engine", "argparse")].line == 5
    assert not edges[("workbench.search.engine", "workbench.search.other")].typing_only
    assert ("workbench.search", "workbench.search.engine") in edges
    assert ("workbench.search.other", "workbench.search") in edges
    assert ("workbench.cli", "workbench.search.engine") in edges
    assert ("workbench.search.engine", "workbench.search.engine") not in edges


def test_the_check_can_fail() -> None:
    """A small graph with an upward import, a banned one and a circle: each is reported; the
    ratchet excuses what it lists and reports a listed edge that is gone."""
    order = ["__init__", "catalog", "search", "runtimes", "commands"]
    modules = [
        "workbench",
        "workbench.catalog.a",
        "workbench.search.b",
        "workbench.search.c",
        "workbench.runtimes.d",
        "workbench.commands.e",
    ]
    pairs = [
        ("workbench.catalog.a", "workbench.search.b", False),  # up
        ("workbench.search.b", "workbench.search.c", False),  # circle ...
        ("workbench.search.c", "workbench.search.b", False),  # ... closed
        ("workbench.runtimes.d", "workbench.commands.e", False),  # up and banned
        ("workbench.runtimes.d", "argparse", False),  # banned
        ("workbench.commands.e", "workbench.runtimes.d", False),  # down: fine
        ("workbench.runtimes.d", "workbench.search.b", True),  # down, typing only: fine
    ]
    edges = {(a, b): Edge(a, b, 1, typing) for a, b, typing in pairs}
    found = problems(modules, edges, order, {})
    assert any("catalog.a:1 imports workbench.search.b: points up" in p for p in found)
    assert any("runtimes.d:1 imports workbench.commands.e: points up" in p for p in found)
    assert any("commands/ imported below it" in p for p in found)
    assert any("imports argparse: argparse under runtimes/" in p for p in found)
    assert any(p.startswith("import circle of 2 modules") for p in found)
    assert any(
        "circle of 2 modules: workbench.commands.e -> workbench.runtimes.d" in p for p in found
    )
    assert len(found) == 5, found

    # A circle through type-only imports is none; one through a function's import is.
    back = Edge("workbench.search.c", "workbench.search.b", 1, typing_only=True)
    typing_back = {**edges, (back.source, back.target): back}
    assert not any(
        "search.b" in p and "circle" in p for p in problems(modules, typing_back, order, {})
    )

    known = {
        ("workbench.catalog.a", "workbench.search.b"): "up",
        ("workbench.search.c", "workbench.search.b"): "circle",
        ("workbench.runtimes.d", "workbench.commands.e"): "printing",
        ("workbench.runtimes.d", "argparse"): "args",
    }
    assert problems(modules, edges, order, known) == []
    gone = {**known, ("workbench.search.b", "workbench.catalog.a"): "stale"}
    assert problems(modules, edges, order, gone) == [
        "KNOWN workbench.search.b -> workbench.catalog.a (stale): no such import any more, "
        "remove it"
    ]
    fine = {**known, ("workbench.commands.e", "workbench.runtimes.d"): "fine"}
    assert problems(modules, edges, order, fine) == [
        "KNOWN workbench.commands.e -> workbench.runtimes.d (fine): breaks no rule now, remove it"
    ]
    # A module in no layer, a layer with no module.
    odd = problems([*modules, "workbench.extra"], edges, [*order, "tui"], known)
    assert odd == [
        "workbench.extra: in no layer of design.md (add it to the Layers block)",
        "design.md, Layers: tui is no module of workbench/",
    ]
