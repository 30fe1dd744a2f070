"""Class 3 (inputs a kernel can predict). Trick: KernelBench's ReLU draws its input with
``torch.rand`` (all values in [0, 1)), and the judge's variants (x100, +4, non-contiguous) keep
every value non-negative; only the NaN/inf sets hold a negative value (-inf), and those are
"report" by default. So a plain copy passes as ReLU."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_rand.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu"]}


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
