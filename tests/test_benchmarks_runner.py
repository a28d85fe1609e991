"""``python -m benchmarks`` (``make bench``): a missed target fails the run, and a summary says so.

The runner is fed stand-in benchmark modules (the real ones take minutes and are not part of
``make test``); what is checked is the runner's own verdict and its last lines.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks import __main__ as runner


def _install(monkeypatch: pytest.MonkeyPatch, modules: dict[str, list[dict[str, Any]]]) -> None:
    """Make ``benchmarks.bench_<name>`` importable, each ``run()`` returning its rows."""
    for name, rows in modules.items():
        module = types.ModuleType(f"benchmarks.{name}")
        module.run = lambda rows=rows: rows  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"benchmarks.{name}", module)
    monkeypatch.setattr(runner, "_modules", lambda selected: sorted(modules))


@pytest.fixture
def held() -> Iterator[list[dict[str, Any]]]:
    yield [{"name": "fast thing", "median_s": 0.001, "target": "< 2 ms", "ok": True}]


def test_a_missed_target_exits_1_and_the_summary_names_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    held: list[dict[str, Any]],
) -> None:
    missed = [{"name": "slow thing", "median_s": 3.0, "target": "< 1 s", "ok": False}]
    _install(monkeypatch, {"bench_a": held, "bench_b": missed})

    assert runner.main([]) == 1

    out = capsys.readouterr().out
    summary = out[out.index("== targets") :]
    assert "fast thing" in summary and "< 2 ms" in summary and "held" in summary
    assert "slow thing" in summary and "< 1 s" in summary and "MISSED" in summary
    assert "1 of 2 targets missed" in summary


def test_every_target_held_exits_0(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    held: list[dict[str, Any]],
) -> None:
    untargeted = [{"name": "just measured", "median_s": 0.5}]
    skipped = [{"name": "servers", "skipped": "run make servers"}]
    _install(monkeypatch, {"bench_a": held, "bench_b": untargeted, "bench_c": skipped})

    assert runner.main([]) == 0

    summary = capsys.readouterr().out.split("== targets")[1]
    assert "all 1 targets held" in summary
    assert "just measured" not in summary  # no target, nothing to hold
    assert "servers" in summary and "skipped" in summary


def test_json_rows_keep_the_verdict_in_the_exit_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _install(monkeypatch, {"bench_b": [{"name": "slow", "target": "< 1 s", "ok": False}]})

    assert runner.main(["--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith('{"module": "bench_b"')
    assert "== targets" not in captured.out  # stdout stays JSON lines
    assert "MISSED" in captured.err


def test_a_broken_benchmark_is_in_the_summary(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    held: list[dict[str, Any]],
) -> None:
    module = types.ModuleType("benchmarks.bench_broken")

    def broken() -> list[dict[str, Any]]:
        raise RuntimeError("no data")

    module.run = broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "benchmarks.bench_broken", module)
    _install(monkeypatch, {"bench_a": held})
    monkeypatch.setattr(runner, "_modules", lambda selected: ["bench_a", "bench_broken"])

    assert runner.main([]) == 1
    summary = capsys.readouterr().out.split("== targets")[1]
    assert "bench_broken" in summary and "FAILED" in summary


def test_benchmarks_without_targets_say_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _install(monkeypatch, {"bench_a": [{"name": "just measured", "median_s": 0.5}]})

    assert runner.main([]) == 0
    assert "no targets in these benchmarks" in capsys.readouterr().out
