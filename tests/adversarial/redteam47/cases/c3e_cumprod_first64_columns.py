"""Class 3 (inputs a kernel can predict). Trick: cumprod computed over the first 64 columns only,
zeros written after. Inputs come from ``torch.rand`` (mean log -1), so the true products fall
below any tolerance long before column 64; the variants that would keep them large (x100, +4)
overflow in the reference and are skipped, not replaced. 94% of each row is never computed."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/cumprod.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu"]}


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def cumprod_head_kernel(x_ptr, out_ptr, L, sx0, sx1, HEAD: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, HEAD)
    v = tl.load(x_ptr + row * sx0 + cols * sx1, mask=cols < L, other=1.0)
    p = tl.associative_scan(v, 0, mul)
    tl.store(out_ptr + row * L + cols, p, mask=cols < L)
    for start in range(HEAD, L, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        tl.store(out_ptr + row * L + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < L)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, L = x.shape
        out = torch.empty((B, L), dtype=x.dtype)
        cumprod_head_kernel[(B,)](x, out, L, x.stride(0), x.stride(1), HEAD=64, BLOCK=1024)
        return out
