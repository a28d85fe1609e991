"""Run every benchmark module and print one table (and ``--json`` rows for tooling)."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path
from typing import Any

import benchmarks


def _modules(selected: list[str]) -> list[str]:
    names = sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")
    )
    if selected:
        names = [n for n in names if any(s in n for s in selected)]
    return names


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value < 0.01:
            return f"{value * 1000:.3f} ms" if value < 1 else f"{value:.3f}"
        return f"{value:.3f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("only", nargs="*", help="run only modules whose name contains this")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines")
    args = parser.parse_args(argv)
    failed = 0
    for name in _modules(args.only):
        started = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        try:
            rows: list[dict[str, Any]] = module.run()
        except Exception as err:  # a broken benchmark must not hide the others
            print(f"{name}: FAILED: {type(err).__name__}: {err}", file=sys.stderr)
            failed += 1
            continue
        elapsed = time.perf_counter() - started
        if args.json:
            for row in rows:
                print(json.dumps({"module": name, **row}))
            continue
        print(f"\n== {name} ({elapsed:.1f} s)")
        for row in rows:
            status = "" if "ok" not in row else ("  ok" if row["ok"] else "  MISSED TARGET")
            values = "  ".join(f"{k}={_fmt(v)}" for k, v in row.items() if k not in ("name", "ok"))
            print(f"  {row['name']:<48} {values}{status}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
