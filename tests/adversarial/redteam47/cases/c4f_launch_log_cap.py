"""Class 4 (the interpreter is not the GPU). Trick: the GPU-compile stage compiles the launches
the interpreter logged, and the log keeps the first 64 only. The forward first launches a
harmless kernel 64 times (zero-size grid work: one masked-off program each), then the real
kernel, whose int/float runtime-``if`` no GPU compiler accepts (see the c4d control): it is
never logged, so never compiled."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "4 interpreter != GPU",
        "targets": ["cpu"]}


@triton.jit
def nop_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
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
        for _ in range(64):
            nop_kernel[(1,)](out, 0, BLOCK=16)
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
