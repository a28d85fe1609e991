"""The engine's fit, held out, on the shared data sets: docs/holo-engine.md's table.

    python -m benchmarks.holo_fit_table DATASETS_DIR [SET ...] [--embedder SPEC|none]
        [--top-k 5 | --max-tokens N] [--folds 5] [--sample 2000] [--drop-servers K] [--json]

For each set (a folder with ``agent.yaml``, ``catalog.json`` and ``cases.jsonl``): the catalog as
listed, one engine per field variant (:data:`VARIANTS`), and
:func:`workbench.evaluate.holo_fit.fit_holo` on the set's cases (a seeded sample of ``--sample``
cases when the set has more), timed (the first run embeds the tools; the vectors are cached on
disk; the queries are embedded before the fit is timed). Prints one table row a set: held-out
recall and hit with their 95 % intervals, tokens per search, the gap, the signals kept and the
final weights. ``--drop-servers K`` leaves K servers out (seeded): the cases that expected only
their tools become queries no tool answers, and the threshold is fitted and measured on them.
Not one of ``make bench``'s modules: it needs the shared data sets and takes
minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from workbench.catalog.models import AS_LISTED, Catalog
from workbench.evaluate.cases import load_cases, resolve_cases
from workbench.evaluate.holo_fit import HoloFit, Target, fit_holo
from workbench.evaluate.serve_tune import FIELD_VARIANTS
from workbench.search.holo.engine import HoloEngine
from workbench.search.holo.settings import HoloSettings
from workbench.search.serving import answer_tokens
from workbench.search.types import FloatArray
from workbench.workspace import open_workspace

#: The field variants fitted: the tuner's (the default, and the name weighted 3 without the
#: parameters).
VARIANTS = FIELD_VARIANTS
SAMPLE_SEED = 20261128


def without_servers(catalog: Catalog, tokens: FloatArray, drop: int) -> tuple[Catalog, FloatArray]:
    """The catalog less ``drop`` servers (seeded), and their tools' tokens left out: the cases
    whose every expected tool was on them become queries no tool answers."""
    servers = sorted({t.server for t in catalog.tools})
    if drop >= len(servers):
        raise SystemExit(f"--drop-servers {drop}: the catalog has {len(servers)} server(s)")
    rng = np.random.default_rng(SAMPLE_SEED)
    gone = {servers[int(i)] for i in rng.choice(len(servers), drop, replace=False)}
    keep = [i for i, t in enumerate(catalog.tools) if t.server not in gone]
    return Catalog(tools=[catalog.tools[i] for i in keep], servers=[]), tokens[keep]


def measure(
    folder: Path,
    embedder: str | None,
    target: Target,
    folds: int,
    sample: int,
    drop_servers: int = 0,
) -> dict[str, Any]:
    ws = open_workspace(
        folder / "agent.yaml",
        catalog_file=folder / "catalog.json",
        embedder_spec=embedder or "none",
        view=AS_LISTED,
    )
    catalog = ws.catalog
    # each tool's tokens in serve's answer, as tune --runtime serve counts them (the cost signal
    # and a budget read them)
    tokens = answer_tokens(catalog, ws.tokens)
    raw = load_cases(folder / "cases.jsonl")
    no_answer: list[str] = []
    if drop_servers:
        catalog, tokens = without_servers(catalog, tokens, drop_servers)
        left = {t.full_name for t in catalog.tools}
        no_answer = [c.query for c in raw if not any(name in left for name in c.expected)]
        raw = [c for c in raw if any(name in left for name in c.expected)]
    cases = resolve_cases(raw, catalog).cases
    if len(cases) > sample:
        keep = np.sort(np.random.default_rng(SAMPLE_SEED).choice(len(cases), sample, False))
        cases = [cases[int(i)] for i in keep]
    holder = ws.embedder
    model = holder.embedder if holder is not None and embedder else None
    cache = holder.cache if holder is not None and embedder else None
    started = time.perf_counter()
    engines = [
        HoloEngine(catalog, tokens, model, fields=f, embedding_cache=cache) for f in VARIANTS
    ]
    for engine in engines:
        engine.prepare()
    # the queries' vectors too (held in the embedder's memory, up to 1,024 queries): the fit's
    # own time is what is left
    engines[0].query_vectors([c.query for c in cases] + no_answer)
    prepared = time.perf_counter() - started
    started = time.perf_counter()
    fit = fit_holo(
        engines,
        cases,
        target=target,
        folds=folds,
        base=HoloSettings(embedder=embedder),
        no_answer=no_answer,
    )
    return row(folder.name, len(catalog.tools), fit, prepared, time.perf_counter() - started)


def row(name: str, tools: int, fit: HoloFit, prepared: float, seconds: float) -> dict[str, Any]:
    weights = {k: v for k, v in fit.settings.weights.items() if v}
    return {
        "set": name,
        "tools": tools,
        "cases": fit.heldout.cases,
        "recall": fit.heldout.recall,
        "recall_ci95": list(fit.heldout.ci95["recall"]),
        "hit": fit.heldout.hit,
        "hit_ci95": list(fit.heldout.ci95["hit"]),
        "tokens": fit.heldout.tokens,
        "gap_recall": fit.gap["recall"],
        "recall_all_signals": (
            fit.heldout_all_signals.recall if fit.heldout_all_signals is not None else None
        ),
        "kept": list(fit.kept),
        "weights": weights,
        "fields": dict(fit.settings.fields),
        "name_first": fit.settings.name_first,
        "prepare_s": round(prepared, 1),
        "fit_s": round(seconds, 1),
        "evaluations": fit.evaluations,
        "signals": [s.to_json() for s in fit.signals],
        "no_answer": None if fit.no_answer is None else fit.no_answer.to_json(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.holo_fit_table")
    parser.add_argument("datasets", type=Path)
    parser.add_argument("sets", nargs="*")
    parser.add_argument("--embedder", default="local:all-MiniLM-L6-v2")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--max-tokens", type=int)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument(
        "--drop-servers",
        type=int,
        default=0,
        help="leave this many servers out (seeded): their cases become queries no tool answers",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedder = None if args.embedder == "none" else args.embedder
    target = (
        Target(top_k=None, max_tokens=args.max_tokens)
        if args.max_tokens
        else Target(top_k=args.top_k)
    )
    sets = args.sets or sorted(p.name for p in args.datasets.iterdir() if p.is_dir())
    print(
        "| set | tools | cases | recall (95 %) | hit (95 %) | tokens | gap | all signals "
        "| kept | embed s | fit s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in sets:
        out = measure(
            args.datasets / name, embedder, target, args.folds, args.sample, args.drop_servers
        )
        if args.json:
            print(json.dumps(out), file=sys.stderr)
        lo, hi = out["recall_ci95"]
        hlo, hhi = out["hit_ci95"]
        print(
            f"| {name} | {out['tools']} | {out['cases']} | {out['recall']:.3f} ({lo:.2f}-{hi:.2f})"
            f" | {out['hit']:.3f} ({hlo:.2f}-{hhi:.2f}) | {out['tokens']:,.0f} "
            f"| {out['gap_recall']:+.3f} | {out['recall_all_signals']:.3f} "
            f"| {', '.join(out['kept'])} | {out['prepare_s']} | {out['fit_s']} |",
            flush=True,
        )
        if out["no_answer"] is not None:
            none = out["no_answer"]
            print(
                f"  no answer: {none['refused']} of {none['cases']} refused held out, "
                f"{none['answerable_refused']} of {none['answerable']} answerable cases wrongly "
                f"refused; threshold {none['threshold']}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
