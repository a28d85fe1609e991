"""Whether a speed-up of serve's search changed an answer: ``search_tools``' text for every
distinct bfcl case query, at a git revision and in the working tree, byte for byte.

    python -m benchmarks.same_answers [REV] [--limit N] [--embedder SPEC]

Each side runs in a process of its own with its own code (``REV``, default ``HEAD``, exported
with ``git archive`` into a temporary folder; no worktree is added) on the working tree's bfcl
snapshot: :class:`~workbench.serve.index.ServeIndex` at the default settings with MiniLM (the
local extra), its model loaded and its threads set as serve sets them
(:func:`~workbench.serve.app.one_thread_per_query`), then one search per query, each embedded
alone as serve embeds it. The tool vectors come from the one disk cache (``XDG_CACHE_HOME``), as
a restart reads them. Prints whether the answers are identical (or the first that differ) and
exits 1 when any differs. Not one of ``make bench``'s modules: it embeds every query twice
(minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BFCL = ROOT / "tests" / "data" / "datasets" / "bfcl"

#: What each side runs (``sys.argv[1]``: the embedder; the queries on stdin, one JSON string a
#: line; out: the folder of the package it imported, then one JSON string a line: the answers,
#: in order).
SIDE = """
import json, sys
from pathlib import Path
import workbench
print(Path(workbench.__file__).resolve().parents[1])
from workbench.catalog.enumerate import load_catalog
from workbench.catalog.models import AS_LISTED
from workbench.config import load_agent
from workbench.search.embedders.local import load_model
from workbench.search.holo.settings import HoloSettings
from workbench.serve.app import one_thread_per_query
from workbench.serve.index import ServeIndex

bfcl = Path(sys.argv[2])
agent = load_agent(bfcl / "agent.yaml")
catalog = load_catalog(agent, catalog_file=bfcl / "catalog.json", view=AS_LISTED)
index = ServeIndex(agent, catalog, HoloSettings(), embedder_spec=sys.argv[1])
if index.engine.embedder is not None:
    load_model(index.engine.embedder)
one_thread_per_query()
for line in sys.stdin:
    print(json.dumps(index.search(json.loads(line)).text()))
"""


def queries(limit: int | None) -> list[str]:
    lines = (BFCL / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    texts = list(dict.fromkeys(json.loads(line)["query"] for line in lines))
    return texts[:limit] if limit else texts


def answers(code: Path, embedder: str, asked: list[str]) -> list[str]:
    """Each query's answer, searched by the package at ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    stdin = "".join(json.dumps(q) + "\n" for q in asked)
    argv = [sys.executable, "-c", SIDE, embedder, str(BFCL)]
    done = subprocess.run(
        argv, cwd=code, env=env, input=stdin, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"{code}: the search exited {done.returncode}: {done.stderr.strip()}")
    imported, *lines = done.stdout.splitlines()
    if Path(imported) != code.resolve():  # ``-c`` puts the working folder first on the path
        raise SystemExit(f"{code}: the search imported the package at {imported}")
    return [json.loads(line) for line in lines]


def export(rev: str, into: Path) -> None:
    """The package at ``rev`` (its ``workbench`` folder) under ``into``."""
    archive = into / "rev.tar"
    git = ["git", "-C", str(ROOT), "archive", "--format=tar", f"--output={archive}", rev]
    subprocess.run([*git, "workbench"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_answers", description=__doc__)
    parser.add_argument("rev", nargs="?", default="HEAD", help="the revision to compare with")
    parser.add_argument("--limit", type=int, help="the first N distinct queries only")
    parser.add_argument("--embedder", default="local:all-MiniLM-L6-v2", help="--embedder's spec")
    args = parser.parse_args(argv)
    asked = queries(args.limit)
    with tempfile.TemporaryDirectory(prefix="same-answers-") as tmp:
        export(args.rev, Path(tmp))
        old = answers(Path(tmp), args.embedder, asked)
    new = answers(ROOT, args.embedder, asked)
    differ = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    if not differ:
        print(f"identical: {len(new):,} answers of bfcl's queries ({args.embedder}, {args.rev})")
        return 0
    print(f"DIFFERS: {len(differ):,} of {len(new):,} answers ({args.embedder}, {args.rev})")
    for i in differ[:5]:
        print(f"  {asked[i]!r}\n    {args.rev}: {old[i][:200]}\n    now: {new[i][:200]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
