"""analyze(): which template, if any, writes a problem's operator."""

from __future__ import annotations

from collections.abc import Callable

import torch

from kernelevolve.problem import Problem

from .families import argreduce, attention, loss, norm, pool, scan
from .families.conv import template as conv
from .families.elementwise import DEFAULTS as EW_DEFAULTS
from .families.elementwise import SPACE as EW_SPACE
from .families.elementwise import ElementwiseTemplate
from .families.fullreduce import FullReduceTemplate, is_full
from .families.gemv import GemvTemplate, thin_side
from .families.matmul import MatmulTemplate
from .families.reduce_dim import ReduceDimTemplate
from .families.rows import RowsTemplate
from .frontend.compound import lower
from .frontend.ir import Lowered, Node
from .frontend.trace import Traced, trace
from .plan import KernelPlan, Unsupported
from .program import analyze_program

# The whole-operator templates, tried before the expression-DAG lowering: each matches the traced
# graph of one operator family and returns a plan, or None when the graph is not one of its own
# (the lowering then decides). They raise Unsupported when the graph is theirs but some detail is
# not covered.
WHOLE_OPERATORS: list[Callable[[Problem, Traced], KernelPlan | None]] = [
    conv.plan, pool.plan, norm.plan, scan.plan, argreduce.plan, loss.plan, attention.plan]


def _whole_operator(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The first whole-operator plan that matches, or None."""
    for matcher in WHOLE_OPERATORS:
        found = matcher(problem, traced)
        if found is not None:
            return found
    return None


def _dtype(node: Node) -> str:
    return {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}.get(
        str(node.dtype).removeprefix("torch."), str(node.dtype))


def _shape(node: Node) -> str:
    return "[" + ", ".join(str(s) for s in node.shape) + "]"


def _chain(lowered: Lowered) -> str:
    ops = [n.op for n in lowered.nodes if n.op not in {"load", "const", "expand", "reshape",
                                                       "count"}]
    return ", ".join(dict.fromkeys(ops)) or "copy"


def _elementwise_plan(problem: Problem, traced: Traced, lowered: Lowered) -> KernelPlan:
    out = lowered.output
    space, defaults = dict(EW_SPACE), dict(EW_DEFAULTS)
    tail = f"then a fused {_chain(lowered)} epilogue over a {_shape(out)} {_dtype(out)} tensor"
    if lowered.libraries:
        lib = lowered.libraries[0]
        assert lib.operand is not None
        name = lib.operand.label
        if lowered.own_convs:
            # On an H200 the library's convolution with the fused epilogue ran about 4x
            # faster than these kernels on level 2's 3-channel convolutions, and 1.07-2.6x
            # slower on those with 16 or more input channels per group
            # (benchmarks/results/offline_variants_h200/level2_conv_paths.md)
            advice = (f", which ran faster at fewer than {conv.CHANNELS_LAST_MIN_C} input "
                      f"channels per group" if {c.layout for c in lowered.own_convs} - {1}
                      else "")
            desc = (f"{name} (the convolution template's kernels; `--allow-op {name}` keeps the "
                    f"library's{advice}) {tail}")
            cls = "convolution"
            gemm, gemm_defaults = conv.gemm_space([c.layout for c in lowered.own_convs],
                                                  lib.dtype == torch.float32)
            fma, fma_defaults = conv.fma_space(lowered.own_convs)
            space.update({**gemm, **fma})
            defaults.update({**gemm_defaults, **fma_defaults})
            # one warp count for both kernels: the implicit GEMM's tiles want 2-8
            space["num_warps"] = tuple(w for w in space["num_warps"] if 2 <= w <= 8)
        else:
            desc, cls = f"library {name} {tail}", "library_epilogue"
    else:
        desc = f"fused elementwise {_chain(lowered)} over a {_shape(out)} {_dtype(out)} tensor"
        cls = "elementwise"
    template = ElementwiseTemplate(problem, traced, lowered, desc)
    return KernelPlan(cls, desc, space, defaults, template)


def analyze(problem: Problem) -> KernelPlan:
    """The plan for ``problem``: one template's (``analyze_single``), else a program of parts
    each a template writes (``program.analyze_program``); or Unsupported with the reason no
    template covers it (the single template's, and the split's)."""
    try:
        return analyze_single(problem)
    except Unsupported as exc:
        single = exc
    try:
        return analyze_program(problem, analyze_single)
    except Unsupported as exc:
        raise Unsupported(f"{single}; split into parts: {exc}") from single


def analyze_single(problem: Problem) -> KernelPlan:
    """The plan of one template for ``problem``, or Unsupported with the reason no template
    covers it.

    A graph shape the lowering did not anticipate (an internal assertion or lookup failing) is
    reported as Unsupported too, naming what failed, so a search falls back instead of dying.
    """
    try:
        plan = _analyze(problem)
        # A template that cannot write its own defaults does not cover the operator: say so now,
        # not from the Coder in the middle of a run.
        plan.render(plan.default_params())
        return plan
    except (AssertionError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise Unsupported(f"the offline synthesizer could not analyse this graph "
                          f"({type(exc).__name__}: {exc}); please report it") from exc


def _analyze(problem: Problem) -> KernelPlan:
    traced = trace(problem)
    whole = _whole_operator(problem, traced)
    if whole is not None:
        return whole
    lowered = lower(traced, list(problem.allowed_ops))
    gemms = lowered.gemms
    reduces = lowered.reduces
    if len(gemms) > 1:
        raise Unsupported(f"fx trace found {len(gemms)} matmuls; the matmul template fuses one "
                          f"matmul with an elementwise epilogue")
    if len(lowered.libraries) > 1:
        raise Unsupported(f"fx trace found {len(lowered.libraries)} library ops; the library "
                          f"epilogue template fuses what follows one")
    if gemms:
        if reduces:
            raise Unsupported("a matmul combined with a reduction, which no template covers")
        if lowered.libraries:
            raise Unsupported("a matmul combined with a library op, which no template covers")
        if thin_side(gemms[0].spec) is not None:
            return GemvTemplate.plan(problem, traced, lowered)
        return MatmulTemplate.plan(problem, traced, lowered)
    if reduces:
        if lowered.libraries:
            raise Unsupported("a library op followed by a reduction, which no template covers")
        dims = {r.attrs[1] for r in reduces}
        ranks = {len(r.args[0].shape) for r in reduces}
        if len(dims) != 1 or len(ranks) != 1:
            raise Unsupported("reductions over different dims, which no template covers")
        if is_full(lowered):
            return FullReduceTemplate.plan(problem, traced, lowered)
        (d,), (rank,) = dims, ranks
        if d == tuple(range(rank - len(d), rank)):
            return RowsTemplate.plan(problem, traced, lowered)
        return ReduceDimTemplate.plan(problem, traced, lowered)
    return _elementwise_plan(problem, traced, lowered)
