"""The ``npx`` stand-in of ``make servers``: installed servers start with no registry fetch."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from workbench.catalog.mcp_client import list_servers
from workbench.catalog.specs import McpServerSpec

pytestmark = pytest.mark.npm


def test_npx_y_starts_the_installed_server_with_an_empty_offline_npm_cache(tmp_path: Path) -> None:
    """npm's own npx would fail here (ENOTCACHED): offline, with a cache it has never filled."""
    env = {"npm_config_offline": "true", "npm_config_cache": str(tmp_path / "npm-cache")}
    spec = McpServerSpec(
        name="memory",
        command="npx",
        args=("-y", "@modelcontextprotocol/server-memory"),
        env=env,
        request_timeout=60,
    )

    async def main() -> list[str]:
        (result,) = await list_servers([spec], log_dir=tmp_path)
        assert result.status.state == "ok", result.status.error
        return [t["name"] for t in result.tools]

    assert "create_entities" in anyio.run(main)


def test_anything_else_goes_to_the_real_npx() -> None:
    npx = shutil.which("npx")
    assert npx is not None and Path(npx).resolve().name == "npx.js"
    result = subprocess.run(
        ["npx", "--version"], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(".")[0].isdigit()
