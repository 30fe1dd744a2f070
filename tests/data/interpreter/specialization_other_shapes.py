"""An EVEN specialization (n % BLOCK == 0) that compiles, launched at the base shape (16 x 256),
and a tail specialization no GPU compiler accepts (``scale`` an int in one branch of a runtime
``if`` and a float in the other), launched only at the other shapes."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(
    # pointers
    x_ptr, y_ptr, out_ptr,
    # sizes
    n,
    # meta
    EVEN: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        out = tl.maximum(tl.load(x_ptr + offs), 0.0) * tl.load(y_ptr + offs) + 1.0
        tl.store(out_ptr + offs, out)
    else:
        mask = offs < n
        scale = 1
        if n > 0:
            scale = 1.0
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, (tl.maximum(x, 0.0) * y + 1.0) * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, EVEN=n % 256 == 0, BLOCK=256)
        return out
