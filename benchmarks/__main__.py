"""Run every benchmark module, print one table, then the targets: held, missed or skipped.

The exit code is the verdict: 1 when a target is missed or a benchmark breaks, else 0, so ``make
bench`` fails where the numbers do. ``--json`` prints the rows as JSON lines on stdout and the
summary on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import benchmarks


@dataclass(frozen=True)
class Verdict:
    """One line of the summary: a row's target and whether it held (or why it was not measured)."""

    module: str
    name: str
    target: str
    status: str  # "held", "MISSED", "skipped" or "FAILED"
    detail: str = ""


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


def _seconds(value: float) -> str:
    return f"{value * 1000:.3g} ms" if value < 1 else f"{value:.3g} s"


def _verdicts(module: str, rows: list[dict[str, Any]]) -> list[Verdict]:
    """The rows with something to hold: a target (with ``ok``), or the reason they were skipped."""
    out: list[Verdict] = []
    for row in rows:
        measured = f"median {_seconds(row['median_s'])}" if "median_s" in row else ""
        if measured and "p90_s" in row:
            measured += f", p90 {_seconds(row['p90_s'])}"
        if measured and "load" in row:  # on shared cores the wall time is the load's too
            measured += f", load {row['load']}"
        if "skipped" in row:
            out.append(Verdict(module, row["name"], "", "skipped", str(row["skipped"])))
        elif "ok" in row:
            status = "held" if row["ok"] else "MISSED"
            out.append(Verdict(module, row["name"], str(row.get("target", "")), status, measured))
    return out


def _print_summary(verdicts: list[Verdict], stream: TextIO) -> bool:
    """Print the summary; True when every target held and no benchmark broke."""
    print("\n== targets", file=stream)
    for v in verdicts:
        detail = f"  ({v.detail})" if v.detail else ""
        print(f"  {v.status:<8} {v.name:<56} {v.target}{detail}", file=stream)
    targets = [v for v in verdicts if v.status in ("held", "MISSED")]
    missed = sum(v.status == "MISSED" for v in targets)
    broken = sum(v.status == "FAILED" for v in verdicts)
    count = len(targets)
    verdict = f"{missed} of {count} targets missed" if missed else f"all {count} targets held"
    if not count:
        verdict = "no targets in these benchmarks"
    if broken:
        verdict += f"; {broken} benchmark(s) failed"
    print(verdict, file=stream)
    return not missed and not broken


def _print_rows(name: str, rows: list[dict[str, Any]], elapsed: float, as_json: bool) -> None:
    if as_json:
        for row in rows:
            print(json.dumps({"module": name, **row}))
        return
    print(f"\n== {name} ({elapsed:.1f} s)")
    for row in rows:
        status = "" if "ok" not in row else ("  ok" if row["ok"] else "  MISSED TARGET")
        values = "  ".join(f"{k}={_fmt(v)}" for k, v in row.items() if k not in ("name", "ok"))
        print(f"  {row['name']:<48} {values}{status}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("only", nargs="*", help="run only modules whose name contains this")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines")
    args = parser.parse_args(argv)
    verdicts: list[Verdict] = []
    for name in _modules(args.only):
        started = time.perf_counter()
        module = importlib.import_module(f"benchmarks.{name}")
        try:
            rows: list[dict[str, Any]] = module.run()
        except Exception as err:  # a broken benchmark must not hide the others
            print(f"{name}: FAILED: {type(err).__name__}: {err}", file=sys.stderr)
            verdicts.append(Verdict(name, name, "", "FAILED", f"{type(err).__name__}: {err}"))
            continue
        _print_rows(name, rows, time.perf_counter() - started, args.json)
        verdicts.extend(_verdicts(name, rows))
    held = _print_summary(verdicts, sys.stderr if args.json else sys.stdout)
    return 0 if held else 1


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
