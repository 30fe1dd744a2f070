"""Class 4 (the interpreter is not the GPU). Trick: a two-config ``@triton.autotune`` whose
second config (BLOCK 1024, FAST) drops the + 1. In the interpreter only the first config runs
(nothing can be benchmarked), and the GPU-compile stage compiles only what was launched, so the
wrong config is never run nor compiled; on a GPU the autotuner may well pick it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "4 interpreter != GPU",
        "targets": ["cpu"]}


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256, "FAST": False}, num_warps=4),
        triton.Config({"BLOCK": 1024, "FAST": True}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, FAST: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    if FAST:
        out = tl.maximum(x, 0.0) * y
    else:
        out = tl.maximum(x, 0.0) * y + 1.0
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()

        def grid(meta):
            return (triton.cdiv(n, meta["BLOCK"]),)

        relu_mul_add_kernel[grid](x, y, out, n)
        return out
