"""Benchmarks: ``python -m benchmarks`` (``make bench``) runs every ``bench_*`` module.

Each module exposes ``run() -> list[dict]``; a row has a ``name``, its measured values (medians in
seconds, ``ratio`` against a reference run in the same process), and either a ``target`` (what must
hold, in words: ``"< 2 ms"``) with ``ok``, or ``skipped`` with the reason. The run ends with every
target held or missed and exits 1 when one is missed (``__main__``).
"""
