"""The one apply every writer goes through (:func:`workbench.config.writeback.files.apply_bytes`):
the file's mode kept, a symbolic link written through, a backup, a changed file refused. Run on
each writer that has a plan: the block, ``.mcp.json``."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write
from workbench.config.writeback.files import NEW_FILE_MODE, apply_bytes, apply_plan
from workbench.config.writeback.mcp_json import apply_mcp_json, plan_mcp_json
from workbench.errors import WriteBackError

AGENT = """\
name: a
model:
  provider: openai
  name: gpt-4o
instructions:
  inline: Help.
tool_filtering:
  enabled: true
  top_k: 5
"""
MCP = {"mcpServers": {"memory": {"command": "npx", "args": ["-y", "server-memory"]}}}


def _linked(tmp_path: Path, name: str, text: str) -> tuple[Path, Path]:
    """``real/NAME`` with mode 0640, and ``NAME`` in tmp_path a symbolic link to it."""
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / name
    real.write_text(text)
    os.chmod(real, 0o640)
    link = tmp_path / name
    link.symlink_to(real)
    return real, link


def _check(real: Path, link: Path, old: str) -> None:
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    backup = link.with_name(link.name + ".bak")
    assert backup.read_text() == old and stat.S_IMODE(backup.stat().st_mode) == 0o640


def test_the_block_keeps_mode_and_link(tmp_path: Path) -> None:
    real, link = _linked(tmp_path, "agent.yaml", AGENT)
    plan = plan_write(link, ToolFiltering(enabled=True, top_k=7))
    assert apply_plan(plan) is not None
    assert "top_k: 7" in real.read_text()
    _check(real, link, AGENT)


def test_mcp_json_keeps_mode_and_link(tmp_path: Path) -> None:
    old = json.dumps(MCP, indent=2) + "\n"
    real, link = _linked(tmp_path, ".mcp.json", old)
    plan = plan_mcp_json(link, MCP, {"memory"})
    assert apply_mcp_json(plan) is not None
    assert json.loads(real.read_text())["mcpServers"]["memory"]["alwaysLoad"] is True
    _check(real, link, old)


def test_a_file_changed_since_it_was_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(MCP))
    plan = plan_mcp_json(path, MCP, {"memory"})
    path.write_text(json.dumps({"mcpServers": {}}))
    with pytest.raises(WriteBackError, match="changed on disk since it was read"):
        apply_mcp_json(plan)
    assert json.loads(path.read_text()) == {"mcpServers": {}}


def test_a_new_file_gets_the_umask_mode_and_no_backup(tmp_path: Path) -> None:
    path = tmp_path / "new.json"
    assert apply_bytes(path, None, b"{}\n") is None
    assert stat.S_IMODE(path.stat().st_mode) == NEW_FILE_MODE
    assert not path.with_name("new.json.bak").exists()
    with pytest.raises(WriteBackError, match="changed on disk"):
        apply_bytes(tmp_path / "new.json", None, b"[]\n")  # it exists now
