"""``holo-tune apply AGENT.yaml [setting flags] [--dry-run] [--no-backup]``: write the block back.

stdout carries the unified diff and nothing else (``--dry-run | patch AGENT.yaml`` works); every
warning and status line goes to stderr. The diff is shown first, then the file is written
atomically after a backup (``AGENT.yaml.bak``). A runtime that does not read the block (HoloDeck
0.7, which refuses a file that has it; the deferred-loading APIs) refuses the write unless
``--force``; a warning that HoloDeck 0.6 would ignore the block (an anthropic model) is printed
before the diff and the write happens, as asked. Refusals (an out-of-range value, a file changed
since it was read, a file that does not load, the runtime) exit 2 with one line and leave the file
untouched.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.commands.common import refuse_unwritable, runtime_of, use_color, warn
from workbench.commands.export import load_setting
from workbench.config.filtering import ToolFiltering
from workbench.config.writeback.block import plan_write
from workbench.config.writeback.files import FilePlan, apply_plan
from workbench.search.delivery import write_warning

if TYPE_CHECKING:
    from workbench.runtimes.base import ConfigWrite

_RED, _GREEN, _CYAN, _RESET = "\x1b[31m", "\x1b[32m", "\x1b[36m", "\x1b[0m"


def run(args: argparse.Namespace) -> int:
    agent, setting = load_setting(args)
    refuse_unwritable(runtime_of(args, agent), "tool_filtering", force=args.force)
    plan = plan_write(agent.path, setting, original=agent.raw, current=agent.filtering)
    if plan.changed and getattr(args, "cases", None):
        refuse_worse(args, setting)
    for message in plan.warnings:
        warn(message)
    ran = write_warning(agent.agent, setting)
    if ran:
        warn(ran)
    if not plan.changed:
        _status(f"{plan.path}: no change (the tool_filtering block already says that)")
        return 0
    sys.stdout.write(colored_diff(plan.diff) if use_color(sys.stdout) else plan.diff)
    sys.stdout.flush()
    if args.dry_run:
        _status(f"{plan.path}: dry run, nothing written")
        return 0
    saved = apply_plan(plan, backup=not args.no_backup)
    _status(_written(plan, saved))
    return 0


def refuse_worse(args: argparse.Namespace, setting: ToolFiltering) -> None:
    """With ``--cases``: the new setting and the file's measured on them, and a setting measured
    worse than the file's refused (exit 2, nothing written) unless ``--force``
    (:mod:`workbench.evaluate.verdict`, the rule the tuners' ``--apply`` follows)."""
    from workbench.commands.common import apply_allowed
    from workbench.commands.eval import open_agent, read_cases
    from workbench.evaluate.runs import setting_verdict

    ws = open_agent(args)
    _, cases = read_cases(ws, getattr(args, "cases", None), required=False)
    if cases is None or not len(cases):
        return
    current = ws.agent.filtering or ToolFiltering()
    verdict = setting_verdict(ws.engine, ws.catalog, ws.tokens, cases, setting, current)
    if verdict.worse:
        apply_allowed(verdict, force=args.force, what="the setting")


def _written(plan: FilePlan, saved: object) -> str:
    where = f"previous file kept in {saved}" if saved else "no backup kept"
    return f"{plan.path}: tool_filtering written ({where})"


def _status(message: str) -> None:
    print(message, file=sys.stderr)


def show_and_write(
    path: Path | str,
    diff: str,
    write: Callable[[], Path | None],
    *,
    to_stdout: bool,
    written: str,
    no_backup: str = "no backup kept",
) -> None:
    """The diff (coloured on a terminal) on stdout or stderr, then ``write()`` (which returns the
    backup it kept, if any) and one status line on stderr: ``PATH: WRITTEN (previous file kept
    in BACKUP)``. Every tuner's ``--apply`` writes this way."""
    stream = sys.stdout if to_stdout else sys.stderr
    stream.write(colored_diff(diff) if use_color(stream) else diff)
    stream.flush()
    saved = write()
    kept = f"previous file kept in {saved}" if saved else no_backup
    _status(f"{path}: {written} ({kept})")


def write_plan(plan: FilePlan | FilePlan, *, unchanged: str, written: str, to_stdout: bool) -> None:
    """A tuner's ``--apply`` of a plan for the agent YAML, as :func:`show_config_write` writes
    every plan (a backup kept)."""
    from workbench.runtimes.base import ConfigWrite

    config = ConfigWrite(
        plan.path,
        plan.diff,
        plan.changed,
        lambda: apply_plan(plan, backup=True),
        what=str(plan.path),
        written=written,
        unchanged=unchanged,
        warnings=tuple(plan.warnings),
        no_backup="no backup kept",
    )
    show_config_write(config, to_stdout=to_stdout)


def show_config_write(plan: ConfigWrite, *, to_stdout: bool) -> None:
    """A runtime's ``--apply`` of its configuration file: its warnings, then ``PATH: no change
    (UNCHANGED)`` on stderr, or :func:`show_and_write`."""
    for message in plan.warnings:
        warn(message)
    if not plan.changed:
        _status(f"{plan.path}: no change ({plan.unchanged})")
        return
    show_and_write(
        plan.path,
        plan.diff,
        plan.write,
        to_stdout=to_stdout,
        written=plan.written,
        no_backup=plan.no_backup,
    )


def colored_diff(diff: str) -> str:
    """The diff with removed lines red, added lines green and hunk headers cyan."""
    out: list[str] = []
    for line in diff.splitlines(keepends=True):
        body, end = line.rstrip("\r\n"), line[len(line.rstrip("\r\n")) :]
        if line.startswith(("---", "+++")):
            out.append(line)
        elif line.startswith("-"):
            out.append(f"{_RED}{body}{_RESET}{end}")
        elif line.startswith("+"):
            out.append(f"{_GREEN}{body}{_RESET}{end}")
        elif line.startswith("@@"):
            out.append(f"{_CYAN}{body}{_RESET}{end}")
        else:
            out.append(line)
    return "".join(out)
