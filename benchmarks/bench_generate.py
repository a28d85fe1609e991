"""``cases generate`` for 500 tools against a local OpenAI-compatible server that answers at once.

What is measured is holo-tune's side: building prompts, parallel requests over real sockets with
bounded concurrency, validating answers, dropping duplicates. The reference is the same run with
one request at a time, in the same process. Target: under 10 s for 500 tools (no cache).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from workbench.catalog.models import Tool
from workbench.evaluate.chat import DEFAULT_CONCURRENCY, resolve_endpoint
from workbench.evaluate.generate import generate_cases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fake_chat_server import KEY, FakeChatServer

TOOLS = 500
RUNS = 3
TARGET_S = 10.0


class _Model:
    provider = "openai"
    name = "gpt-4o-mini"
    api_key = None
    endpoint = None


def synthetic_tools(count: int = TOOLS) -> list[Tool]:
    return [
        Tool(
            full_name=f"server{i % 20}-tool_{i}",
            plugin=f"server{i % 20}",
            name=f"tool_{i}",
            description=f"Does task number {i} on the records of area {i % 37}",
            parameters=("id", "limit"),
            kind="mcp",
        )
        for i in range(count)
    ]


def _time(tools: list[Tool], url: str, concurrency: int) -> tuple[float, int]:
    endpoint = resolve_endpoint(None, _Model(), {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url})
    started = time.perf_counter()
    report = generate_cases(tools, endpoint, concurrency=concurrency)
    return time.perf_counter() - started, len(report.cases)


def run() -> list[dict[str, Any]]:
    tools = synthetic_tools()
    with FakeChatServer() as server:
        parallel = [_time(tools, server.url, DEFAULT_CONCURRENCY) for _ in range(RUNS)]
        serial = [_time(tools, server.url, 1) for _ in range(RUNS)]
    median = statistics.median(t for t, _ in parallel)
    reference = statistics.median(t for t, _ in serial)
    cases = parallel[0][1]
    return [
        {
            "name": f"cases generate, {TOOLS} tools, {DEFAULT_CONCURRENCY} at a time",
            "median_s": median,
            "target": f"< {TARGET_S:g} s, 3 cases per tool",
            "cases": cases,
            "vs_one_at_a_time": f"{reference / median:.2f}x faster ({reference:.2f} s)",
            "ok": median < TARGET_S and cases == 3 * TOOLS,
        }
    ]
