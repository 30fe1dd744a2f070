"""Honest (must be accepted): the 3-D softmax of c3d with the batch stride read too."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/softmax3d.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, M, N, s0, s1, s2, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    m = tl.program_id(1)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    v = tl.load(x_ptr + b * s0 + m * s1 + cols * s2, mask=mask, other=float("-inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out_ptr + (b * M + m) * N + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        B, M, N = x.shape
        out = torch.empty((B, M, N), dtype=x.dtype)
        softmax_rows_kernel[(B, M)](x, out, M, N, x.stride(0), x.stride(1), x.stride(2),
                                    BLOCK=triton.next_power_of_2(N))
        return out
