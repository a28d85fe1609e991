"""The published wheels the oracle runs, unpacked on demand (never committed).

``make test`` downloads them into .cache: HoloDeck 0.6.40 (.cache/holodeck) and Semantic Kernel
1.45.0 (.cache/semantic-kernel), the version HoloDeck's ``semantic-kernel>=1.39.4,<2`` resolved to
when holo-tune's reference was measured. A test unpacks the files it runs into a temporary folder.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOLODECK_WHEEL = REPO / ".cache" / "holodeck" / "holodeck_ai-0.6.40-py3-none-any.whl"
SK_WHEEL = REPO / ".cache" / "semantic-kernel" / "semantic_kernel-1.45.0-py3-none-any.whl"


def unpack(wheel: Path, members: Sequence[str], into: Path) -> Path:
    """Extract ``members`` (paths inside the wheel) into ``into``; returns ``into``."""
    with zipfile.ZipFile(wheel) as archive:
        for member in members:
            archive.extract(member, into)
    return into
