"""Honest (must be accepted): x * sigmoid(gate) * exp(log_scale) with the gate and scale computed
inside the kernel from the parameters on every forward."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/gated_scale.py", "expect": "accepted", "class": "honest",
        "targets": ["cpu"]}


@triton.jit
def gated_scale_kernel(x_ptr, g_ptr, ls_ptr, out_ptr, n, D, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    d = offs % D
    g = tl.load(g_ptr + d, mask=mask)
    ls = tl.load(ls_ptr + d, mask=mask)
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * (1.0 / (1.0 + tl.exp(-g))) * tl.exp(ls), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(dim))
        self.log_scale = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n, D = x.numel(), x.shape[-1]
        gated_scale_kernel[(triton.cdiv(n, 1024),)](x, self.gate, self.log_scale, out, n, D,
                                                    BLOCK=1024)
        return out
