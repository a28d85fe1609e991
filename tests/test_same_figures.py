"""``python -m benchmarks.same_figures``: each side runs the package it is given."""

from __future__ import annotations

from pathlib import Path

from benchmarks.same_figures import compare_json


def test_each_side_runs_its_own_code(tmp_path: Path) -> None:
    """A stand-in package at the revision's path answers, not the working tree's workbench (run
    from the repository root, ``python -m`` would find that first)."""
    package = tmp_path / "workbench"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("import sys\nprint('the revision', sys.argv[1:])\n")
    out = compare_json(tmp_path, ["agent.yaml"])
    assert out == "the revision ['compare', 'agent.yaml', '--runtimes', '--json']\n"
