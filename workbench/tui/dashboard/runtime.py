"""What the dashboard says about the runtime: the header's "which runtime, and why", the knobs'
note when the runtime does not read the ``tool_filtering`` block, and what the dialog says
instead of writing it.

Each is the runtime's own words, as data (:attr:`workbench.runtimes.base.Runtime.words`, a
:class:`~workbench.runtimes.base.RuntimeWords`); this module only fills them in.
"""

from __future__ import annotations

from workbench.runtimes.detect import RuntimeInfo, check_writable


def short_reason(runtime: RuntimeInfo) -> str:
    """The reason in a few words, for the header (``check`` prints the full one)."""
    return runtime.plugin.words.reason(runtime)


def runtime_text(runtime: RuntimeInfo) -> str:
    """``NAME (why)``: the runtime and, in a few words, why."""
    return f"{runtime.name} ({short_reason(runtime)})"


def knobs_note(runtime: RuntimeInfo) -> str | None:
    """What the knobs panel says when the runtime does not read the block (None: it does)."""
    return runtime.plugin.words.knobs_note(runtime.plugin)


def instead(runtime: RuntimeInfo, agent: str) -> str:
    """What to use instead of writing the block, under the dialog's refusal."""
    return runtime.plugin.words.instead_line(runtime.plugin.name, agent)


def tune_command(runtime: RuntimeInfo, agent: str) -> str:
    """The command that tunes and writes the runtime's configuration."""
    return f"holo-tune tune {agent} --runtime {runtime.name} --apply"


def write_back_off(runtime: RuntimeInfo) -> str | None:
    """Why quitting offers no write-back (None: it does): the core refuses the block for this
    runtime, so the dialog says what to use instead."""
    if check_writable(runtime, "tool_filtering") is None:
        return None
    offer = runtime.plugin.write_offer
    what = f"ctrl+s offers: {offer}" if offer else "ctrl+e shows its configuration instead"
    return f"{runtime.name} does not read tool_filtering: nothing to write back ({what})"
