"""Trick (c), ring variant: three output buffers kept in a list, handed out in turn. The output
of the previous call is never touched by the next one, so checking only that output misses it;
the call after next rewrites it. Refused by the candidate process's reference check (the list
still holds the output) and by the judge's digests of the outputs it holds."""
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
        self._ring = []
        self._turn = 0

    def forward(self, x, y):
        n = x.numel()
        if len(self._ring) < 3 or self._ring[0].numel() != n:
            self._ring = [torch.empty(n, device=x.device, dtype=x.dtype) for _ in range(3)]
        self._turn = (self._turn + 1) % 3
        out = self._ring[self._turn]
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out.view(x.shape)
