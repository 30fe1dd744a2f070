"""The offline synthesizer: Triton candidates from parameterised templates, no LLM needed.

``analyze(problem)`` traces the reference ``Model`` with torch.fx (aten level), lowers the graph
into a DAG of elementwise ops, reductions and at most one matmul or allowed library op, and
returns a :class:`KernelPlan` whose ``render(params)`` writes a complete candidate module; it
raises :class:`Unsupported` (data, not an error) for operators no template covers.
``mutate``/``crossover``/``repair`` move through a plan's parameter space, guided by the
profiler's diagnosis and by the failures of earlier candidates.
"""

from .analyze import analyze
from .plan import OPERATOR_CLASSES, KernelPlan, Unsupported
from .search import DIAGNOSES, crossover, mutate, repair

__all__ = [
    "DIAGNOSES",
    "OPERATOR_CLASSES",
    "KernelPlan",
    "Unsupported",
    "analyze",
    "crossover",
    "mutate",
    "repair",
]
