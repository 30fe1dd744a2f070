"""A LARGE specialization (a million elements or more) no GPU compiler accepts (``scale`` an int
in one branch of a runtime ``if`` and a float in the other): the interpreter targets check shrunk
sizes, so only mtia-sim's simulated run at the problem's own sizes launches it."""
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
    LARGE: tl.constexpr, BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    out = tl.maximum(x, 0.0) * y + 1.0
    if LARGE:
        scale = 1
        if n > 0:
            scale = 1.0
        out = out * scale
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, LARGE=n >= (1 << 20),
                                                     BLOCK=1024)
        return out
