"""Trick (h), elementwise flavour: no mask in a 1-D elementwise kernel. Every in-bounds value is
right, but on sizes not divisible by BLOCK the last program reads and WRITES past the end of
the tensors (out-of-bounds stores corrupt neighbouring memory on a GPU)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, BLOCK=1024)
        return out
