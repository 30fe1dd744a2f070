"""Honest (must be accepted): cumprod over whole rows, one program per row looping over chunks
and carrying the running product (``tl.associative_scan`` with a jit combine function)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/cumprod.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def mul(a, b):
    return a * b


@triton.jit
def cumprod_kernel(x_ptr, out_ptr, L, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 1.0
    for start in range(0, L, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < L
        v = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=1.0)
        p = tl.associative_scan(v, 0, mul) * carry
        tl.store(out_ptr + row * L + offs, p, mask=mask)
        carry = carry * tl.reduce(v, 0, mul)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, L = x.shape
        out = torch.empty((B, L), dtype=x.dtype)
        cumprod_kernel[(B,)](x, out, L, x.stride(0), x.stride(1), BLOCK=256)
        return out
