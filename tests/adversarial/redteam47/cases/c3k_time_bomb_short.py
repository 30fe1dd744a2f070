"""Class 3 (inputs a kernel can predict), c3i's time bomb set just past the judge's fixed
number of forwards of 2026-12-07 (about 15 on the cpu target): right for the first 24 forwards
of an instance, relu(x) * y (no + 1) from then on. The judge's run of forwards of a length drawn
per evaluation (at least 16 more, then a checked one) reaches it every time; c3i's bomb at 40 is
reached by most draws."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu"]}


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + c, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, y):
        self.calls += 1
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        c = 1.0 if self.calls <= 24 else 0.0
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, c, BLOCK=1024)
        return out
