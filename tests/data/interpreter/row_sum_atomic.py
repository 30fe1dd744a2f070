"""Row sums from many programs per row, each adding its chunk's sum with tl.atomic_add: right in
any program order (the fp32 sums' last bits depend on it)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes and strides
    L, stride_x0, stride_x1,
    # meta
    BLOCK: tl.constexpr,
):
    c = tl.program_id(0)
    row = tl.program_id(1)
    offs = c * BLOCK + tl.arange(0, BLOCK)
    mask = offs < L
    v = tl.load(x_ptr + row * stride_x0 + offs * stride_x1, mask=mask, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(v, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        B, L = x.shape
        out = torch.zeros((B,), device=x.device, dtype=x.dtype)
        row_sum_kernel[(triton.cdiv(L, 64), B)](x, out, L, x.stride(0), x.stride(1), BLOCK=64)
        return out
