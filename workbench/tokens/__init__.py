"""Token counts of tool definitions, per model encoding, offline."""

from workbench.tokens.count import TokenTable, token_table

__all__ = ["TokenTable", "token_table"]
