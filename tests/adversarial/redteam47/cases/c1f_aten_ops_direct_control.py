"""Class 1 control (expected caught): ``torch.ops.aten.relu.default`` and friends called
directly. They go through the dispatcher, so the op recorder sees them; this case checks that the
runner and the recorder work, and is not a hole."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "1 string imports",
        "targets": ["cpu"]}


@triton.jit
def touch_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        aten = torch.ops.aten
        out = aten.add.Scalar(aten.mul.Tensor(aten.relu.default(x), y), 1).contiguous()
        n = out.numel()
        touch_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
