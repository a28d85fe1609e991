"""``holo-tune cases from-log AGENT.yaml LOG... [-o FILE] [--window S] [--usage-out FILE]``:
labelled cases learned from serve's usage log (``serve --usage-log``).

The work is :mod:`workbench.evaluate.usagelog`: the logs are read (rotated files too, in any
order: the records are put in time order; a bad line is one error naming its file, line and
field), each tool called after a search that returned it labels that search's query, and the
queries become cases (``source: log``, ``count``: the searches the query got a call after)
written into the cases file through :mod:`workbench.evaluate.casestore`: the log's cases of an
earlier run are replaced, every other case stays as it is (a query already in the file is not
added again: a hand label is never overwritten). ``--usage-out`` writes the calls per tool, the
usage file of a warm runtime (``--usage``). What could not be attributed is one summary line.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from workbench.commands.common import load_command_agent, open_catalog
from workbench.commands.serve import serve_view
from workbench.config.writeback.files import NEW_FILE_MODE, atomic_write
from workbench.errors import InputError
from workbench.evaluate.casesource import default_cases_path
from workbench.evaluate.casestore import load_sources, query_key, set_many
from workbench.evaluate.usagelog import DEFAULT_WINDOW, Learned, learn, read_logs, usage_counts

#: ``source:`` of a case learned from a usage log.
LOG = "log"
#: Tools named in the summary before "...".
NAMED = 3


def run(args: argparse.Namespace) -> int:
    logs = [Path(name) for name in args.logs]
    if not logs:
        raise InputError("give the usage log files: cases from-log AGENT.yaml LOG...")
    for flag, name in (("--output", args.output), ("--usage-out", args.usage_out)):
        if name and not Path(name).parent.is_dir():
            raise InputError("no such folder (holo-tune makes none)", file=name, field=flag)
    events = read_logs(logs)  # the logs first: a bad line before any server starts
    agent = load_command_agent(args)
    catalog = open_catalog(args, agent, refuse=False, view=serve_view(agent))
    window = args.window if args.window is not None else DEFAULT_WINDOW
    learned = learn(events, catalog, window)
    output = Path(args.output) if args.output else default_cases_path(agent.path)
    existing = {key for key, source in load_sources(output).items() if source != LOG}
    new = [case for case in learned.cases if query_key(case.query) not in existing]
    kept = len(learned.cases) - len(new)
    if args.usage_out:
        counts = usage_counts(events, catalog)
        text = json.dumps(counts, indent=2, ensure_ascii=False) + "\n"
        usage_path = Path(args.usage_out)
        try:
            atomic_write(usage_path, text.encode("utf-8"), mode=_mode(usage_path))
        except OSError as err:
            why = f"cannot write: {err.strerror or err}"
            raise InputError(why, file=usage_path, field="--usage-out") from None
        print(f"{usage_path}: {_n(sum(counts.values()), 'call')} of {_n(len(counts), 'tool')}")
    files = f"{len(logs)} file{'s' if len(logs) != 1 else ''}"
    said = f"{_n(learned.searches, 'search')} and {_n(learned.calls, 'call')} read from {files}"
    if not new:
        print(f"holo-tune: {said}")
        print(f"holo-tune: {not_attributed(learned, kept)}")
        raise InputError("no new case learned from the log; nothing written", file=output)
    set_many(
        output,
        [(case.query, case.expected) for case in new],
        source=LOG,
        drop_source=LOG,
        agent_name=agent.path.name,
        fields=[{"count": case.count} for case in new],
    )
    repeated = sum(1 for case in new if case.count > 1)
    again = f"; {_n(repeated, 'query')} searched more than once: see its count" if repeated else ""
    print(f"{output}: {_n(len(new), 'case')} from the log ({said}{again})")
    print(f"holo-tune: {not_attributed(learned, kept)}")
    return 0


def not_attributed(learned: Learned, kept: int) -> str:
    """What the log gave no case for, in one line."""
    parts = [
        _tools(
            learned.unattributed_calls,
            "whose tool no earlier search returned (a pinned tool is called without a search)",
        ),
        f"{_n(learned.unfollowed, 'search')} whose tools no call followed",
        f"{_n(learned.refused, 'search')} that found no tool",
    ]
    if learned.failed:
        parts.append(f"{_n(learned.failed, 'search')} refused (query too long)")
    if learned.selects:
        parts.append(f"{_n(learned.selects, 'select: search')}")
    if learned.after_select:
        parts.append(_tools(learned.after_select, "of a tool a select: search named"))
    if learned.not_in_catalog:
        parts.append(_tools(learned.not_in_catalog, "of a tool not in the agent's catalog"))
    if kept:
        parts.append(f"{_n(kept, 'query')} already in the cases file, kept as written")
    return "not attributed: " + "; ".join(parts)


def _tools(counts: Counter[str], what: str) -> str:
    """``N calls WHAT (tool n, ...)``: the most frequent tools named."""
    total = sum(counts.values())
    if not total:
        return f"0 calls {what}"
    named = ", ".join(f"{name} {n}" for name, n in counts.most_common(NAMED))
    more = ", ..." if len(counts) > NAMED else ""
    return f"{_n(total, 'call')} {what}: {named}{more}"


def _n(count: int, word: str) -> str:
    """``1 case``, ``2 cases``, ``2 queries``, ``3 searches``."""
    if count == 1:
        return f"1 {word}"
    if word.endswith("y"):
        return f"{count} {word[:-1]}ies"
    return f"{count} {word}{'es' if word.endswith('h') else 's'}"


def _mode(path: Path) -> int:
    try:
        return path.resolve().stat().st_mode & 0o777
    except FileNotFoundError:
        return NEW_FILE_MODE
