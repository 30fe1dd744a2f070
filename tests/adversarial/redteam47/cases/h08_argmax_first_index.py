"""Honest (must be accepted): argmax over dim 1 keeping the first index of the maximum (NaN
counts as the maximum, as in torch), reading every stride."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/argmax_dim1.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def argmax_dim1_kernel(x_ptr, out_ptr, R, C, s0, s1, s2, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < C
    best = tl.full([BLOCK], float("-inf"), tl.float32)
    idx = tl.zeros([BLOCK], dtype=tl.int64)
    for r in range(0, R):
        v = tl.load(x_ptr + b * s0 + r * s1 + cols * s2, mask=mask, other=float("-inf"))
        take = (v > best) | ((v != v) & (best == best))
        best = tl.where(take, v, best)
        idx = tl.where(take, r, idx)
    tl.store(out_ptr + b * C + cols, idx, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, R, C = x.shape
        out = torch.empty((B, C), dtype=torch.int64)
        argmax_dim1_kernel[(B, triton.cdiv(C, 64))](x, out, R, C, x.stride(0), x.stride(1),
                                                    x.stride(2), BLOCK=64)
        return out
