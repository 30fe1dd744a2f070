"""kernelevolve: writes and tunes compute kernels automatically, verified and honestly measured.

The public API is imported lazily, so evaluation workers can import the package's worker-side
modules with only torch, triton, numpy and the standard library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# ast.parse one thread at a time (a CPython 3.11 race; see pyparse): before anything parses
from kernelevolve import pyparse as _pyparse  # noqa: F401

__version__ = "0.1.0"

_EXPORTS = {
    "load_problem": "kernelevolve.problem",
    "Problem": "kernelevolve.problem",
    "evaluate": "kernelevolve.tools.harness.pool",
    "WorkerPool": "kernelevolve.tools.harness.pool",
    "EvalPool": "kernelevolve.tools.harness.pool",
    "make_pool": "kernelevolve.tools.harness.pool",
    "EvalResult": "kernelevolve.tools.harness.result",
    "EvalStatus": "kernelevolve.tools.harness.result",
    "EvalConfig": "kernelevolve.config",
    "Settings": "kernelevolve.config",
    "load_settings": "kernelevolve.config",
    "get_target": "kernelevolve.targets",
    "KernelEvolveError": "kernelevolve.errors",
    "tune": "kernelevolve.graph.session",
    "resume": "kernelevolve.graph.session",
    "Session": "kernelevolve.graph.session",
    "TuneResult": "kernelevolve.graph.session",
}

__all__ = [
    "EvalConfig", "EvalPool", "EvalResult", "EvalStatus", "KernelEvolveError", "Problem",
    "Session", "Settings", "TuneResult", "WorkerPool", "__version__", "evaluate", "get_target",
    "load_problem", "load_settings", "make_pool", "resume", "tune",
]

if TYPE_CHECKING:
    from kernelevolve.config import EvalConfig, Settings, load_settings
    from kernelevolve.errors import KernelEvolveError
    from kernelevolve.graph.session import Session, TuneResult, resume, tune
    from kernelevolve.problem import Problem, load_problem
    from kernelevolve.targets import get_target
    from kernelevolve.tools.harness.pool import EvalPool, WorkerPool, evaluate, make_pool
    from kernelevolve.tools.harness.result import EvalResult, EvalStatus


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kernelevolve' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
