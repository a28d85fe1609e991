"""Enumerating the sample agents' MCP servers: all at once vs one after another.

Each agent's servers are listed for real (processes started, initialize, every tools/list page,
shut down), concurrently as holo-tune does and serially as a reference, in the same process; the
median of a few runs of each, and their ratio (serial / concurrent: how many times faster the
concurrent listing is). The Python reference servers run from this environment's console
scripts instead of ``uvx`` so that the timing measures MCP, not a PyPI download; the npm servers
need ``make servers`` (rows are skipped without them).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from workbench.catalog.mcp_client import list_servers
from workbench.catalog.specs import McpServerSpec, specs_from_agent
from workbench.config import load_agent

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_configs"
NPM_BIN = REPO / ".cache" / "npm-servers" / "node_modules" / ".bin"
AGENTS = ("research-agent.yaml", "python-servers.yaml")
RUNS = 3


def _local(spec: McpServerSpec) -> McpServerSpec:
    """``uvx mcp-server-X`` -> this environment's ``mcp-server-X`` (no download in the timing)."""
    if spec.command != "uvx" or not spec.args:
        return spec
    script = Path(sys.executable).parent / spec.args[-1]
    return dataclasses.replace(spec, command=str(script), args=())


def agent_specs(name: str) -> list[McpServerSpec]:
    agent = load_agent(SAMPLES / name, missing_env="warn")
    return [_local(spec) for spec in specs_from_agent(agent).mcp()]


def _time(specs: list[McpServerSpec], concurrent: bool, log_dir: Path) -> float:
    async def main() -> None:
        results = await list_servers(specs, log_dir=log_dir, concurrent=concurrent)
        failed = [r.status for r in results if not r.status.ok]
        if failed:
            raise RuntimeError(f"{failed[0].name}: {failed[0].error}")

    started = time.perf_counter()
    anyio.run(main)
    return time.perf_counter() - started


def run() -> list[dict[str, Any]]:
    if NPM_BIN.is_dir():
        os.environ["PATH"] = f"{NPM_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    if not (NPM_BIN / "npx").exists():
        return [{"name": "enumerate sample agents", "skipped": "run make servers"}]
    rows: list[dict[str, Any]] = []
    log_dir = Path(tempfile.mkdtemp(prefix="holo-tune-bench-"))
    try:
        for agent in AGENTS:
            specs = agent_specs(agent)
            _time(specs, True, log_dir)  # warm the OS file cache: the first start is not typical
            together = statistics.median(_time(specs, True, log_dir) for _ in range(RUNS))
            serial = statistics.median(_time(specs, False, log_dir) for _ in range(RUNS))
            label = f"{agent.removesuffix('.yaml')} ({len(specs)} servers)"
            rows.append({"name": f"{label} one after another", "median_s": serial})
            rows.append(
                {
                    "name": f"{label} concurrent",
                    "median_s": together,
                    "ratio": serial / together,
                    "target": "ratio > 1",
                    "ok": serial / together > 1.0,
                }
            )
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    return rows
