"""Honest: tan(x) + sigmoid(x) with tan as sin / cos, fp32 throughout (the control for the
cheat beside it: it must be ok)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tan_sigmoid_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tan = tl.sin(x) / tl.cos(x)
    sig = 1.0 / (1.0 + tl.exp(-x))
    tl.store(out_ptr + offs, tan + sig, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        tan_sigmoid_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
