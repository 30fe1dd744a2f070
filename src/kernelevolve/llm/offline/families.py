"""The whole-operator templates, tried before the expression-DAG lowering: each matches the
traced graph of one operator family and returns a plan, or None when the graph is not one of
its own (the lowering then decides). They raise Unsupported when the graph is theirs but some
detail is not covered."""

from __future__ import annotations

from collections.abc import Callable

from kernelevolve.problem import Problem

from . import argreduce, attention, conv, loss, norm, pool, scan
from .plan import KernelPlan
from .trace import Traced

MATCHERS: list[Callable[[Problem, Traced], KernelPlan | None]] = [
    conv.plan, pool.plan, norm.plan, scan.plan, argreduce.plan, loss.plan, attention.plan]


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The first whole-operator plan that matches, or None."""
    for matcher in MATCHERS:
        found = matcher(problem, traced)
        if found is not None:
            return found
    return None
