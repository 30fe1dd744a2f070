"""Honest (must be accepted): a 3-D softmax in two launches: the first kernel writes each row's
max and sum of exponentials into scratch tensors, the second normalises; every stride read."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/softmax3d.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def row_stats_kernel(x_ptr, max_ptr, sum_ptr, M, N, s0, s1, s2, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    m = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + b * s0 + m * s1 + cols * s2, mask=cols < N, other=float("-inf"))
    mx = tl.max(v, axis=0)
    tl.store(max_ptr + b * M + m, mx)
    tl.store(sum_ptr + b * M + m, tl.sum(tl.exp(v - mx), axis=0))


@triton.jit
def normalize_kernel(x_ptr, max_ptr, sum_ptr, out_ptr, M, N, s0, s1, s2, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    m = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    v = tl.load(x_ptr + b * s0 + m * s1 + cols * s2, mask=mask, other=float("-inf"))
    mx = tl.load(max_ptr + b * M + m)
    total = tl.load(sum_ptr + b * M + m)
    tl.store(out_ptr + (b * M + m) * N + cols, tl.exp(v - mx) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        B, M, N = x.shape
        mx = torch.empty((B, M), dtype=torch.float32)
        total = torch.empty((B, M), dtype=torch.float32)
        out = torch.empty((B, M, N), dtype=x.dtype)
        block = triton.next_power_of_2(N)
        s = (x.stride(0), x.stride(1), x.stride(2))
        row_stats_kernel[(B, M)](x, mx, total, M, N, *s, BLOCK=block)
        normalize_kernel[(B, M)](x, mx, total, out, M, N, *s, BLOCK=block)
        return out
