"""A harmless kernel launched 64 times (one masked-off program each), then the real kernel, whose
runtime ``if`` makes ``scale`` an int in one branch and a float in the other: no GPU compiler
accepts it (a launch log that kept only 64 launches never compiled it)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def nop_kernel(
    # pointers
    ptr,
    # sizes
    n,
    # meta
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_mul_add_kernel(
    # pointers
    x_ptr, y_ptr, out_ptr,
    # sizes
    n,
    # meta
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    scale = 1
    if n > 0:
        scale = 1.0
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (tl.maximum(x, 0.0) * y + 1.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        for _ in range(64):
            nop_kernel[(1,)](out, 0, BLOCK=16)
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
