"""The arg-reduction template: ``torch.argmax`` / ``torch.argmin`` along one dim.

The input is viewed as [outer, L, inner]; a program owns one outer index and BLOCK_I inner
columns and walks the reduced axis in BLOCK_L-row tiles, keeping the best value and the first
index that holds it (torch's tie rule), so loads stay contiguous along the inner dim and a row
of any length is one sweep.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelevolve.problem import Problem

from ..emit.block import BlockTemplate
from ..frontend import fxgraph
from ..frontend.lower import op_name
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported

SPACE = {"BLOCK": (256, 512, 1024, 2048, 4096), "num_warps": (1, 2, 4, 8)}
DEFAULTS = {"BLOCK": 2048, "num_warps": 4}

KERNEL = '''@triton.jit
def argreduce_kernel(
    # Pointers
    x_ptr, out_ptr,
    # Sizes: x viewed as [outer, L, inner], contiguous
    L, inner, n_iblocks,
    # Meta-parameters
    IS_MAX: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_iblocks
    offs_i = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    mask_i = offs_i < inner
    base = outer.to(tl.int64) * L * inner
    if IS_MAX:
        best = tl.full([BLOCK_I], -float("inf"), tl.float32)
    else:
        best = tl.full([BLOCK_I], float("inf"), tl.float32)
    best_idx = tl.zeros([BLOCK_I], tl.int64)
    for start in range(0, L, BLOCK_L):
        offs_l = start + tl.arange(0, BLOCK_L)
        mask = (offs_l < L)[:, None] & mask_i[None, :]
        offs = base + offs_l.to(tl.int64)[:, None] * inner + offs_i[None, :]
        # torch takes a NaN as the max (and the min): the first NaN's index wins, and once
        # the best is NaN no later tile beats it (tl.max and tl.min would skip NaN)
        if IS_MAX:
            v = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
            m = tl.reduce(v, 0, max_nan)
            better = (m > best) | ((m != m) & (best == best))
        else:
            v = tl.load(x_ptr + offs, mask=mask, other=float("inf")).to(tl.float32)
            m = tl.reduce(v, 0, min_nan)
            better = (m < best) | ((m != m) & (best == best))
        # (v != v holds only where the column's m is NaN too)
        hit = ((v == m[None, :]) | (v != v)) & mask
        idx = tl.min(tl.where(hit, offs_l[:, None], L), axis=0).to(tl.int64)
        # Strictly better only: the earlier tile keeps ties (and an all -inf column keeps 0).
        best_idx = tl.where(better, idx, best_idx)
        best = tl.where(better, m, best)
    tl.store(out_ptr + outer * inner + offs_i, best_idx, mask=mask_i)'''

LAUNCHER = '''def arg_reduce(x, dim, is_max, keepdim=False):
    """The index of the max (or min) of ``x`` along ``dim`` (the first one on ties)."""
    if x.dim() == 0:
        raise ValueError("argmax/argmin of a 0-d tensor")
    dim = dim % x.dim()
    x = x.contiguous()
    length = x.shape[dim]
    if length == 0:
        raise ValueError("cannot reduce over an empty dim")
    inner = 1
    for size in x.shape[dim + 1:]:
        inner *= size
    shape = list(x.shape)
    shape[dim] = 1
    out = torch.empty(shape if keepdim else shape[:dim] + shape[dim + 1:], dtype=torch.int64,
                      device=x.device)
    if out.numel() == 0:
        return out
    outer = x.numel() // (length * inner)
    block_i = min(64, triton.next_power_of_2(inner))
    block_l = max(16, BLOCK // block_i)
    n_iblocks = triton.cdiv(inner, block_i)
    argreduce_kernel[(outer * n_iblocks,)](x, out, length, inner, n_iblocks, IS_MAX=bool(is_max),
                                           BLOCK_L=block_l, BLOCK_I=block_i,
                                           num_warps=NUM_WARPS)
    return out'''


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is ``argmax``/``argmin`` of an input along a dim."""
    out = fxgraph.strip(fxgraph.output(traced))
    if not (isinstance(out, torch.fx.Node) and out.op == "call_function"
            and op_name(out) in {"argmax", "argmin"}):
        return None
    x = fxgraph.strip(out.args[0])
    expr = fxgraph.input_expr(traced, x)
    if expr is None:
        raise Unsupported(f"{op_name(out)} of a computed tensor, which no template covers")
    if fxgraph.dtype(x) not in (torch.float32, torch.float16, torch.bfloat16):
        raise Unsupported(f"{op_name(out)} of a {fxgraph.dtype(x)} tensor")
    dim: Any = out.args[1] if len(out.args) > 1 else out.kwargs.get("dim")
    if dim is None:
        raise Unsupported(f"{op_name(out)} over all elements, which no template covers")
    keepdim = bool(out.args[2] if len(out.args) > 2 else out.kwargs.get("keepdim", False))
    rank = len(fxgraph.shape(x))
    dim = int(dim) % rank
    is_max = op_name(out) == "argmax"
    call = f"arg_reduce({expr}, {dim}, {is_max}, {keepdim})"
    desc = (f"{op_name(out)} along dim {dim} of a [{', '.join(map(str, fxgraph.shape(x)))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(x))} tensor")
    return KernelPlan("argreduce", desc, dict(SPACE), dict(DEFAULTS),
                      BlockTemplate(problem, traced, call, desc, KERNEL, LAUNCHER))
