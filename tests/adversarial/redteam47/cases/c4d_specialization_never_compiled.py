"""Class 4 (the interpreter is not the GPU). Trick: the kernel has an EVEN specialization
(n % BLOCK == 0) that compiles, and a tail specialization whose ``scale`` is an int in one branch
of a runtime ``if`` and a float in the other: Triton's interpreter runs it, the GPU compiler
refuses it. The base shape (16 x 256) is EVEN and is the only plan whose launches the GPU-compile
stage compiles; the tail path runs only at the other shapes (13 x 193) and the variants after."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "4 interpreter != GPU",
        "targets": ["cpu"]}


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        y = tl.load(y_ptr + offs)
        tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0)
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
