"""Token counts of tool definitions, per model encoding, offline.

``token_table(catalog, provider, model)`` counts every tool as the model is billed for it (the
OpenAI cookbook's method, extended to nested schemas; see ``formats``); ``choose_encoding`` says
which encoding a model gets and whether its counts are exact; ``get_encoding`` builds o200k_base
or cl100k_base from the bundled, sha256-checked rank files with no network.
"""

from workbench.tokens.count import TokenTable, token_table
from workbench.tokens.encodings import EncodingError, get_encoding
from workbench.tokens.models import EncodingChoice, choose_encoding

__all__ = [
    "EncodingChoice",
    "EncodingError",
    "TokenTable",
    "choose_encoding",
    "get_encoding",
    "token_table",
]
