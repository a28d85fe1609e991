"""Import HoloDeck 0.6.40's ``holodeck.lib.tool_filter`` without Semantic Kernel or HoloDeck.

``make test`` fetches the wheel and unpacks only ``holodeck/lib/tool_filter/`` into
``.cache/holodeck`` (the Makefile's oracle target). Its imports are satisfied by minimal stand-in
modules placed in ``sys.modules`` for as long as the oracle is loaded; the oracle's own code runs
unmodified. The filter only calls what the stand-ins below provide: a kernel's ``plugins`` and an
embedding service's ``generate_embeddings``; the type names are used in annotations only.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ORACLE_ROOT = REPO / ".cache" / "holodeck"
ORACLE_PACKAGE = ORACLE_ROOT / "holodeck" / "lib" / "tool_filter"

_SK_NAMES: dict[str, tuple[str, ...]] = {
    "semantic_kernel": ("Kernel",),
    "semantic_kernel.connectors": (),
    "semantic_kernel.connectors.ai": (),
    "semantic_kernel.connectors.ai.embedding_generator_base": ("EmbeddingGeneratorBase",),
    "semantic_kernel.connectors.ai.function_choice_behavior": ("FunctionChoiceBehavior",),
    "semantic_kernel.connectors.ai.prompt_execution_settings": ("PromptExecutionSettings",),
    "semantic_kernel.functions": (),
    "semantic_kernel.functions.kernel_function": ("KernelFunction",),
    "semantic_kernel.functions.kernel_parameter_metadata": ("KernelParameterMetadata",),
    "semantic_kernel.functions.kernel_plugin": ("KernelPlugin",),
}


def _stub_modules() -> dict[str, types.ModuleType]:
    modules: dict[str, types.ModuleType] = {}
    for name, classes in _SK_NAMES.items():
        module = types.ModuleType(name)
        module.__path__ = []  # a package, so its children import
        for cls in classes:
            setattr(module, cls, type(cls, (), {}))
        modules[name] = module
    holodeck = types.ModuleType("holodeck")
    holodeck.__path__ = [str(ORACLE_ROOT / "holodeck")]
    lib = types.ModuleType("holodeck.lib")
    lib.__path__ = [str(ORACLE_ROOT / "holodeck" / "lib")]
    logging_config = types.ModuleType("holodeck.lib.logging_config")

    def get_logger(name: str) -> logging.Logger:
        return logging.getLogger(name)

    logging_config.get_logger = get_logger  # type: ignore[attr-defined]
    modules.update(
        {"holodeck": holodeck, "holodeck.lib": lib, "holodeck.lib.logging_config": logging_config}
    )
    return modules


@contextmanager
def holodeck_tool_filter() -> Iterator[Any]:
    """The oracle's ``holodeck.lib.tool_filter`` package, importable while the block runs."""
    stubs = _stub_modules()
    saved = {name: sys.modules.get(name) for name in stubs}
    prefix = "holodeck.lib.tool_filter"
    sys.modules.update(stubs)
    try:
        yield importlib.import_module(prefix)
    finally:
        for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
            del sys.modules[name]
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
