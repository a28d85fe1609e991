"""Token counts of tool definitions, per model encoding, offline.

``token_table(catalog, provider, model)`` counts every tool as the model is billed for it (the
OpenAI cookbook's method, extended to nested schemas; see ``formats``); ``choose_encoding`` says
which encoding a model gets and whether its counts are exact; ``get_encoding`` builds o200k_base
or cl100k_base from the bundled, sha256-checked rank files with no network. Counts are kept on disk
(``cache``): a text counted before, in any process, builds no encoding.
"""

from workbench.tokens.cache import TokenCountCache, text_count
from workbench.tokens.count import TokenTable, text_counts, token_table
from workbench.tokens.encodings import EncodingError, get_encoding
from workbench.tokens.models import EncodingChoice, choose_encoding

__all__ = [
    "EncodingChoice",
    "EncodingError",
    "TokenCountCache",
    "TokenTable",
    "choose_encoding",
    "get_encoding",
    "text_count",
    "text_counts",
    "token_table",
]
