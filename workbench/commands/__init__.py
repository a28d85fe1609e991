"""One module per CLI subcommand, each with ``run(args) -> int`` (see workbench.cli)."""
