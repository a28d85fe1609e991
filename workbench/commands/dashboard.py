"""``holo-tune AGENT.yaml``: open the dashboard (the Textual app in ``workbench.tui``)."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """Run the app; its exit code is 2 when the config did not load (shown on its error screen)."""
    from workbench.tui.app import HoloTuneApp
    from workbench.tui.options import Options

    options = Options(
        agent=Path(args.agent),
        catalog=Path(args.catalog) if getattr(args, "catalog", None) else None,
        timeout=getattr(args, "timeout", None),
        embedder=getattr(args, "embedder", None),
        usage=Path(args.usage) if getattr(args, "usage", None) else None,
        cases=Path(args.cases) if getattr(args, "cases", None) else None,
        runtime=getattr(args, "runtime", None),
    )
    app = HoloTuneApp(options)
    app.run()
    return app.return_code or 0
