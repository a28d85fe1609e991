"""The core never imports textual (docs/design.md, Layers): proved in a fresh interpreter."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import workbench

#: The dashboard entry (it imports the TUI on purpose) and ``python -m workbench`` (runs the CLI).
_NOT_CORE = {"workbench.commands.dashboard", "workbench.__main__"}


def _core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(workbench.__path__, prefix="workbench."):
        if info.name.startswith("workbench.tui") or info.name in _NOT_CORE:
            continue
        names.append(info.name)
    return names


def test_core_does_not_import_textual() -> None:
    modules = _core_modules()
    assert "workbench.cli" in modules and "workbench.search.types" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"textual imported by the core: {result.stdout}"


def test_the_check_can_fail() -> None:
    """The same probe sees textual when a TUI module is imported (so the test above can fail)."""
    code = "import sys, textual\nprint('textual' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "True"
