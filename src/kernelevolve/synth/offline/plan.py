"""KernelPlan: what the offline synthesizer found it can write, and its tunable parameter space."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

OPERATOR_CLASSES = (
    "elementwise", "softmax", "log_softmax", "layernorm", "rmsnorm", "reduction", "l2norm",
    "matmul", "library_epilogue",
    "rowwise",  # other fused row programs: elementwise ops around reductions over the last dims
    # whole-operator templates (families/, tried first by analyze.py)
    "convolution", "pooling", "normalization", "scan", "argreduce", "loss", "full_reduction",
    "attention",
    "program",  # several parts, each one template's (program.py)
)


class Unsupported(Exception):
    """The offline synthesizer cannot write this operator. This is data (the search falls back to
    another synthesizer or stops), not a KernelEvolveError: ``str(exc)`` is the plain reason."""


class Template(Protocol):
    """A parameterised kernel family for one analysed problem."""

    def render(self, params: Mapping[str, int]) -> str: ...

    def feasible(self, params: Mapping[str, int]) -> str | None:
        """Why ``params`` would not run well on a GPU (too many registers, too much shared
        memory), or None. Mutation avoids infeasible points; rendering does not refuse them."""
        ...


@dataclass(frozen=True, eq=False)
class KernelPlan:
    """One operator the offline synthesizer can write: its class, a one-line description, the
    legal values of each tunable parameter, and the template that renders a candidate."""

    operator_class: str
    description: str
    space: dict[str, tuple[int, ...]]
    defaults: dict[str, int] = field(repr=False)
    template: Template = field(repr=False, compare=False)
    # values of ``space`` the search leaves alone unless asked (``searched``): legal to render,
    # kept out for a reason their template gives (a precision that trades range for speed)
    opt_in: dict[str, tuple[int, ...]] = field(default_factory=dict, repr=False)

    def searched(self, opt_in: bool = False) -> KernelPlan:
        """This plan with the space a search explores: without the ``opt_in`` values unless
        ``opt_in`` (the search's setting) asks for them."""
        if opt_in or not self.opt_in:
            return self
        space = {k: tuple(v for v in values if v not in self.opt_in.get(k, ()))
                 for k, values in self.space.items()}
        return replace(self, space=space)

    def default_params(self) -> dict[str, int]:
        """The configuration the template's author would try first."""
        return dict(self.defaults)

    def validate(self, params: Mapping[str, int]) -> dict[str, int]:
        """``params`` as a plain dict, or ValueError naming the bad key or value."""
        missing = sorted(set(self.space) - set(params))
        unknown = sorted(set(params) - set(self.space))
        if missing:
            raise ValueError(f"missing parameter(s) {', '.join(missing)} for the "
                             f"{self.operator_class} template (space: {sorted(self.space)})")
        if unknown:
            raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for the "
                             f"{self.operator_class} template (space: {sorted(self.space)})")
        for key, value in params.items():
            if type(value) is not int or value not in self.space[key]:
                raise ValueError(f"{key}={value!r} is not a legal value; {key} takes "
                                 f"{', '.join(map(str, self.space[key]))}")
        return dict(params)

    def render(self, params: Mapping[str, int]) -> str:
        """The full candidate source (a module defining ``ModelNew``) at ``params``."""
        return self.template.render(self.validate(params))

    def feasible(self, params: Mapping[str, int]) -> str | None:
        return self.template.feasible(self.validate(params))
