"""Progress of a long command on stderr: one line redrawn in place on a terminal, nothing else.

``compare: stackone 2/7 engines · 412/1,000 cases``. A :class:`ProgressLine` is the core's
``on_progress(done, total)`` callback (:data:`workbench.evaluate.metrics.Progress`, the shape the
dashboard's progress bars take) and, through :meth:`ProgressLine.stage`, its ``on_engine(name)``.
It writes only when its stream is a terminal and it is not told to be quiet (``--json``): a pipe,
a file or a JSON reader never sees a progress line. :meth:`ProgressLine.close` (or leaving the
``with`` block) erases the line, so what the command prints next starts on a clean line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TextIO

#: Erase the terminal's current line and go back to its start.
ERASE = "\r\x1b[K"
#: Redraw at most this often (seconds); the first and the last call always draw.
INTERVAL = 0.1


class ProgressLine:
    """``label: [stage i/n stage_unit · ]done/total unit``, on a terminal only."""

    def __init__(
        self,
        label: str,
        unit: str = "cases",
        *,
        stages: Sequence[str] = (),
        stage_unit: str = "engines",
        stream: TextIO | None = None,
        quiet: bool = False,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        self.unit = unit
        self.stages = len(stages)
        self.stage_unit = stage_unit
        self.live = not quiet and self.stream.isatty()
        self._stage: tuple[int, str] | None = None
        self._counts: tuple[int, int] | None = None
        self._drawn_at = 0.0
        self._shown = False

    def stage(self, name: str) -> None:
        """A new stage starts (``on_engine``): its name and number are shown."""
        number = self._stage[0] + 1 if self._stage is not None else 1
        self._stage = (number, name)
        self._counts = None
        self._draw(force=True)

    def __call__(self, done: int, total: int) -> None:
        self._counts = (done, total)
        self._draw(force=done >= total)

    def text(self) -> str:
        """The line as drawn (without the control characters)."""
        parts = []
        if self._stage is not None:
            number, name = self._stage
            of = f"/{self.stages}" if self.stages else ""
            parts.append(f"{name} {number}{of} {self.stage_unit}")
        if self._counts is not None:
            done, total = self._counts
            parts.append(f"{done:,}/{total:,} {self.unit}")
        return f"{self.label}: " + " · ".join(parts)

    def _draw(self, *, force: bool) -> None:
        if not self.live:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < INTERVAL:
            return
        self._drawn_at = now
        self.stream.write(ERASE + self.text())
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        """Erase the line (when one was drawn)."""
        if self._shown:
            self.stream.write(ERASE)
            self.stream.flush()
            self._shown = False

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
