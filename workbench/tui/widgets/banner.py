"""A one-line warning strip for what the runtime does differently (e.g. semantic is BM25)."""

from __future__ import annotations

from textual.widgets import Static


class Banner(Static):
    """Hidden while empty; shows the most important runtime caveat otherwise."""

    _message: str | None = None

    def show(self, message: str | None) -> None:
        """Show ``message`` (None hides the banner); a repeat costs nothing."""
        if message == self._message:
            return
        self._message = message
        self.display = bool(message)
        self.update(f"⚠ {message}" if message else "")
        self.tooltip = message  # the whole text, when the strip cuts it short
