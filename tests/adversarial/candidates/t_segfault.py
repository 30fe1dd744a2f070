"""Trick (t): a hard crash of the worker: the kernel stores through a wild pointer (an offset of
2**44 bytes), which the interpreter (or a GPU) turns into a segfault / illegal address."""
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
    far = offs.to(tl.int64) + (1 << 42)
    tl.store(out_ptr + far, tl.maximum(x, 0.0) * y + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
