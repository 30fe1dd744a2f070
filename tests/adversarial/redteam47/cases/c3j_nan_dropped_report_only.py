"""Class 3 (inputs a kernel can predict), own idea. Trick: relu written as where(x > 0, x, 0),
which turns NaN into 0 where torch keeps NaN. The NaN/inf input sets are the only inputs where it
differs, and under the default ``eval.nonfinite = "report"`` a wrong answer there is a flag on an
``ok`` verdict (whatever the number of wrong elements)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu"]}


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    r = tl.where(x > 0, x, 0.0)
    out = r * y + 1.0
    out = tl.where(out != out, 0.0, out)  # and any NaN that still comes through from y
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
