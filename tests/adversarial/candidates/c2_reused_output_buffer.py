"""Trick (c), buffer variant: a persistent output buffer kept in the module and returned (as a
view) on every call. Each call is right on its own, but every returned tensor aliases the same
memory: the next call silently rewrites the previous result."""
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
        self._buf = None

    def forward(self, x, y):
        n = x.numel()
        if self._buf is None or self._buf.numel() != n:
            self._buf = torch.empty(n, device=x.device, dtype=x.dtype)  # allocate once
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, self._buf, n, BLOCK=1024)
        return self._buf.view(x.shape)
