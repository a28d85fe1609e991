"""HoloDeck 0.7's allowlists from the dashboard: what the write-back dialog offers instead of a
``tool_filtering`` block that 0.7 refuses to load.

The proposal is the core's allowlist tuner (:func:`workbench.evaluate.allowlist.tune_allowlist`,
as ``holo-tune tune`` runs it for HoloDeck 0.7) on the labelled cases, with the budget the
knobs' setting spends: the mean tokens per request it sends for those cases. So the knobs still
say how much to spend, and the allowlists spend it on the tools the cases need. It is computed
in a thread (it runs the cases) and shown in the write-back dialog (diff, warnings, backup).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual.screen import Screen

from workbench.config.filtering import ToolFiltering
from workbench.errors import HoloTuneError
from workbench.evaluate import evaluate, resolve_cases
from workbench.evaluate.allowlist import (
    AllowlistReport,
    allowlists,
    traps,
    tune_allowlist,
)
from workbench.evaluate.budget import Budget
from workbench.evaluate.casesource import find_cases_source
from workbench.tui.dashboard.runtime import tune_command
from workbench.tui.dashboard.state import LabState
from workbench.tui.lab import Lab
from workbench.tui.options import Options
from workbench.tui.screens.allowlist_write import AllowlistWriteScreen
from workbench.tui.screens.writeback import ALTERNATIVE, RELOAD, Result


@dataclass(frozen=True)
class Proposal:
    """The allowlists to write, per server, and how they were measured."""

    report: AllowlistReport
    lists: dict[str, list[str]]
    every: dict[str, list[str]]
    budget: int
    cases: int

    def summary(self) -> list[str]:
        m = self.report.heldout
        kept = sum(len(v) for v in self.lists.values())
        return [
            f"{kept} MCP tools exposed ({self.report.surface.backend} backend), chosen by the "
            f"allowlist tuner on {self.cases} labelled cases within {self.budget:,} tokens "
            "(what the knobs send per request)",
            f"held-out: hit {m.hit:.2f} · recall {m.recall:.2f} · {m.tokens:,} tokens per request",
            *(f"· {note}" for note in self.report.surface.notes),
            *(f"· {trap}" for trap in traps(self.report.surface.backend)),
        ]


def propose(lab: Lab, setting: ToolFiltering, cases_flag: Path | None) -> Proposal | str:
    """The allowlists for ``setting``'s budget on the labelled cases (slow: runs the cases), or
    why there is none."""
    ws = lab.workspace
    found = find_cases_source(ws.agent, cases_flag)
    if found is None:
        return "no labelled cases to choose the tools from"
    cases = resolve_cases(found[1], ws.catalog)
    if not len(cases):
        return "no labelled case names a tool of this catalog"
    sent = evaluate(ws.engine, ws.catalog, ws.tokens, cases, setting, usage=lab.usage)
    budget = round(sent.metrics.tokens_selected_mean)
    report = tune_allowlist(
        ws.agent, ws.catalog, ws.tokens, cases, Budget(max_tokens=budget), usage=lab.usage
    )
    lists = allowlists(ws.catalog, report.surface, report.exposed)
    every = {s: [t.name for t in ws.catalog.tools_of(s)] for s in lists}
    return Proposal(report, lists, every, budget, len(cases))


class AllowlistWrite:
    """Proposes HoloDeck 0.7's allowlists from ``host`` and opens the dialog that writes them."""

    def __init__(
        self, host: Screen[None], state: LabState, options: Options, reload: Callable[[], bool]
    ) -> None:
        self.host = host
        self.state = state
        self.options = options
        #: Reads the file again (the write-back's), True when it still loads.
        self.reload = reload

    def start(self) -> None:
        lab = self.state.lab
        if lab is None:
            self.host.notify("The catalog is still loading.", title="allowlists")
            return
        self.host.notify("Running the labelled cases…", title="allowlists", timeout=3)
        self.host.run_worker(
            self._propose(lab, self.state.setting),
            name="allowlists",
            group="allowlists",
            exclusive=True,
            exit_on_error=False,
        )

    async def _propose(self, lab: Lab, setting: ToolFiltering) -> None:
        try:
            proposal = await asyncio.to_thread(propose, lab, setting, self.options.cases)
        except HoloTuneError as err:
            proposal = str(err)
        agent = self.state.agent
        if isinstance(proposal, str):
            command = tune_command(self.state.runtime, Path(agent.path).name)
            self.host.notify(
                f"{proposal}: label queries, or run `{command}`", title="allowlists", timeout=10
            )
            return
        screen = AllowlistWriteScreen(
            Path(agent.path),
            proposal.report.surface.backend,
            proposal.lists,
            every=proposal.every,
            summary=proposal.summary(),
            original=agent.raw,
        )
        self.host.app.push_screen(screen, self._written)

    def _written(self, result: Result) -> None:
        if result == RELOAD:  # the file changed on disk: read it again, propose again
            if self.reload():
                self.start()
            return
        if result is None or result == ALTERNATIVE:
            self.host.notify("Nothing written.", title="allowlists")
            return
        self.host.notify(f"Allowlists written. Backup: {result}", title="allowlists")
        self.reload()
