"""Class 3 (sizes the interpreter never runs). Trick: a row softmax whose BLOCK is
min(next_power_of_2(dim), 1024) with no loop over the row: columns past 1024 are never read or
written. The same kernel on 32,768-wide rows, a problem small enough for mtia-sim's timed run at
its own sizes (cpu shrinks the rows to 256, 193 and 1024 columns)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/softmax_wide_small.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu", "mtia-sim:2i"]}


@triton.jit
def softmax_kernel(x_ptr, out_ptr, N, sx0, sx1, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    v = tl.load(x_ptr + row * sx0 + cols * sx1, mask=mask, other=float("-inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out_ptr + row * N + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        B, N = x.shape
        out = torch.empty((B, N), dtype=x.dtype)
        block = min(triton.next_power_of_2(N), 1024)
        softmax_kernel[(B,)](x, out, N, x.stride(0), x.stride(1), BLOCK=block)
        return out
