"""Whether a speed-up changed a figure: ``compare --runtimes --json`` at a git revision and in the
working tree, byte for byte, on the sample research agent and on the livemcpbench slice.

    python -m benchmarks.same_figures [REV] [--only research-agent|livemcpbench_slice]

``REV`` (default ``HEAD``) is checked out in a temporary worktree and run from there; both sides
read the working tree's agents, snapshots and cases, so only the code differs. Prints one line per
set (identical, or the first lines that differ) and exits 1 when any differs. Not one of ``make
bench``'s modules: it runs the comparison twice per set (minutes on the slice).
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: name -> the ``compare`` arguments before ``--runtimes --json`` (paths under the repository).
SETS: dict[str, list[str]] = {
    "research-agent": [
        "sample_configs/research-agent.yaml",
        "--catalog",
        "sample_configs/research-agent.catalog.json",
    ],
    "livemcpbench_slice": [
        "tests/data/livemcpbench_slice/agent.yaml",
        "--catalog",
        "tests/data/livemcpbench_slice/catalog.json",
        "--cases",
        "tests/data/livemcpbench_slice/cases.jsonl",
    ],
}


def compare_json(code: Path, args: list[str]) -> str:
    """``compare ARGS --runtimes --json`` run with the package at ``code``, from the repository
    root (the inputs are the working tree's). ``-P``: ``python -m`` would put the current
    directory, the working tree, before ``PYTHONPATH`` and so run its package on both sides."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    argv = [sys.executable, "-P", "-m", "workbench", "compare", *args, "--runtimes", "--json"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{code}: compare exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_figures", description=__doc__)
    parser.add_argument("rev", nargs="?", default="HEAD", help="the revision to compare with")
    parser.add_argument("--only", choices=sorted(SETS), help="one set only")
    args = parser.parse_args(argv)
    chosen = [args.only] if args.only else list(SETS)
    differ = 0
    with tempfile.TemporaryDirectory(prefix="same-figures-") as tmp:
        before = Path(tmp) / "rev"
        git = ["git", "-C", str(ROOT), "worktree"]
        subprocess.run([*git, "add", "--detach", "--quiet", str(before), args.rev], check=True)
        try:
            for name in chosen:
                old = compare_json(before, SETS[name])
                new = compare_json(ROOT, SETS[name])
                if old == new:
                    print(f"{name}: identical ({len(new):,} bytes of JSON)")
                    continue
                differ += 1
                lines = difflib.unified_diff(
                    old.splitlines(), new.splitlines(), args.rev, "working tree", lineterm=""
                )
                print(f"{name}: DIFFERS")
                print("\n".join(list(lines)[:40]))
        finally:
            subprocess.run([*git, "remove", "--force", str(before)], check=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
