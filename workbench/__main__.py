"""``python -m workbench`` and the ``holo-tune`` command: the collector is off before anything of
holo-tune loads (:mod:`workbench.startup`), then the command line runs."""

import sys

from workbench import startup


def run() -> None:
    """The ``holo-tune`` command (pyproject's script)."""
    startup.loading()
    from workbench.cli import main

    sys.exit(main())


if __name__ == "__main__":
    run()
