"""An ATen operator suite from PyTorch's OpInfo database: ``generate_suite`` writes one
KernelBench-format problem per (operator, sample), with a curated default list of operators
(``ops.CURATED``, by class) and the reasons others are left out (``ops.SKIPPED``).

The generator imports torch (seconds): its names load on first use, so the CLI, which mounts
``aten.cli``, starts without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "CLASSES": "kernelevolve.aten.ops", "CURATED": "kernelevolve.aten.ops",
    "SKIPPED": "kernelevolve.aten.ops", "Suite": "kernelevolve.aten.generate",
    "generate_suite": "kernelevolve.aten.generate", "load_op_db": "kernelevolve.aten.generate",
    "read_suite": "kernelevolve.aten.generate",
}

if TYPE_CHECKING:
    from kernelevolve.aten.generate import Suite, generate_suite, load_op_db, read_suite
    from kernelevolve.aten.ops import CLASSES, CURATED, SKIPPED

__all__ = ["CLASSES", "CURATED", "SKIPPED", "Suite", "generate_suite", "load_op_db",
           "read_suite"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernelevolve.aten' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
