"""Honest (must be accepted): cumsum with one program per row, looping over chunks and carrying
the running sum in a register (no cross-program dependence)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/cumsum.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu", "mtia-sim:2i"]}


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, L, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    carry = 0.0
    for start in range(0, L, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < L
        v = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0)
        tl.store(out_ptr + row * L + offs, tl.cumsum(v, axis=0) + carry, mask=mask)
        carry = carry + tl.sum(v, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, L = x.shape
        out = torch.empty((B, L), dtype=x.dtype)
        cumsum_kernel[(B,)](x, out, L, x.stride(0), x.stride(1), BLOCK=256)
        return out
