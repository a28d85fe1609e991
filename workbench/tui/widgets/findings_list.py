"""The diagnostics of the core (``workbench.evaluate.diagnostics``): one line per finding with
its evidence, errors first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import Static

_MARK = {"error": ("✗", "bold red"), "warning": ("⚠", "yellow"), "info": ("ℹ", "cyan")}


def findings_text(findings: Sequence[Any]) -> Text:
    """Findings as text; each has ``severity``, ``code``, ``message``, ``evidence`` and maybe
    a ``fix``."""
    if not findings:
        return Text("No findings: the runtime will do what this config says.", style="green")
    text = Text()
    for n, finding in enumerate(findings):
        mark, style = _MARK.get(str(finding.severity), ("•", ""))
        if n:
            text.append("\n")
        text.append(f"{mark} ", style=style)
        text.append(f"{finding.code} ", style="bold")
        text.append(str(finding.message))
        evidence = getattr(finding, "evidence", None)
        if evidence:
            text.append("\n    " + evidence_line(evidence), style="dim")
        fix = getattr(finding, "fix", None)
        if fix:
            text.append(f"\n    fix: {fix}")
    return text


def evidence_line(evidence: Any) -> str:
    """A finding's evidence in one line: ``key: value`` pairs, long lists cut short."""
    if isinstance(evidence, Mapping):
        return " · ".join(f"{key}: {_short(value)}" for key, value in evidence.items())
    return _short(evidence)


def _short(value: Any, keep: int = 3) -> str:
    if isinstance(value, list | tuple):
        head = ", ".join(str(v) for v in value[:keep])
        return f"{head}, … ({len(value)})" if len(value) > keep else head
    return str(value)


class FindingsList(Static):
    """Shows the findings."""

    def show(self, findings: Sequence[Any]) -> None:
        self.update(findings_text(findings))
