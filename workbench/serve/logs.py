"""Serve's log: stderr and ``serve.log`` in the run's log directory, never stdout, no secret.

Under stdio, stdout is the protocol: nothing is logged there. The run's directory is the
listing's (``$XDG_CACHE_HOME/holo-tune/logs/<run>/``), beside each stdio server's own
``<server>.log``. Every line is scrubbed of the values a secret may hold (each stdio server's
environment values, each HTTP server's header values) before it is written anywhere.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from pathlib import Path

from workbench.catalog.specs import McpServerSpec

LOGGER = "holo_tune.serve"
#: Values shorter than this are not scrubbed (``1``, ``true``: no secret, and found everywhere).
MIN_SECRET = 6
HIDDEN = "[hidden]"


def secrets_of(specs: Iterable[McpServerSpec]) -> set[str]:
    """Every environment and header value the agent's MCP entries hold."""
    values: set[str] = set()
    for spec in specs:
        values.update((spec.env or {}).values())
        values.update((spec.headers or {}).values())
    return {value for value in values if len(value) >= MIN_SECRET}


class Scrub(logging.Filter):
    """Replaces every secret value in a record's message with ``[hidden]``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        # The longest first: a secret holding another is hidden whole.
        self.secrets = sorted(set(secrets), key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        text = record.getMessage()
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        record.msg, record.args = text, None
        if record.exc_info:
            record.exc_text = self.scrub(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        return text


def setup_logging(log_dir: Path, secrets: Iterable[str], *, verbose: bool = False) -> Path:
    """Serve's logger (and FastMCP's) to stderr and ``<log_dir>/serve.log``; returns the file."""
    path = log_dir / "serve.log"
    scrub = Scrub(secrets)
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setFormatter(logging.Formatter("holo-tune serve: %(message)s"))
    to_file = logging.FileHandler(path, encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for handler in (to_stderr, to_file):
        handler.addFilter(scrub)
    logger = logging.getLogger(LOGGER)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False
    for old in list(logger.handlers):
        logger.removeHandler(old)
        old.close()
    logger.addHandler(to_stderr)
    logger.addHandler(to_file)
    fastmcp = logging.getLogger("fastmcp")
    fastmcp.addHandler(to_file)
    return path
