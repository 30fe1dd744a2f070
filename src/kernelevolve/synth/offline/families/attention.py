"""The attention template: ``F.scaled_dot_product_attention(q, k, v)`` without a mask, dropout
or causality (``softmax(q @ k^T * scale) @ v``) in one of two modes, ``WIDE`` picked by the width
of the value heads. The default scale ``1 / sqrt(d)`` is read from the query's width at call
time. The same graph written by hand (``softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d))
@ v``) is matched too.

Narrow heads (``WIDE=0``, the default up to ``WIDE_DV`` value features): one fused
flash-attention kernel that never writes the score matrix. A program owns BLOCK_M queries of one
(batch, head) and BLOCK_DV output features; it walks the keys in BLOCK_N blocks, forming each score
tile from BLOCK_D slices of the features, and keeps a running row max and sum of exponentials
(the online softmax), rescaling its accumulator when the max grows. A BLOCK_M x DV fp32
accumulator must fit in registers, so a head wider than BLOCK_DV takes several programs along the
grid's third axis, and each of them recomputes the whole ``q @ k^T`` tile over all D features.

Wide heads (``WIDE=1``): ``attention_scores_kernel`` forms each [BLOCK_M, BLOCK_N] score tile once
(a matmul over D), writes ``exp(s - m_t)`` into an fp32 workspace with the tile's own row max
``m_t`` and row sum ``l_t``; ``attention_values_kernel`` (a matmul over the keys, one program per
BLOCK_M queries and BLOCK_DV features) combines the tiles' (m_t, l_t) into the row's (m, l),
scales each tile by ``exp(m_t - m)`` as it loads it and divides by ``l`` at the end. No separate
softmax pass: the workspace is written once and read once. Heads go in groups whose workspace
stays under WORKSPACE_BYTES (one head at least: a single head's L x S fp32 scores).

Non-finite scores as torch's SDPA treats them: a row whose scores are all -inf (a query holding
-inf, with positive keys) gets weights 0 and so outputs its zero products with v, not
``exp(-inf - -inf)`` = NaN. Both modes take such a row's exponents from 0 and divide by 1 where
its sum is 0; a +inf score makes the row NaN, as in torch.

Why, at KernelBench level 1 problem 97 (fp32 q, k, v [32, 32, 512, 1024]: BH = 1024 heads,
L = S = 512, D = DV = 1024):

- useful work: q @ k^T and p @ v are 2 * BH * L * S * D = 0.55 TFLOP each, 1.10 TFLOP together;
  q, k, v and the output are 2 GiB each, 8 GiB to move at least.
- one flash kernel: DV / BLOCK_DV programs per query block each recompute q @ k^T: at
  BLOCK_DV = 128, 8 x 0.55 + 0.55 = 4.9 TFLOP (4.5x the useful work); at the widest 256,
  2.75 TFLOP (2.5x). A first pass for the softmax statistics does not help: the second pass
  still recomputes q @ k^T per DV block (3.3 TFLOP at 256). One program walking all DV in chunks
  with its accumulator in global memory reads and writes BLOCK_M x DV per key block:
  S / BLOCK_N * 2 * 2 GiB = 32 GiB more traffic at BLOCK_N = 64.
- scores materialised (this mode): 1.10 TFLOP, no recomputation; the workspace costs
  BH * L * S * 4 B = 1 GiB written and read once (plus 32 MiB of tile statistics at
  BLOCK_N = 64; the DV / BLOCK_DV programs that read one block of rows run one after another,
  so their re-reads come from L2); a separate softmax kernel would have read and written it
  once more (2 GiB).
  With the K-major copy of v for TF32 products (below: 2 GiB read, 2 GiB written), 14 GiB in
  all, 3.1 ms at the H200's 4.8 TB/s, against 3.3 TFLOP of TF32 tensor-core products for
  tf32x3 (three per fp32 product), 6.7 ms at its 495 TFLOPS dense peak: compute-bound, the
  workspace's 2 GiB about 0.45 ms of it. The best one-kernel configuration, 2.75 TFLOP as
  tf32x3, would need 16.7 ms of tensor-core time at the same peak.
- where the modes cross: each extra DV block of the flash kernel recomputes 2 * L * S * D FLOPs
  per head; the workspace costs 8 * L * S bytes per head: D / 4 FLOPs saved per byte moved, past
  the H200's balance for tf32x3 (495 / 3 TFLOPS over 4.8 TB/s, ~35 FLOP/B) from D of about 140
  (for ieee FMA, 67 TFLOPS: ~14 FLOP/B, D of about 56). Value heads up to the widest
  BLOCK_DV (WIDE_DV = 256) need no extra DV block, so they stay narrow. None of this is
  measured on a GPU yet: the plan offers both modes (``WIDE`` in the space) and flags the other
  one infeasible, so the search keeps to the chosen one unless it has nothing else to try.

fp32 products (``TF32X3``, fp32 plans only, as in the matmul template): ``input_precision=
"tf32x3"`` sums three TF32 tensor-core products (hi*hi + hi*lo + lo*hi), fp32-level error;
``TF32X3=0`` takes ``"ieee"`` (FMA units, no tensor cores). Plain TF32 would miss the 1e-4 fp32
tolerance. The interpreter computes every precision exactly. TF32 tensor-core products read both
tiles K-major: q's and k's tiles are (their features, the K of q @ k^T, are contiguous), but v,
p @ v's B operand, has its features contiguous and its keys (the K) strided, so on the GPU it is
first copied with its key axis contiguous, as the matmul template copies b (there measured on
the H200 at 4096^2: 3.96 ms before the copy, 2.01 ms with it). fp16/bf16 tiles go to the tensor
cores, except in the CPU interpreter, which multiplies 16-bit tiles as raw integers, so there
they are upcast first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from kernelevolve.problem import Problem

from ..emit.source import module_source
from ..frontend import fxgraph
from ..frontend.lower import op_name
from ..frontend.trace import Traced
from ..plan import KernelPlan, Unsupported
from .matmul import SMEM_BYTES

SPACE = {"BLOCK_M": (16, 32, 64, 128), "BLOCK_N": (16, 32, 64, 128),
         "BLOCK_D": (16, 32, 64, 128), "BLOCK_DV": (16, 32, 64, 128, 256),
         "num_warps": (2, 4, 8), "WIDE": (0, 1)}
DEFAULTS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_D": 64, "BLOCK_DV": 128, "num_warps": 4,
            "WIDE": 0}
# The score and values kernels are matmuls: the matmul template's fp32 tile rows and warps,
# BLOCK_N (both kernels' key tile) at 64 so that the values kernel's pipelined e and v tiles,
# (128 x 64 + 64 x 128) x 4 B per stage, fit in shared memory.
DEFAULTS_WIDE = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_D": 32, "BLOCK_DV": 128, "num_warps": 8,
                 "WIDE": 1}
WIDE_DV = 256  # the widest BLOCK_DV: wider value heads recompute q @ k^T per block of features
WORKSPACE_BYTES = 2**30  # the fp32 score workspace of one group of heads
# Copies of each dot operand tile in shared memory at Triton's default num_stages: the values
# kernel at the wide defaults compiles for sm_90 to 193 KB, 3 x (128 x 64 + 64 x 128) x 4 B.
PIPELINE_STAGES = 3

# The max a row's exponents are taken from, in both modes
SOFTMAX_BASE = '''@triton.jit
def softmax_base(m):
    # m, except 0 while a row's scores are all -inf (a query holding -inf, with positive
    # keys): its exponents are then exp(-inf) = 0, not exp(-inf - -inf) = NaN, as torch's SDPA
    # gives such a row weights 0
    return tl.where(m == -float("inf"), 0.0, m)'''

KERNEL = '''@triton.jit
def attention_kernel(
    # Pointers: q [BH, L, D], k [BH, S, D] (features contiguous), v [BH, S, DV], out [BH, L, DV]
    q_ptr, k_ptr, v_ptr, out_ptr,
    # Sizes: L queries and S keys per head, D (query/key) and DV (value) features
    L, S, D, DV,
    # Strides of the head and row axes (and of v's features); the other features are contiguous
    s_qb, s_ql, s_kb, s_ks, s_vb, s_vs, s_vd, s_ob, s_ol,
    # The softmax scale
    scale,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_DV: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
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
                # fp32 products at PRECISION (tf32x3 or ieee; the interpreter multiplies 16-bit
                # tiles as raw integers, so they are upcast there)
                scores = tl.dot(q.to(tl.float32), k.to(tl.float32), scores,
                                input_precision=PRECISION)
            else:
                scores = tl.dot(q, k, scores)
        scores = tl.where(mask_n[None, :], scores * scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        m_use = softmax_base(m_new)
        p = tl.exp(scores - m_use[:, None])
        alpha = tl.exp(m_i - m_use)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + bh * s_vb + offs_n[:, None].to(tl.int64) * s_vs
                    + offs_v[None, :].to(tl.int64) * s_vd,
                    mask=mask_n[:, None] & mask_v[None, :], other=0.0)
        if UPCAST:
            acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32), input_precision=PRECISION)
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    # a row of -inf scores has no weight (l 0): its output is its zero products with v
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    out_ptrs = out_ptr + bh * s_ob + offs_m[:, None].to(tl.int64) * s_ol + offs_v[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_v[None, :])'''

SCORES_KERNEL = '''@triton.jit
def attention_scores_kernel(
    # Pointers: q [BH, L, D], k [BH, S, D] (features contiguous); e [BH, L, S] fp32, each score
    # tile's exp(s - m_t); m, l [BH, L, T] fp32, each tile's row max m_t and row sum of e
    q_ptr, k_ptr, e_ptr, m_ptr, l_ptr,
    # Sizes: L queries and S keys per head, D features, T tiles of BLOCK_N keys
    L, S, D, T,
    # Strides of the head and row axes (m and l rows are T long)
    s_qb, s_ql, s_kb, s_ks, s_eb, s_el, s_mb,
    # The softmax scale
    scale,
    # Meta-parameters
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr,
):
    # Key tiles vary fastest: the programs running together share q rows and k in L2.
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    bh = tl.program_id(2).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < L
    mask_n = offs_n < S
    q_ptrs = q_ptr + bh * s_qb + offs_m[:, None].to(tl.int64) * s_ql + offs_d[None, :]
    k_ptrs = k_ptr + bh * s_kb + offs_n[None, :].to(tl.int64) * s_ks + offs_d[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for d0 in range(0, D, BLOCK_D):
        mask_d = offs_d < D - d0
        q = tl.load(q_ptrs, mask=mask_m[:, None] & mask_d[None, :], other=0.0)
        k = tl.load(k_ptrs, mask=mask_d[:, None] & mask_n[None, :], other=0.0)
        if UPCAST:
            # fp32 products at PRECISION (tf32x3 or ieee; the interpreter multiplies 16-bit
            # tiles as raw integers, so they are upcast there)
            acc = tl.dot(q.to(tl.float32), k.to(tl.float32), acc, input_precision=PRECISION)
        else:
            acc = tl.dot(q, k, acc)
        q_ptrs += BLOCK_D
        k_ptrs += BLOCK_D
    scores = tl.where(mask_n[None, :], acc * scale, -float("inf"))
    m_t = tl.max(scores, axis=1)
    # a tile whose scores are all -inf: its exponents 0 and its sum 0
    e = tl.exp(scores - softmax_base(m_t)[:, None])
    e_ptrs = e_ptr + bh * s_eb + offs_m[:, None].to(tl.int64) * s_el + offs_n[None, :]
    tl.store(e_ptrs, e, mask=mask_m[:, None] & mask_n[None, :])
    stats = bh * s_mb + offs_m.to(tl.int64) * T + pid_n
    tl.store(m_ptr + stats, m_t, mask=mask_m)
    tl.store(l_ptr + stats, tl.sum(e, axis=1), mask=mask_m)'''

VALUES_KERNEL = '''@triton.jit
def attention_values_kernel(
    # Pointers: e, m, l from attention_scores_kernel; v [BH, S, DV]; out [BH, L, DV] (features
    # contiguous)
    e_ptr, m_ptr, l_ptr, v_ptr, out_ptr,
    # Sizes: L queries and S keys per head, DV features, T tiles of BLOCK_N keys
    L, S, DV, T,
    # Strides of the head and row axes (and of v's features)
    s_eb, s_el, s_mb, s_vb, s_vs, s_vd, s_ob, s_ol,
    # Meta-parameters (BLOCK_N is attention_scores_kernel's)
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_DV: tl.constexpr,
    UPCAST: tl.constexpr, PRECISION: tl.constexpr,
):
    # Feature blocks vary fastest: the programs running together share e rows and v in L2.
    offs_v = tl.program_id(0) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    offs_m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    bh = tl.program_id(2).to(tl.int64)
    offs_n = tl.arange(0, BLOCK_N)
    mask_m = offs_m < L
    mask_v = offs_v < DV
    stats = m_ptr + bh * s_mb + offs_m.to(tl.int64) * T
    sums = l_ptr + bh * s_mb + offs_m.to(tl.int64) * T
    # The row max and sum of exp over all keys, from the tiles' own (every tile holds a key)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    for t in range(0, T):
        m_t = tl.load(stats + t, mask=mask_m, other=0.0)
        m_new = tl.maximum(m_i, m_t)
        m_use = softmax_base(m_new)
        l_i = l_i * tl.exp(m_i - m_use) + tl.load(sums + t, mask=mask_m, other=1.0) * tl.exp(
            m_t - m_use)
        m_i = m_new
    m_i = softmax_base(m_i)
    e_ptrs = e_ptr + bh * s_eb + offs_m[:, None].to(tl.int64) * s_el + offs_n[None, :]
    v_ptrs = (v_ptr + bh * s_vb + offs_n[:, None].to(tl.int64) * s_vs
              + offs_v[None, :].to(tl.int64) * s_vd)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for t in range(0, T):
        mask_n = offs_n < S - t * BLOCK_N
        e = tl.load(e_ptrs, mask=mask_m[:, None] & mask_n[None, :], other=0.0)
        v = tl.load(v_ptrs, mask=mask_n[:, None] & mask_v[None, :], other=0.0)
        # exp(s - m) = exp(s - m_t) * exp(m_t - m): one exp per row and tile, not per score
        p = e * tl.exp(tl.load(stats + t, mask=mask_m, other=0.0) - m_i)[:, None]
        if UPCAST:
            acc = tl.dot(p, v.to(tl.float32), acc, input_precision=PRECISION)
        else:
            acc = tl.dot(p.to(v.dtype), v, acc)
        e_ptrs += BLOCK_N
        v_ptrs += BLOCK_N * s_vs
    # a row of -inf scores has no weight (l 0): its output is its zero products with v
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    out_ptrs = out_ptr + bh * s_ob + offs_m[:, None].to(tl.int64) * s_ol + offs_v[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask_m[:, None] & mask_v[None, :])'''

_KMAJOR = '''def kmajor_values(v):
    """``v`` [BH, S, DV] as a view of a copy whose key axis is contiguous, its rows of S padded
    to 16 elements: TF32 tensor-core products read p @ v's B operand K-major."""
    s = v.shape[1]
    rows = torch.empty((v.shape[0], v.shape[2], (s + 15) // 16 * 16), dtype=v.dtype,
                       device=v.device)
    out = rows[..., :s]
    out.copy_(v.transpose(1, 2))
    return out.transpose(1, 2)'''

_LAUNCHER = '''def attention(q, k, v, scale):
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
    L, DV = q.shape[-2], v.shape[-1]
    out = torch.empty((*q.shape[:-1], DV), dtype=q.dtype, device=q.device)
    if out.numel() == 0:
        return out
    if k.shape[-2] == 0:
        raise ValueError("attention over zero keys")
    q3, k3, v3 = (t.reshape(-1, t.shape[-2], t.shape[-1]) for t in (q, k, v))
    q3, k3 = (t if t.stride(-1) == 1 else t.contiguous() for t in (q3, k3))
@OPERANDS@
    launch_heads(q3, k3, v3, out.view(-1, L, DV), float(scale), precision,
                 q.device.type == "cpu" or q.dtype == torch.float32)
    return out'''
# How the launcher picks the products' precision and lays out v, per plan dtype
_OPERANDS_FP32 = '''    precision = "tf32x3" if TF32X3 and q.dtype == torch.float32 else "ieee"
    if precision == "tf32x3" and v.device.type == "cuda" and (
            v3.stride(-2) != 1 or v3.stride(-1) % 16):
        # TF32 tensor-core products read both tiles K-major; v (p @ v's B operand) is copied so,
        # one pass over it, far cheaper than the products it speeds up.
        v3 = kmajor_values(v3)
    elif v3.stride(-1) != 1 and v3.stride(-2) != 1:
        v3 = v3.contiguous()'''
_OPERANDS_16 = '''    precision = "ieee"  # read only by the interpreter's upcast products
    if v3.stride(-1) != 1 and v3.stride(-2) != 1:
        v3 = v3.contiguous()'''

_FLASH_LAUNCH = '''def launch_heads(q3, k3, v3, o3, scale, precision, upcast):
    """One flash-attention kernel: a program per BLOCK_M queries, head and BLOCK_DV features."""
    L, D = q3.shape[1], q3.shape[2]
    S, DV = k3.shape[1], v3.shape[2]
    block_d = min(BLOCK_D, max(16, triton.next_power_of_2(D)))
    block_dv = min(BLOCK_DV, max(16, triton.next_power_of_2(DV)))
    grid = (triton.cdiv(L, BLOCK_M), q3.shape[0], triton.cdiv(DV, block_dv))
    attention_kernel[grid](
        q3, k3, v3, o3, L, S, D, DV,
        q3.stride(0), q3.stride(1), k3.stride(0), k3.stride(1), v3.stride(0), v3.stride(1),
        v3.stride(2), o3.stride(0), o3.stride(1), scale,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=block_d, BLOCK_DV=block_dv,
        UPCAST=upcast, PRECISION=precision, num_warps=NUM_WARPS,
    )'''

_WIDE_LAUNCH = '''def launch_heads(q3, k3, v3, o3, scale, precision, upcast):
    """Wide heads: each score tile once (attention_scores_kernel) into an fp32 workspace, then
    softmax @ v per block of value features (attention_values_kernel), heads in groups whose
    workspace stays under @WORKSPACE@ bytes."""
    BH, L, D = q3.shape
    S, DV = k3.shape[1], v3.shape[2]
    block_m = min(BLOCK_M, max(16, triton.next_power_of_2(L)))
    block_n = min(BLOCK_N, max(16, triton.next_power_of_2(S)))
    block_d = min(BLOCK_D, max(16, triton.next_power_of_2(D)))
    block_dv = min(BLOCK_DV, max(16, triton.next_power_of_2(DV)))
    tiles = triton.cdiv(S, block_n)
    row = (S + 15) // 16 * 16  # workspace rows aligned to 16 elements for the tensor cores
    group = max(1, min(BH, 65535, @WORKSPACE@ // (L * row * 4)))
    e = torch.empty((group, L, row), dtype=torch.float32, device=q3.device)
    row_max = torch.empty((group, L, tiles), dtype=torch.float32, device=q3.device)
    row_sum = torch.empty_like(row_max)
    for h0 in range(0, BH, group):
        h1 = min(BH, h0 + group)
        q, k, v, o = q3[h0:h1], k3[h0:h1], v3[h0:h1], o3[h0:h1]
        attention_scores_kernel[(tiles, triton.cdiv(L, block_m), h1 - h0)](
            q, k, e, row_max, row_sum, L, S, D, tiles,
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), e.stride(0), e.stride(1),
            row_max.stride(0), scale,
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d, UPCAST=upcast,
            PRECISION=precision, num_warps=NUM_WARPS,
        )
        attention_values_kernel[(triton.cdiv(DV, block_dv), triton.cdiv(L, block_m), h1 - h0)](
            e, row_max, row_sum, v, o, L, S, DV, tiles,
            e.stride(0), e.stride(1), row_max.stride(0), v.stride(0), v.stride(1), v.stride(2),
            o.stride(0), o.stride(1),
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_DV=block_dv, UPCAST=upcast,
            PRECISION=precision, num_warps=NUM_WARPS,
        )'''

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


_MODES = ("as one flash-attention kernel",
          "as two kernels, the scores once and then softmax @ v (value heads too wide for one "
          "flash-attention kernel)")


@dataclass
class AttentionTemplate:
    problem: Problem
    traced: Traced
    args: tuple[str, str, str, str]  # the forward expressions of q, k, v and the scale
    heads: str  # what the description says before the mode
    dtype: torch.dtype
    dv: int  # the traced value width

    def description(self, wide: int) -> str:
        return f"{self.heads} {_MODES[wide]}"

    def feasible(self, params: Mapping[str, int]) -> str | None:
        threads = 32 * params["num_warps"]
        m, n, dv = params["BLOCK_M"], params["BLOCK_N"], params["BLOCK_DV"]
        if not params["WIDE"]:
            if self.dv > WIDE_DV:
                return (f"q @ k^T recomputed by each of the {-(-self.dv // dv)} programs per "
                        f"query block of {self.dv}-wide value heads (WIDE=1 forms it once)")
            regs = (m * (n + dv)) // threads
            if regs > 160:
                return f"{regs} fp32 accumulator registers per thread (spills)"
            return None
        if self.dv <= WIDE_DV:
            return (f"the scores written to memory and read back, though one flash-attention "
                    f"program per query block covers {self.dv} value features (WIDE=0)")
        if m * n // threads > 128:
            return f"a {m * n // threads}-register score tile per thread (spills)"
        if m * (n + dv) // threads > 160:
            return f"{m * (n + dv) // threads} values-kernel registers per thread (spills)"
        size = self.dtype.itemsize
        for what, smem in (("q and k", (m + n) * params["BLOCK_D"] * size),
                           ("workspace and v", m * n * 4 + n * dv * size)):
            if smem * PIPELINE_STAGES > SMEM_BYTES:
                return (f"{smem * PIPELINE_STAGES // 1024} KB of shared memory for the "
                        f"pipelined {what} tiles (limit {SMEM_BYTES // 1024} KB)")
        return None

    def render(self, params: Mapping[str, int]) -> str:
        wide = params["WIDE"]
        consts = {k: params[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_D", "BLOCK_DV")}
        consts["NUM_WARPS"] = params["num_warps"]
        fp32 = self.dtype == torch.float32
        if fp32:
            consts["TF32X3"] = params["TF32X3"]
        launch = _WIDE_LAUNCH.replace("@WORKSPACE@", str(WORKSPACE_BYTES)) if wide else (
            _FLASH_LAUNCH)
        launcher = _LAUNCHER.replace("@OPERANDS@", _OPERANDS_FP32 if fp32 else _OPERANDS_16)
        return module_source(self.problem, self.description(wide), consts,
                             [SOFTMAX_BASE] + ([SCORES_KERNEL, VALUES_KERNEL] if wide
                                               else [KERNEL]),
                             ([_KMAJOR] if fp32 else []) + [launch, launcher],
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
    dtype = fxgraph.dtype(pv)
    dv = fxgraph.shape(pv)[-1]
    template = AttentionTemplate(problem, traced, (q_expr, k_expr, v_expr, scale_expr),
                                 f"scaled dot-product attention over {dims} "
                                 f"{fxgraph.describe_dtype(dtype)} heads", dtype, dv)
    space, defaults = dict(SPACE), dict(DEFAULTS_WIDE if dv > WIDE_DV else DEFAULTS)
    if dtype == torch.float32:
        space["TF32X3"], defaults["TF32X3"] = (1, 0), 1  # 1: tf32x3 tensor cores, 0: ieee FMA
    return KernelPlan("attention", template.description(defaults["WIDE"]), space, defaults,
                      template)
