"""Errors the user sees as one line (the CLI prints them and exits 2)."""

from __future__ import annotations

from pathlib import Path


class HoloTuneError(Exception):
    """Base class of every error holo-tune reports to its user as one line."""

    exit_code = 2


class InputError(HoloTuneError):
    """Bad input: a config, cases or catalog file, or a flag.

    ``str(err)`` is the one-line message: ``FILE:LINE: FIELD: cause`` (parts that are unknown are
    left out), which is what the CLI prints and the TUI's error screen shows.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.file:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        what = f"{self.field}: " if self.field else ""
        return f"{where}{what}{self.message}".replace("\n", " ")


class ConfigError(InputError):
    """The agent YAML does not load or does not validate."""


class CasesError(InputError):
    """A labelled cases file does not load."""


class CatalogError(InputError):
    """A catalog snapshot does not load."""


class ServersFailed(HoloTuneError):
    """Servers did not answer, so a command would rank or measure a partial catalog."""


class WriteBackError(HoloTuneError):
    """Write-back refused (file changed on disk, invalid value, ...). Nothing was written."""


class CheckFailed(HoloTuneError):
    """A check the user asked for did not pass (e.g. ``eval --min-recall``)."""

    exit_code = 1


#: The exit code of an unexpected exception (a bug): distinct from bad input (2) and a failed
#: check (1).
EXIT_INTERNAL = 3
#: Exit code of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def internal_error_line(err: BaseException, *, limit: int = 300) -> str:
    """An unexpected exception as one line: ``internal error: Type: cause; rerun with --debug
    for the traceback`` (the first exception of a group; the cause cut to ``limit`` characters)."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    cause = " ".join(str(err).split())
    if len(cause) > limit:
        cause = cause[: limit - 3] + "..."
    what = type(err).__name__ + (f": {cause}" if cause else "")
    return f"internal error: {what}; rerun with --debug for the traceback"
