"""Slack, a discontinuity: floor(x / 4) + y with the floor written as a cast to int32, which
truncates toward zero: every negative x that is not a multiple of 4 comes out 1 too high (a
third of the elements, on an output the fp32 reference computes exactly). Nudging the inputs
by a relative half-epsilon moves a multiple of 4 just past itself, so the nudged reference's
floor drops by 1 there: its error against the truth is 1, and the slack 8, whatever the kernel
does. An honest kernel gets the exact integers and needs no slack at all."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def trunc_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    q = (x / 4.0).to(tl.int32).to(tl.float32)
    tl.store(out_ptr + offs, q + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        trunc_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        return out
