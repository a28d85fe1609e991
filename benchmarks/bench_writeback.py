"""``apply --dry-run`` on large agent files: the time per MB must not grow with the size.

Agent files of 1, 5 and 20 MB (the research agent with many test cases) are made in a temporary
directory; for each, the median of a few runs of what ``holo-tune apply --dry-run`` does: load the
agent (``load_agent``) and plan the write-back (``plan_write``: skeleton, splice, verify, diff).
The reference is the 1 MB file in the same process: ``ratio`` is a size's seconds per MB over the
1 MB file's, which stays near 1 when the work is linear (issue 13 measured 417 s for 20 MB, 4 s
for 1 MB before: a ratio of 5). A last row runs the 20 MB file the general way (PyYAML's node
tree for the load and the plan, as files with aliases still go) in the same process: ``speedup``
is what the one-pass readers (``yamlfast``, ``writeback_skeleton``) bring.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from workbench.config import load_agent
from workbench.config.writeback.block import plan_write
from workbench.config.yamlfast import NotPlain

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "sample_configs" / "research-agent.yaml"
SIZES_MB = (1, 5, 20)
RUNS = 3
#: Seconds per MB may grow this much from 1 MB to 20 MB (timer noise, cache effects).
RATIO_TARGET = 1.5
#: The whole dry run of the 20 MB file (load and plan): "a few seconds" (issue 13). Measured 4.3 s
#: on a shared 2-core machine (the load: 2.8 s, the plan: 1.5 s); 9.6 s by the node tree, 417 s
#: before issue 13.
TARGET_20MB_S = 6.0
#: The one-pass readers against the node tree on the 20 MB file, in the same process (2.2x
#: measured).
SPEEDUP_TARGET = 1.8


def agent_text(megabytes: float) -> str:
    """The research agent followed by test cases until the file has ``megabytes`` MB."""
    base = SAMPLE.read_text(encoding="utf-8")
    parts = [base, "test_cases:\n"]
    size, i = len(base), 0
    while size < megabytes * 1_000_000:
        case = (
            f"  - name: case {i}\n"
            f"    input: Find recent papers about topic number {i} and remember the authors\n"
            "    expected_tools: [search_papers, memory]\n"
        )
        parts.append(case)
        size += len(case)
        i += 1
    return "".join(parts)


def _once(path: Path) -> tuple[float, float]:
    started = time.perf_counter()
    agent = load_agent(path, missing_env="warn", environ={}, dotenv_files=[], global_configs=[])
    loaded = time.perf_counter()
    assert agent.filtering is not None
    plan = plan_write(path, agent.filtering.with_(top_k=7), original=agent.raw)
    assert plan.changed and "top_k: 7" in plan.diff
    return loaded - started, time.perf_counter() - loaded


def run() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    per_mb_ref: float | None = None
    with tempfile.TemporaryDirectory(prefix="holo-tune-bench-") as tmp:
        for megabytes in SIZES_MB:
            path = Path(tmp) / f"agent-{megabytes}mb.yaml"
            path.write_text(agent_text(megabytes), encoding="utf-8")
            size_mb = path.stat().st_size / 1_000_000
            times = [_once(path) for _ in range(RUNS)]
            load_s = statistics.median(t[0] for t in times)
            plan_s = statistics.median(t[1] for t in times)
            total_s = statistics.median(t[0] + t[1] for t in times)
            per_mb = total_s / size_mb
            per_mb_ref = per_mb if per_mb_ref is None else per_mb_ref
            ratio = per_mb / per_mb_ref
            row: dict[str, Any] = {
                "name": f"apply --dry-run, {megabytes} MB agent",
                "median_s": total_s,
                "load_s": load_s,
                "plan_s": plan_s,
                "s_per_mb": per_mb,
                "ratio": ratio,
                "target": f"ratio < {RATIO_TARGET:g}",
                "ok": ratio < RATIO_TARGET,
            }
            if megabytes == 20:
                row["target"] += f", < {TARGET_20MB_S:g} s"
                row["ok"] = row["ok"] and total_s < TARGET_20MB_S
            rows.append(row)
        rows.append(_general_way(Path(tmp) / "agent-20mb.yaml", rows[-1]["median_s"]))
    return rows


def _general_way(path: Path, fast_s: float) -> dict[str, Any]:
    """The 20 MB dry run with the one-pass readers turned off (the reference)."""
    with (
        mock.patch("workbench.config.yamltree.read_plain", side_effect=NotPlain),
        mock.patch("workbench.config.writeback.block.read_skeleton", return_value=None),
    ):
        times = [_once(path) for _ in range(RUNS)]
    total_s = statistics.median(t[0] + t[1] for t in times)
    return {
        "name": "apply --dry-run, 20 MB agent, by the node tree (reference)",
        "median_s": total_s,
        "load_s": statistics.median(t[0] for t in times),
        "plan_s": statistics.median(t[1] for t in times),
        "speedup": total_s / fast_s,
        "target": f"speedup >= {SPEEDUP_TARGET:g}x",
        "ok": total_s / fast_s >= SPEEDUP_TARGET,
    }
