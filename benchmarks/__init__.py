"""Benchmarks: ``python -m benchmarks`` (``make bench``) runs every ``bench_*`` module.

Each module exposes ``run() -> list[dict]``; a row has a ``name``, its measured values (medians in
seconds, ``ratio`` against a reference run in the same process), an optional ``target`` and ``ok``.
"""
