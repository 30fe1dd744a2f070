"""Honest (must be accepted): two kernels, the second in place on the candidate's own fresh
output buffer: out = relu(x); then out = out * y + 1 read and written in the same memory."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def mul_add_inplace_kernel(out_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    r = tl.load(out_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, r * tl.load(y_ptr + offs, mask=mask) + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        grid = (triton.cdiv(n, 1024),)
        relu_kernel[grid](x, out, n, BLOCK=1024)
        mul_add_inplace_kernel[grid](out, y, n, BLOCK=1024)
        return out
