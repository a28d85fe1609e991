"""HoloDeck's BM25 tokenizer: lowercase, then the runs of ``[a-z0-9]``.

No camelCase split, no stemming, no stop words; a non-ASCII letter ends a token and vanishes
(``"Größe"`` -> ``["gr", "e"]``). ``str.lower`` runs first, exactly as the runtime does, so the few
characters whose lowercase form is ASCII (the Kelvin sign ``K`` -> ``k``) count as letters.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-zA-Z0-9]+")


def tokenize(text: str) -> list[str]:
    """The tokens HoloDeck indexes and queries with, in text order, repeats kept."""
    return _TOKEN.findall(text.lower())
