"""Class 4 (the simulator samples programs) and 3 (sizes never run). Trick: program 1 writes
zeros when the grid has more than 1024 programs. The cpu target never runs the problem's own
sizes (2048 x 1024 is shrunk to 128 x 256, 97 x 193 and 256 x 512: at most 128 programs of
1024), and mtia-sim's timed run at the own sizes (2048 programs) simulates a stratified sample
(first, last, evenly spaced: 0, 32, 65, ...), never program 1, whose writes are never seen."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add_large.py", "expect": "refused",
        "class": "4 interpreter != GPU", "targets": ["cpu", "mtia-sim:2i"]}


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    out = tl.maximum(x, 0.0) * y + 1.0
    bad = (tl.num_programs(0) > 1024) & (pid == 1)
    out = tl.where(bad, 0.0, out)
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
