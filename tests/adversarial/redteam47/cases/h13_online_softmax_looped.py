"""Honest (must be accepted): a row softmax over arbitrarily long rows: an online max/sum pass
and a normalising pass, both looping over the row in blocks of 1024."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/softmax_wide_small.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu", "mtia-sim:2i"]}


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * sx0 + cols * sx1, mask=cols < N, other=float("-inf"))
        m_new = tl.maximum(m, v)
        alpha = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * alpha + tl.where(v == float("-inf"), 0.0, tl.exp(v - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    total = tl.sum(s * tl.where(m == float("-inf"), 0.0, tl.exp(m - mx)), axis=0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < N
        v = tl.load(x_ptr + row * sx0 + cols * sx1, mask=mask, other=float("-inf"))
        tl.store(out_ptr + row * N + cols, tl.exp(v - mx) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        B, N = x.shape
        out = torch.empty((B, N), dtype=x.dtype)
        softmax_kernel[(B,)](x, out, N, x.stride(0), x.stride(1), BLOCK=1024)
        return out
