"""The comparison's figures in one pass on the GPU: a Triton kernel of the judge's own.

At KernelBench's sizes an output holds billions of elements; the same figures computed with
torch ops (compare._chunk_errors: a dozen elementwise passes and reductions per chunk) took
~0.14 s per comparison of a 6 GB output on an H200, and an evaluation makes fifteen. This
reads each element of the reference and the candidate's output once. The formulas are those of
``compare._chunk_errors`` (tests check both agree, in Triton's interpreter).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024
MAX_PROGRAMS = 8192


@triton.jit
def _errors_kernel(e_ptr, a_ptr, counts_ptr, maxes_ptr, n, iters, atol, rtol,
                   BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    bad_n = tl.zeros([BLOCK], dtype=tl.int32)
    nonfinite_n = tl.zeros([BLOCK], dtype=tl.int32)
    max_abs = tl.zeros([BLOCK], dtype=tl.float32)
    max_rel = tl.zeros([BLOCK], dtype=tl.float32)
    for it in range(0, iters):
        offs = (pid.to(tl.int64) * iters + it) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        e = tl.load(e_ptr + offs, mask=m, other=0.0).to(tl.float32)
        a = tl.load(a_ptr + offs, mask=m, other=0.0).to(tl.float32)
        e_fin = (e - e) == 0.0  # inf - inf and NaN - NaN are NaN
        a_fin = (a - a) == 0.0
        both = e_fin & a_fin
        same_nonfinite = (a == e) | ((a != a) & (e != e))
        nonfinite_bad = (both == 0) & (same_nonfinite == 0) & m
        abs_e = tl.abs(e)
        diff = tl.where(both, tl.abs(a - e), 0.0)
        rel = tl.where(abs_e > atol, diff / tl.maximum(abs_e, 1e-12), 0.0)
        bad = ((diff > atol + rtol * abs_e) | nonfinite_bad) & m
        bad_n += bad.to(tl.int32)
        nonfinite_n += nonfinite_bad.to(tl.int32)
        max_abs = tl.maximum(max_abs, tl.where(m, diff, 0.0))
        max_rel = tl.maximum(max_rel, tl.where(m, rel, 0.0))
    tl.store(counts_ptr + pid * 2, tl.sum(bad_n.to(tl.int64), axis=0))
    tl.store(counts_ptr + pid * 2 + 1, tl.sum(nonfinite_n.to(tl.int64), axis=0))
    tl.store(maxes_ptr + pid * 2, tl.max(max_abs, axis=0))
    tl.store(maxes_ptr + pid * 2 + 1, tl.max(max_rel, axis=0))


@triton.jit
def _scale_kernel(e_ptr, sums_ptr, counts_ptr, n, iters, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    count = tl.zeros([BLOCK], dtype=tl.int32)
    for it in range(0, iters):
        offs = (pid.to(tl.int64) * iters + it) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        e = tl.load(e_ptr + offs, mask=m, other=0.0).to(tl.float32)
        fin = ((e - e) == 0.0) & m
        total += tl.where(fin, tl.abs(e), 0.0)
        count += fin.to(tl.int32)
    tl.store(sums_ptr + pid, tl.sum(total, axis=0))
    tl.store(counts_ptr + pid, tl.sum(count.to(tl.int64), axis=0))


def _grid(n: int) -> tuple[int, int]:
    blocks = triton.cdiv(max(n, 1), BLOCK)
    programs = min(blocks, MAX_PROGRAMS)
    return programs, triton.cdiv(blocks, programs)


def supported(t: torch.Tensor) -> bool:
    """Outputs this module compares: fp32 and narrower floats on a GPU."""
    return t.is_cuda and t.dtype in (torch.float32, torch.float16, torch.bfloat16)


def errors(e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float
           ) -> tuple[int, int, float, float]:
    """(wrong elements, wrong non-finite elements, max |a - e|, max relative error) of two
    flat, contiguous tensors."""
    n = e.numel()
    programs, iters = _grid(n)
    counts = torch.zeros(programs * 2, dtype=torch.int64, device=e.device)
    maxes = torch.zeros(programs * 2, dtype=torch.float32, device=e.device)
    _errors_kernel[(programs,)](e, a, counts, maxes, n, iters, float(atol), float(rtol),
                                BLOCK=BLOCK)
    c = counts.view(programs, 2).sum(0).tolist()
    mx = maxes.view(programs, 2).amax(0).tolist()
    return int(c[0]), int(c[1]), float(mx[0]), float(mx[1])


def mean_magnitude(e: torch.Tensor) -> float:
    """The mean |e| over finite elements of a flat, contiguous tensor (0.0 when none are)."""
    n = e.numel()
    programs, iters = _grid(n)
    sums = torch.zeros(programs, dtype=torch.float32, device=e.device)
    counts = torch.zeros(programs, dtype=torch.int64, device=e.device)
    _scale_kernel[(programs,)](e, sums, counts, n, iters, BLOCK=BLOCK)
    count = int(counts.sum().item())
    return float(sums.double().sum().item()) / count if count else 0.0
