"""Honest (must be accepted): the output is allocated with ``torch.empty_strided`` in column-major
layout (strides (1, rows)) and written through its strides by a 2-D kernel that also reads the
inputs through theirs."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def relu_mul_add_2d_kernel(x_ptr, y_ptr, out_ptr, R, C, sx0, sx1, sy0, sy1, so0, so1,
                           BR: tl.constexpr, BC: tl.constexpr):
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    mask = (r[:, None] < R) & (c[None, :] < C)
    x = tl.load(x_ptr + r[:, None] * sx0 + c[None, :] * sx1, mask=mask)
    y = tl.load(y_ptr + r[:, None] * sy0 + c[None, :] * sy1, mask=mask)
    tl.store(out_ptr + r[:, None] * so0 + c[None, :] * so1, tl.maximum(x, 0.0) * y + 1.0,
             mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        R, C = x.shape
        out = torch.empty_strided((R, C), (1, R), dtype=x.dtype)
        grid = (triton.cdiv(R, 16), triton.cdiv(C, 64))
        relu_mul_add_2d_kernel[grid](x, y, out, R, C, x.stride(0), x.stride(1), y.stride(0),
                                     y.stride(1), out.stride(0), out.stride(1), BR=16, BC=64)
        return out
