"""The diagnostics of the core (``workbench.evaluate.diagnostics``): one line per finding with
its evidence, errors first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.widgets import Static

_MARK = {"error": ("✗", "bold red"), "warning": ("⚠", "yellow"), "info": ("ℹ", "cyan")}


#: What an empty list says, by default.
NONE = "No findings: the runtime will do what this config says."


def findings_text(findings: Sequence[Any], empty: str = NONE, *, evidence: bool = True) -> Text:
    """Findings as text; each has ``severity``, ``code``, ``message``, ``evidence`` and maybe
    a ``fix``. Without ``evidence`` (where the message already names it) it is left out."""
    if not findings:
        return Text(empty, style="green")
    text = Text()
    for n, finding in enumerate(findings):
        mark, style = _MARK.get(str(finding.severity), ("•", ""))
        if n:
            text.append("\n")
        text.append(f"{mark} ", style=style)
        text.append(f"{finding.code} ", style="bold")
        text.append(str(finding.message))
        shown = getattr(finding, "evidence", None) if evidence else None
        if shown:
            text.append("\n    " + evidence_line(shown), style="dim")
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

    def show(self, findings: Sequence[Any], *, empty: str = NONE, evidence: bool = True) -> None:
        self._text = findings_text(findings, empty, evidence=evidence)
        self.update(self._text)

    def add_note(self, note: str) -> None:
        """A dim line after what :meth:`show` drew."""
        self._text = Text.assemble(self._text, ("\n" + note, "dim"))
        self.update(self._text)
