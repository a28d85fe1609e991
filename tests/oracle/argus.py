"""argus-mcp 0.8.6's own code, loaded from its sdist (``make test`` fetches it into .cache/argus).

argus-mcp does not import next to mcp 2.x (it imports ``McpError``, which mcp 2 renamed), so the
package is never installed: the few modules the tests run are unpacked from the sdist into a
temporary folder and imported under stand-in packages (``argus_mcp``, ``argus_mcp.config``, ...
whose ``__init__`` would import the gateway). The modules themselves run unmodified: the config
schema (``ArgusConfig``), the loader's ``${VAR}`` expansion and the optimizer's ``ToolIndex``.
They import only pydantic, scikit-learn and each other.
"""

from __future__ import annotations

import importlib
import sys
import tarfile
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SDIST = REPO / ".cache" / "argus" / "argus_mcp-0.8.6.tar.gz"
ROOT = "argus_mcp-0.8.6"
#: The modules the tests run, as paths inside the package.
MODULES = (
    "constants.py",
    "errors.py",
    "config/schema.py",
    "config/schema_backends.py",
    "config/schema_client.py",
    "config/schema_rate_limits.py",
    "config/schema_registry.py",
    "config/schema_security.py",
    "config/schema_server.py",
    "config/migration.py",
    "plugins/models.py",
    "bridge/optimizer/search.py",
)
PACKAGES = ("argus_mcp", "argus_mcp.config", "argus_mcp.plugins", "argus_mcp.bridge")
PACKAGES += ("argus_mcp.bridge.optimizer",)


@dataclass(frozen=True)
class Argus:
    """What the tests call: the schema, the loader's expansion, the optimizer's index."""

    ArgusConfig: Any
    expand_env_vars: Any
    ToolIndex: Any


def _unpack(into: Path) -> Path:
    wanted = {f"{ROOT}/argus_mcp/{m}" for m in MODULES}
    with tarfile.open(SDIST) as archive:
        members = [m for m in archive.getmembers() if m.name in wanted]
        archive.extractall(into, members=members, filter="data")
    return into / ROOT


@contextmanager
def argus_mcp(into: Path) -> Iterator[Argus]:
    """argus-mcp's modules, importable while the block runs (unpacked into ``into``)."""
    root = _unpack(into)
    saved = {n: m for n, m in sys.modules.items() if n == "argus_mcp" or n.startswith("argus_mcp.")}
    for name in saved:
        del sys.modules[name]
    for name in PACKAGES:
        package = types.ModuleType(name)
        package.__path__ = [str(root.joinpath(*name.split(".")))]  # its __init__ never runs
        sys.modules[name] = package
    try:
        schema = importlib.import_module("argus_mcp.config.schema")
        migration = importlib.import_module("argus_mcp.config.migration")
        search = importlib.import_module("argus_mcp.bridge.optimizer.search")
        yield Argus(schema.ArgusConfig, migration.expand_env_vars, search.ToolIndex)
    finally:
        for name in [n for n in sys.modules if n == "argus_mcp" or n.startswith("argus_mcp.")]:
            del sys.modules[name]
        sys.modules.update(saved)
