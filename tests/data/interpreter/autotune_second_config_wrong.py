"""A two-config @triton.autotune whose second config (BLOCK 512, FAST) drops the + 1: a GPU's
autotuner may pick it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 256, "FAST": False}, num_warps=4),
        triton.Config({"BLOCK": 512, "FAST": True}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit
def relu_mul_add_kernel(
    # pointers
    x_ptr, y_ptr, out_ptr,
    # sizes
    n,
    # meta
    BLOCK: tl.constexpr, FAST: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    out = tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0) * tl.load(y_ptr + offs, mask=mask)
    if not FAST:
        out += 1.0
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        relu_mul_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
        return out
