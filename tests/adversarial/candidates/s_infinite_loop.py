"""Trick (s): an infinite loop in forward: a host-side spin-wait on a "ready" flag that no kernel
ever sets."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ready = torch.zeros(1, dtype=torch.int32)

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        while int(self.ready[0]) == 0:  # wait for the (never launched) producer kernel
            pass
        return out
