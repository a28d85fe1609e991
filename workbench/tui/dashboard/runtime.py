"""What the dashboard says about the runtime: the header's "which runtime, and why", the knobs'
note when the runtime does not read the ``tool_filtering`` block, and what the dialog says
instead of writing it.

The runtime itself is the core's (:func:`workbench.runtime.detect_runtime`,
:func:`workbench.runtime.check_writable`); this module only words it for the screen.
"""

from __future__ import annotations

from workbench.runtime import RuntimeInfo, check_writable

#: The command that tunes and writes HoloDeck 0.7's allowlists.
TUNE_07 = "holo-tune tune {agent} --runtime holodeck-0.7 --apply"


def short_reason(runtime: RuntimeInfo) -> str:
    """The reason in a few words, for the header (``check`` prints the full one)."""
    if runtime.source == "flag":
        return "--runtime"
    if runtime.source == "default":
        return "default: nothing says 0.7+"
    if runtime.source == "yaml":
        if runtime.name == "holodeck-0.7":
            return "openai: block in the YAML"
        return "tool_filtering block in the YAML"
    return runtime.reason


def runtime_text(runtime: RuntimeInfo) -> str:
    """``holodeck-0.7 (openai: block in the YAML)``."""
    return f"{runtime.name} ({short_reason(runtime)})"


def knobs_note(runtime: RuntimeInfo) -> str | None:
    """What the knobs panel says when the runtime does not read the block (None: it does)."""
    if runtime.reads_tool_filtering:
        return None
    if runtime.name == "holodeck-0.7":
        return "holodeck-0.7 does not read these: it has no tool_filtering"
    return f"{runtime.name} does not read these: it loads tools by its own search"


def instead(runtime: RuntimeInfo, agent: str) -> str:
    """What to use instead of writing the block, under the dialog's refusal."""
    if runtime.name == "holodeck-0.7":
        return (
            "The knobs show what HoloDeck 0.6 would send. For 0.7, write static allowlists: "
            "a proposes them from the labelled cases, within the tokens the knobs send per "
            f"request; or run `{TUNE_07.format(agent=agent)}`."
        )
    return (
        f"{runtime.name} reads its own tool configuration, not agent.yaml: ctrl+e shows it "
        f"(as `holo-tune export {agent} --runtime {runtime.name}` prints it)."
    )


def write_back_off(runtime: RuntimeInfo) -> str | None:
    """Why quitting offers no write-back (None: it does): the core refuses the block for this
    runtime, so the dialog says what to use instead."""
    if check_writable(runtime, "tool_filtering") is None:
        return None
    if runtime.name == "holodeck-0.7":
        what = "ctrl+s proposes its allowlists instead"
    else:
        what = "ctrl+e shows its configuration instead"
    return f"{runtime.name} does not read tool_filtering: nothing to write back ({what})"
