"""``holo-tune tune AGENT.yaml [--cases FILE] [--max-tokens N | --min-reduction R | --min-hit H]
[--folds K] [--usage FILE] [--no-what-if] [--llm SPEC] [--json] [--apply [--force]]``: the
runtime's tuner (:meth:`workbench.runtimes.base.Runtime.tune`) proposes the best setting within a
token budget, with held-out figures; this module reads the flags into a
:class:`~workbench.runtimes.base.TuneRequest`, prints the outcome (its warnings on stderr, its
text or ``--json`` on stdout) and, with ``--apply``, writes what the outcome plans under the
verdict (diff on stderr with ``--json``, on stdout otherwise; atomic, with a backup).
"""

from __future__ import annotations

import argparse
import sys

from workbench.commands.apply import show_config_write
from workbench.commands.common import (
    apply_allowed,
    print_json,
    refuse_unwritable,
    runtime_of,
    search_queries,
    warn,
    with_runtime,
)
from workbench.commands.eval import check_folds, open_for_cases
from workbench.errors import InputError
from workbench.evaluate.budget import Budget
from workbench.runtimes import searching_runtimes
from workbench.runtimes.base import TuneOutcome, TuneRequest
from workbench.search.usage import load_usage


def run(args: argparse.Namespace) -> int:
    Budget(max_tokens=args.max_tokens, min_reduction=args.min_reduction)  # checks the flags
    if args.folds < 2:
        raise InputError("k-fold needs at least 2 folds", field="--folds")
    Budget(min_hit=getattr(args, "min_hit", None))  # checks the flag
    ws, cases = open_for_cases(args)
    check_folds(cases, args.folds, given=getattr(args, "folds_given", False))
    runtime = runtime_of(args, ws.agent)
    plugin = runtime.plugin
    if getattr(args, "usage", None):
        load_usage(args.usage, ws.catalog)  # a bad file is an error whether or not it is used
        if getattr(args, "no_what_if", False) and plugin.reads_tool_filtering:
            warn(
                "--usage feeds the warm-runtime what-if, which --no-what-if leaves out: "
                "it has no effect here"
            )
    if getattr(args, "llm", None) is not None and not plugin.searches:
        raise InputError(
            "is the search call a model writes on the deferred-loading runtimes "
            f"({', '.join(searching_runtimes())}); {runtime.name} searches no model-written query",
            field="--llm",
        )
    if getattr(args, "min_hit", None) is not None and "--min-hit" not in plugin.budget_flags:
        raise InputError(
            f"is a budget of the allowlist and deferred-loading runtimes; {runtime.name} is tuned "
            "against --max-tokens or --min-reduction",
            field="--min-hit",
        )
    queries = (
        search_queries(args, ws.agent, cases) if getattr(args, "llm", None) is not None else None
    )
    request = TuneRequest(
        ws,
        cases,
        runtime,
        max_tokens=args.max_tokens,
        min_reduction=args.min_reduction,
        min_hit=getattr(args, "min_hit", None),
        folds=args.folds,
        usage=getattr(args, "usage", None),
        what_if=not getattr(args, "no_what_if", False),
        queries=queries,
        apply=bool(getattr(args, "apply", False)),
        force=bool(getattr(args, "force", False)),
        quiet=bool(args.json),
        options={o.dest: getattr(args, o.dest, None) for o in plugin.options},
    )
    outcome = plugin.tune(request)
    show(outcome, request, as_json=bool(args.json))
    return 0


def show(outcome: TuneOutcome, request: TuneRequest, *, as_json: bool) -> None:
    """A tuner's outcome as ``tune`` prints it: the warnings, the report (text or JSON), then
    with ``--apply`` the writes it plans, when the runtime reads them and the verdict allows."""
    for note in outcome.notes:
        warn(note)
    if as_json:
        print_json(with_runtime(outcome.json, request.info), stream=sys.stdout)
    else:
        sys.stdout.write(outcome.text)
    if not request.apply or outcome.writes is None:
        return
    if outcome.change is not None:
        refuse_unwritable(request.info, outcome.change, force=request.force)
    if not apply_allowed(outcome.verdict, force=request.force):
        return
    plans = outcome.writes(request.force)
    for plan in plans:
        show_config_write(plan, to_stdout=not as_json)
    if not plans and outcome.paste is not None:
        print(f"holo-tune: {outcome.paste.note}", file=sys.stderr)
        if not as_json:
            sys.stdout.write(outcome.paste.text)
