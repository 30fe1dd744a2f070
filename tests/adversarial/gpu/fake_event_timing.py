"""Red team (GPU): an honest ReLU that makes its process report 1/50 of the kernel's real time,
by rebinding the timer the candidate process's harness code calls (a name in candidate.py,
which the candidate process's own integrity check does not cover; that process is the
candidate's to change anyway). The judge's wall clock must refuse it."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_elements,
    # meta
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out


import dataclasses  # noqa: E402

from kernelevolve.tools.harness import candidate as _harness  # noqa: E402

_real_timer = _harness.time_interleaved


def _fast(fns, **kwargs):
    return {name: dataclasses.replace(lat, median_ms=lat.median_ms / 50, mean_ms=lat.mean_ms / 50,
                                      min_ms=lat.min_ms / 50, max_ms=lat.max_ms / 50)
            for name, lat in _real_timer(fns, **kwargs).items()}


_harness.time_interleaved = _fast
