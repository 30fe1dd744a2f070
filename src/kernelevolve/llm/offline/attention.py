"""The attention template: ``F.scaled_dot_product_attention(q, k, v)`` without a mask, dropout
or causality, as one fused flash-attention kernel (``softmax(q @ k^T * scale) @ v`` without
writing the score matrix).

A program owns BLOCK_M queries of one (batch, head) and BLOCK_DV output features; it walks the
keys in BLOCK_N blocks, forming each score tile from BLOCK_D slices of the features, and keeps
a running row max and sum of exponentials (the online softmax), rescaling its accumulator when
the max grows. Heads wider than BLOCK_DV take several programs along the grid's third axis.
The default scale ``1 / sqrt(d)`` is read from the query's width at call time. The same graph
written by hand (``softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d)) @ v``) is matched
too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.problem import Problem

from . import fxgraph
from .lower import op_name
from .plan import KernelPlan, Unsupported
from .source import module_source
from .trace import Traced

SPACE = {"BLOCK_M": (16, 32, 64, 128), "BLOCK_N": (16, 32, 64, 128),
         "BLOCK_D": (16, 32, 64, 128), "BLOCK_DV": (16, 32, 64, 128, 256),
         "num_warps": (2, 4, 8)}
DEFAULTS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_D": 64, "BLOCK_DV": 128, "num_warps": 4}

KERNEL = '''@triton.jit
def attention_kernel(
    # Pointers: q [BH, L, D], k [BH, S, D], v [BH, S, DV], out [BH, L, DV] (features contiguous)
    q_ptr, k_ptr, v_ptr, out_ptr,
    # Sizes: L queries and S keys per head, D (query/key) and DV (value) features
    L, S, D, DV,
    # Strides of the head and row axes
    s_qb, s_ql, s_kb, s_ks, s_vb, s_vs, s_ob, s_ol,
    # The softmax scale
    scale,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr, UPCAST: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_v = tl.program_id(2) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < L
    mask_v = offs_v < DV
    q_rows = q_ptr + bh * s_qb + offs_m[:, None].to(tl.int64) * s_ql
    # Online softmax state: running max and sum of exp per query row, fp32
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for start in range(0, S, BLOCK_N):
        offs_n = start + tl.arange(0, BLOCK_N)
        mask_n = offs_n < S
        k_cols = k_ptr + bh * s_kb + offs_n[None, :].to(tl.int64) * s_ks
        scores = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for d0 in range(0, D, BLOCK_D):
            dd = d0 + offs_d
            mask_d = dd < D
            q = tl.load(q_rows + dd[None, :], mask=mask_m[:, None] & mask_d[None, :], other=0.0)
            k = tl.load(k_cols + dd[:, None], mask=mask_d[:, None] & mask_n[None, :], other=0.0)
            if UPCAST:
                # the interpreter multiplies 16-bit tiles as raw integers; fp32 takes full
                # precision products (TF32 would miss the 1e-4 fp32 tolerance)
                scores = tl.dot(q.to(tl.float32), k.to(tl.float32), scores,
                                input_precision="ieee")
            else:
                scores = tl.dot(q, k, scores)
        scores = tl.where(mask_n[None, :], scores * scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        p = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + bh * s_vb + offs_n[:, None].to(tl.int64) * s_vs + offs_v[None, :],
                    mask=mask_n[:, None] & mask_v[None, :], other=0.0)
        if UPCAST:
            acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32), input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    out_ptrs = out_ptr + bh * s_ob + offs_m[:, None].to(tl.int64) * s_ol + offs_v[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_v[None, :])'''

LAUNCHER = '''def attention(q, k, v, scale):
    """softmax(q @ k^T * scale) @ v over the last two dims; the leading dims are heads."""
    if q.dim() < 2 or k.dim() != q.dim() or v.dim() != q.dim():
        raise ValueError(f"q, k, v must have the same number (>= 2) of dims, got "
                         f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    if q.shape[:-2] != k.shape[:-2] or q.shape[:-2] != v.shape[:-2]:
        raise ValueError(f"q, k, v must share their leading (batch, head) dims, got "
                         f"{list(q.shape)}, {list(k.shape)}, {list(v.shape)}")
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2]:
        raise ValueError(f"k must be [..., S, {q.shape[-1]}] and v [..., S, DV], got "
                         f"{list(k.shape)} and {list(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v have dtypes {q.dtype}, {k.dtype}, {v.dtype}")
    L, D = q.shape[-2], q.shape[-1]
    S, DV = k.shape[-2], v.shape[-1]
    out = torch.empty((*q.shape[:-1], DV), dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    if S == 0:
        raise ValueError("attention over zero keys")
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q, k, v))
    q3, k3, v3 = (t if t.stride(-1) == 1 else t.contiguous() for t in (q3, k3, v3))
    o3 = out.view(-1, L, DV)
    block_d = min(BLOCK_D, max(16, triton.next_power_of_2(D)))
    block_dv = min(BLOCK_DV, max(16, triton.next_power_of_2(DV)))
    grid = (triton.cdiv(L, BLOCK_M), q3.shape[0], triton.cdiv(DV, block_dv))
    attention_kernel[grid](
        q3, k3, v3, o3, L, S, D, DV,
        q3.stride(0), q3.stride(1), k3.stride(0), k3.stride(1), v3.stride(0), v3.stride(1),
        o3.stride(0), o3.stride(1), float(scale),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=block_d, BLOCK_DV=block_dv,
        UPCAST=q.device.type == "cpu" or q.dtype == torch.float32, num_warps=NUM_WARPS,
    )
    return out'''

_SOFTMAX = {"_safe_softmax", "_softmax"}
_VIEWS = fxgraph.PASS_THROUGH | {"expand"}


def _strip(node: object) -> object:
    """``node`` with views and expands that keep its elements peeled off."""
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and (
            op_name(node) in _VIEWS):
        node = node.args[0]
    return node


def _call(node: object, names: set[str]) -> torch.fx.Node | None:
    if isinstance(node, torch.fx.Node) and node.op == "call_function" and op_name(node) in names:
        return node
    return None


def _scaled(traced: Traced, node: object) -> tuple[object, float]:
    """(the tensor, the constant factor) of ``mul(tensor, c)`` or ``div(tensor, c)``, or
    (node, 1.0)."""
    op = _call(node, {"mul", "div"})
    if op is not None and not isinstance(op.args[1], torch.fx.Node) and len(op.args) == 2 and (
            not op.kwargs):
        c = traced.scalar(op, (1,), op.args[1], runtime=False).value
        if op_name(op) == "mul":
            return op.args[0], c
        if c != 0:
            return op.args[0], 1.0 / c
    return node, 1.0


@dataclass
class AttentionTemplate:
    problem: Problem
    traced: Traced
    args: tuple[str, str, str, str]  # the forward expressions of q, k, v and the scale
    description: str

    def feasible(self, params: Mapping[str, int]) -> str | None:
        threads = 32 * params["num_warps"]
        regs = (params["BLOCK_M"] * (params["BLOCK_N"] + params["BLOCK_DV"])) // threads
        if regs > 160:
            return f"{regs} fp32 accumulator registers per thread (spills)"
        return None

    def render(self, params: Mapping[str, int]) -> str:
        consts = {k: params[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_D", "BLOCK_DV")}
        consts["NUM_WARPS"] = params["num_warps"]
        return module_source(self.problem, self.description, consts, [KERNEL], [LAUNCHER],
                             self.traced.forward_args,
                             [f"return attention({', '.join(self.args)})"])


def plan(problem: Problem, traced: Traced) -> KernelPlan | None:
    """The plan when the forward is ``scaled_dot_product_attention(q, k, v)``, else None."""
    ops = fxgraph.op_names(traced)
    if not ops & _SOFTMAX or "bmm" not in ops:
        return None
    if ops - _VIEWS - _SOFTMAX - {"bmm", "mul", "div", "transpose"}:
        return None  # a mask, dropout or causal attention: not this template
    pv = _call(_strip(fxgraph.output(traced)), {"bmm"})
    soft = _call(_strip(pv.args[0]), _SOFTMAX) if pv is not None else None
    # the scale on the scores (``q @ k^T / sqrt(d)``) or on both operands (sdpa's own graph)
    scores, score_scale = _scaled(traced, _strip(soft.args[0])) if soft is not None else (
        None, 1.0)
    qk = _call(_strip(scores), {"bmm"})
    if pv is None or soft is None or qk is None or any(soft.args[2:3]):
        return None  # not attention, or a softmax to another dtype (half_to_float)
    rank = len(fxgraph.shape(soft))
    dim: Any = soft.args[1]
    if int(dim) % rank != rank - 1:
        return None
    q, q_scale = _scaled(traced, _strip(qk.args[0]))
    kt, k_scale = _scaled(traced, _strip(qk.args[1]))
    k = _call(kt, {"transpose"})
    swapped: Any = k.args[1:3] if k is not None else ()
    if k is None or sorted(int(d) % rank for d in swapped) != [rank - 2, rank - 1]:
        return None
    exprs = [fxgraph.input_expr(traced, _strip(n)) for n in (q, k.args[0], pv.args[1])]
    if any(e is None for e in exprs):
        raise Unsupported("attention over computed q, k or v, which no template covers")
    fxgraph.float_inputs_only(traced)
    q_expr, k_expr, v_expr = (str(e) for e in exprs)
    q_shape = fxgraph.shape(_strip(q))  # type: ignore[arg-type]
    if fxgraph.shape(fxgraph.output(traced))[:-1] != q_shape[:-1]:
        raise Unsupported("a view of attention's result, which no template covers")
    scale = q_scale * k_scale * score_scale
    # The default scale is 1/sqrt(d) of the traced width: read it from q at call time.
    default = math.isclose(scale, q_shape[-1] ** -0.5, rel_tol=1e-6)
    # sdpa splits a given scale as sqrt(scale) on each operand: 15 digits undo the rounding
    scale_expr = f"{q_expr}.shape[-1] ** -0.5" if default else repr(float(f"{scale:.15g}"))
    dims = "[" + ", ".join(map(str, q_shape)) + "]"
    desc = (f"scaled dot-product attention over {dims} "
            f"{fxgraph.describe_dtype(fxgraph.dtype(pv))} heads as one flash-attention kernel")
    return KernelPlan("attention", desc, dict(SPACE), dict(DEFAULTS),
                      AttentionTemplate(problem, traced, (q_expr, k_expr, v_expr, scale_expr),
                                        desc))
