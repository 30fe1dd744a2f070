"""Slack, two outputs: tan(x) exact (the ill-conditioned output that earns a large slack) and
sigmoid(x) + 0.25 (the well-conditioned one, plainly wrong). The slack is per output, so the
second output must still be held to its own tolerance."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tan_sigmoid_pair_kernel(x_ptr, tan_ptr, sig_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(tan_ptr + offs, tl.sin(x) / tl.cos(x), mask=mask)
    tl.store(sig_ptr + offs, 1.0 / (1.0 + tl.exp(-x)) + 0.25, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        tan = torch.empty_like(x)
        sig = torch.empty_like(x)
        n = x.numel()
        tan_sigmoid_pair_kernel[(triton.cdiv(n, 1024),)](x, tan, sig, n, BLOCK_SIZE=1024)
        return tan, sig
