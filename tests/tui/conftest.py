"""Fixtures of the dashboard tests (helpers in tui_helpers.py)."""

from __future__ import annotations

from tui_helpers import stackone, stackone_app, stackone_here

__all__ = ["stackone", "stackone_app", "stackone_here"]
