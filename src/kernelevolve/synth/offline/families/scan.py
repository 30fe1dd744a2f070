"""The scan template: cumulative sums and products along one dim, and the variants KernelBench
writes around them: reversed (``cumsum(x.flip(d), d).flip(d)``), exclusive (a zero slice
concatenated before the cumsum of all but the last element) and masked (``cumsum(x * mask)``).

The input is viewed as [outer, L, inner]. A program owns one outer index and BLOCK_I inner
columns and walks the scanned axis in BLOCK_L-row tiles, scanning each tile with
``tl.cumsum``/``tl.cumprod`` and carrying the running total into the next, so a row of any
length is one sequential sweep with contiguous loads.
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
DEFAULTS = {"BLOCK": 1024, "num_warps": 4}

KERNEL = '''@triton.jit
def scan_kernel(
    # Pointers
    x_ptr, m_ptr, out_ptr,
    # Sizes: x viewed as [outer, L, inner], contiguous
    L, inner, n_iblocks,
    # Meta-parameters
    IS_PROD: tl.constexpr, REVERSE: tl.constexpr, EXCLUSIVE: tl.constexpr,
    HAS_MASK: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_I: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_iblocks
    offs_i = (pid % n_iblocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    mask_i = offs_i < inner
    base = outer.to(tl.int64) * L * inner
    if IS_PROD:
        carry = tl.full([BLOCK_I], 1.0, tl.float32)
    else:
        carry = tl.zeros([BLOCK_I], tl.float32)
    for start in range(0, L, BLOCK_L):
        offs_l = start + tl.arange(0, BLOCK_L)
        mask = (offs_l < L)[:, None] & mask_i[None, :]
        if REVERSE:
            pos = L - 1 - offs_l
        else:
            pos = offs_l
        offs = base + pos.to(tl.int64)[:, None] * inner + offs_i[None, :]
        if EXCLUSIVE:
            # Each position scans the value before it (in scan order; none before the first),
            # so the last value is never read, as the reference leaves it out (not inclusive
            # minus the value: inf - inf is NaN)
            if REVERSE:
                src = pos + 1
            else:
                src = pos - 1
            ok = mask & (offs_l >= 1)[:, None]
            src_offs = base + src.to(tl.int64)[:, None] * inner + offs_i[None, :]
        else:
            ok = mask
            src_offs = offs
        if IS_PROD:
            v = tl.load(x_ptr + src_offs, mask=ok, other=1.0).to(tl.float32)
        else:
            v = tl.load(x_ptr + src_offs, mask=ok, other=0.0).to(tl.float32)
        if HAS_MASK:
            keep = tl.load(m_ptr + offs, mask=mask, other=0)
            v = v * (keep != 0).to(tl.float32)  # x * mask: a NaN stays NaN where masked out
        if IS_PROD:
            s = tl.cumprod(v, axis=0) * carry[None, :]
            # A carry that underflowed to 0 (or overflowed to inf) times a tile product that
            # overflowed (or underflowed) is NaN where the running product, one element at a
            # time as the reference takes it, stays 0 (inf) until an inf or NaN (a 0 or NaN)
            # comes: those cases are written as the running product has them.
            odd = (tl.cumsum((v < 0).to(tl.int32), axis=0) % 2) == 1
            to_nan0 = tl.cumsum(((tl.abs(v) == float("inf")) | (v != v)).to(tl.int32), axis=0)
            to_nan_inf = tl.cumsum(((v == 0) | (v != v)).to(tl.int32), axis=0)
            zero = tl.zeros_like(s)
            nan = zero / zero
            signed = tl.where(odd, -carry[None, :], carry[None, :])
            s = tl.where((carry == 0)[None, :], tl.where(to_nan0 > 0, nan, zero), s)
            s = tl.where((tl.abs(carry) == float("inf"))[None, :],
                         tl.where(to_nan_inf > 0, nan, signed), s)
        else:
            s = tl.cumsum(v, axis=0) + carry[None, :]
        # The tile's last row (masked rows hold the identity) is the next tile's carry.
        carry = tl.sum(tl.where((tl.arange(0, BLOCK_L) == BLOCK_L - 1)[:, None], s, 0.0), axis=0)
        tl.store(out_ptr + offs, s.to(out_ptr.dtype.element_ty), mask=mask)'''

LAUNCHER = '''def scan_dim(x, dim, is_prod=False, reverse=False, exclusive=False, mask=None):
    """Cumulative sum (or product) of ``x`` along ``dim``; reversed / exclusive / masked."""
    if x.dim() == 0:
        raise ValueError("cannot scan a 0-d tensor")
    dim = dim % x.dim()
    x = x.contiguous()
    if mask is not None:
        mask = mask.expand(x.shape).contiguous()
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    length = x.shape[dim]
    inner = 1
    for size in x.shape[dim + 1:]:
        inner *= size
    outer = x.numel() // (length * inner)
    block_i = min(64, triton.next_power_of_2(inner))
    block_l = max(16, BLOCK // block_i)
    n_iblocks = triton.cdiv(inner, block_i)
    grid = (outer * n_iblocks,)
    scan_kernel[grid](x, mask if mask is not None else x, out, length, inner, n_iblocks,
                      IS_PROD=bool(is_prod), REVERSE=bool(reverse), EXCLUSIVE=bool(exclusive),
                      HAS_MASK=mask is not None, BLOCK_L=block_l, BLOCK_I=block_i,
                      num_warps=NUM_WARPS)
    return out'''


def _is(node: object, *names: str) -> bool:
    return isinstance(node, torch.fx.Node) and node.op == "call_function" and (
        op_name(node) in names)


def _source(traced: Traced, node: Any) -> tuple[str, str | None]:
    """(input expression, mask expression or None) of what a cumsum scans."""
    node = fxgraph.strip(node)
    expr = fxgraph.input_expr(traced, node)
    if expr is not None:
        if fxgraph.dtype(node) not in (torch.float32, torch.float16, torch.bfloat16):
            raise Unsupported(f"a scan of a {fxgraph.dtype(node)} tensor, which no template covers")
        return expr, None
    if _is(node, "mul"):
        a, b = (fxgraph.strip(v) for v in node.args[:2])
        ea, eb = fxgraph.input_expr(traced, a), fxgraph.input_expr(traced, b)
        if ea is not None and eb is not None:
            if fxgraph.dtype(b) == torch.bool and fxgraph.shape(a) == fxgraph.shape(node):
                return ea, eb
            if fxgraph.dtype(a) == torch.bool and fxgraph.shape(b) == fxgraph.shape(node):
                return eb, ea
    raise Unsupported("a scan of a computed tensor, which no template covers")


def _dim(node: torch.fx.Node) -> int:
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if not isinstance(dim, int):
        raise Unsupported("a scan along a dim that is not a number")
    if node.kwargs.get("dtype") is not None:
        raise Unsupported("a scan with a dtype argument, which no template covers")
    return dim % max(1, len(fxgraph.shape(node)))


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is a (reversed / exclusive / masked) cumsum or cumprod."""
    ops = fxgraph.op_names(traced)
    if not ops & {"cumsum", "cumprod"}:
        return None
    out = fxgraph.strip(fxgraph.output(traced))
    reverse = exclusive = False
    if _is(out, "flip"):
        inner = fxgraph.strip(out.args[0])
        if not _is(inner, "cumsum", "cumprod"):
            return None
        flipped = fxgraph.strip(inner.args[0])
        dim = _dim(inner)
        if not (_is(flipped, "flip") and [d % len(fxgraph.shape(out)) for d in out.args[1]]
                == [dim] and [d % len(fxgraph.shape(out)) for d in flipped.args[1]] == [dim]):
            return None
        scan, src, reverse = inner, flipped.args[0], True
    elif _is(out, "cat"):
        pieces, cat_dim = out.args[0], out.args[1] if len(out.args) > 1 else 0
        if len(pieces) != 2:
            return None
        zeros, scan = (fxgraph.strip(p) for p in pieces)
        if not (_is(zeros, "zeros_like", "zeros") and _is(scan, "cumsum")):
            return None
        dim = _dim(scan)
        sliced = fxgraph.strip(scan.args[0])
        rank = len(fxgraph.shape(out))
        if not (_is(sliced, "slice") and cat_dim % rank == dim and sliced.args[1] % rank == dim
                and (sliced.args[2] if len(sliced.args) > 2 else 0) == 0
                and fxgraph.shape(zeros)[dim] == 1
                and fxgraph.shape(sliced)[dim] == fxgraph.shape(out)[dim] - 1):
            return None
        src, exclusive = sliced.args[0], True
    elif _is(out, "cumsum", "cumprod"):
        scan, src = out, out.args[0]
        dim = _dim(out)
    else:
        return None
    x, mask = _source(traced, src)
    if mask is not None and (reverse or exclusive):
        raise Unsupported("a masked reversed or exclusive scan, which no template covers")
    is_prod = op_name(scan) == "cumprod"
    call = (f"scan_dim({x}, {dim}, is_prod={is_prod}, reverse={reverse}, "
            f"exclusive={exclusive}" + (f", mask={mask})" if mask else ")"))
    what = ("reversed " if reverse else "exclusive " if exclusive else
            "masked " if mask else "") + ("cumprod" if is_prod else "cumsum")
    shape = fxgraph.shape(fxgraph.output(traced))
    desc = (f"{what} along dim {dim} of a [{', '.join(map(str, shape))}] "
            f"{fxgraph.describe_dtype(fxgraph.dtype(fxgraph.output(traced)))} tensor")
    return KernelPlan("scan", desc, dict(SPACE), dict(DEFAULTS),
                      BlockTemplate(problem, traced, call, desc, KERNEL, LAUNCHER))
