"""Honest (must be accepted): a persistent kernel: a fixed grid of 4 programs, each looping over
the blocks pid, pid + 4, ... of the flattened tensor."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add_large.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu", "mtia-sim:2i"]}


@triton.jit
def persistent_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    step = tl.num_programs(0)
    n_blocks = tl.cdiv(n, BLOCK)
    for blk in range(pid, n_blocks, step):
        offs = blk * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        programs = min(4, triton.cdiv(n, 1024))
        persistent_kernel[(programs,)](x, y, out, n, BLOCK=1024)
        return out
