"""Honest: abs(x) by clearing the sign bit. The fp32 tensors are passed to the kernel as int32
through triton.reinterpret (the documented way to view a tensor's bits), so the kernel works on
integers with a mask."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def abs_bits_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    bits = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, bits & 0x7FFFFFFF, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        abs_bits_kernel[(triton.cdiv(n, 1024),)](triton.reinterpret(x, tl.int32),
                                                 triton.reinterpret(out, tl.int32), n,
                                                 BLOCK_SIZE=1024)
        return out
