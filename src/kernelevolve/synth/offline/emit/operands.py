"""Launcher arguments shared by the templates: distinct operand sources with unique names,
scalar attributes, the output dtype, and how ``ModelNew.forward`` calls the launcher."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ..frontend.ir import Lowered, Operand
from .expr import scalar_arg_name


@dataclass
class Source:
    """One launcher argument: a tensor expression of the forward (an input, a parameter, a view
    of one, or a library call) and the name the launcher gives it."""

    expr: str
    name: str
    rank: int
    library: bool = False


@dataclass
class Signature:
    """The launcher's tensor and scalar arguments, and what each operand is called in it."""

    sources: list[Source]
    operand_names: dict[int, str]  # id(operand) -> name of the tensor inside the launcher
    operand_source: dict[int, Source]
    scalars: dict[str, str]  # attribute expression -> argument name

    @property
    def params(self) -> list[str]:
        return [s.name for s in self.sources] + list(self.scalars.values())

    def call(self, launcher: str) -> list[str]:
        """Lines of ``ModelNew.forward``: library calls first, then the launcher."""
        lines = [f"{s.name} = {s.expr}" for s in self.sources if s.library]
        args = [s.name if s.library else s.expr for s in self.sources]
        args += [f"float({attr})" for attr in self.scalars]
        lines.append(f"return {launcher}({', '.join(args)})")
        return lines


# Names the templates use for their own locals (kernels and launchers), and the patterns of
# their temporaries: a tensor or scalar argument must not shadow them.
_TAKEN = {
    "out", "out_shape", "out_ptrs", "groups", "block", "block_n", "block_m", "block_i", "grid",
    "shape", "size", "n_cols", "n_rows", "n_inner", "n_outer", "n_reduce", "n_blocks", "M", "N",
    "K", "a", "b", "k", "pid", "pid_m", "pid_n", "row", "rows", "cols", "offs", "offs_n",
    "offs_m", "offs_k", "offs_i", "offs_r", "mask", "mask_m", "mask_n", "mask_i", "k_mask",
    "row_mask", "acc", "base", "outer", "batch", "start", "a_ptrs", "b_ptrs", "num_pid_m",
    "num_pid_n", "num_pid_in_group", "group_id", "first_pid_m", "group_size_m", "torch",
    "triton", "tl", "nn", "math", "F", "self", "float", "m_new", "v_masked",
}
_TEMPORARY = re.compile(r"^([vsrpoei]\d+|p\d+_\d+|rest\d+|size_\d+|s_\w+|stride_\w+|acc\d+_\d+"
                        r"|m_run\d*)$")


def _unique(name: str, taken: set[str]) -> str:
    name = re.sub(r"\W+", "_", name).strip("_") or "t"
    if name[0].isdigit():
        name = "t_" + name
    if name in _TAKEN or _TEMPORARY.match(name) or name.isupper():
        name += "_in"
    base, k = name, 2
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    taken.add(name)
    return name


def signature(lowered: Lowered, reserved: set[str] | None = None,
              extra: list[Operand] | None = None, forward_args: list[str] | None = None
              ) -> Signature:
    """Launcher arguments for the DAG's operands (``extra`` first: a matmul's inputs). Library
    results become locals of ``ModelNew.forward``, so they avoid its argument names."""
    operands = list(extra or []) + [o for o in lowered.operands if o not in (extra or [])]
    library_exprs = {n.operand.expr for n in lowered.libraries if n.operand is not None}
    taken = set(reserved or ())
    sources: dict[str, Source] = {}
    names: dict[int, str] = {}
    by_operand: dict[int, Source] = {}
    for op in operands:
        src = sources.get(op.expr)
        if src is None:
            library = op.expr in library_exprs
            if library:
                name = _unique(op.label + "_out", taken | set(forward_args or ()))
                taken.add(name)
            else:
                name = _unique(op.label, taken)
            src = Source(op.expr, name, len(op.shape), library)
            sources[op.expr] = src
        by_operand[id(op)] = src
        names[id(op)] = src.name if op.chunk is None else _unique(
            f"{src.name}_{op.chunk[0]}", taken)
    scalars = {}
    for s in lowered.scalars:
        assert s.attr is not None
        scalars[s.attr] = _unique(scalar_arg_name(s.attr), taken)
    return Signature(list(sources.values()), names, by_operand, scalars)


def dtype_expr(dtype: torch.dtype, operands: list[Operand], names: dict[int, str]) -> str:
    """The output dtype as an expression: an operand's runtime dtype when the traced output
    shares it (so an fp16 problem stays fp16), else the literal."""
    for op in operands:
        if op.dtype == dtype:
            return f"{names[id(op)]}.dtype"
    return f"torch.{str(dtype).removeprefix('torch.')}"

