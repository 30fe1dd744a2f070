"""A template whose kernel and launcher are fixed source text, tuned by constexprs only.

The families matched on the fx graph (pooling, norms, scans, arg-reductions) each write one
kernel and one launcher; what varies between candidates is the block size, the warps and, for
some, a constexpr of their own (a norm's N_PROGRAMS). This renders them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kernelevolve.problem import Problem

from ..frontend.trace import Traced
from .source import module_source


@dataclass
class BlockTemplate:
    problem: Problem
    traced: Traced
    call: str  # the launcher call the forward returns
    description: str
    kernel: str
    launcher: str
    extra: tuple[str, ...] = ()  # tunable constexprs besides BLOCK and num_warps

    def feasible(self, params: Mapping[str, int]) -> str | None:
        if params["BLOCK"] < 32 * params["num_warps"]:
            return (f"a {params['BLOCK']}-wide block leaves threads of {params['num_warps']} "
                    f"warps idle")
        return None

    def kernels(self) -> list[str]:
        return [self.kernel]

    def render(self, params: Mapping[str, int]) -> str:
        constants = {"BLOCK": params["BLOCK"], **{k: params[k] for k in self.extra},
                     "NUM_WARPS": params["num_warps"]}
        return module_source(self.problem, self.description, constants, self.kernels(),
                             [self.launcher], self.traced.forward_args, [f"return {self.call}"])
