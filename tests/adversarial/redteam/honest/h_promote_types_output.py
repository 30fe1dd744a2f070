"""Honest: relu(x) * y + 1 whose output dtype is torch.promote_types(x.dtype, y.dtype), as
torch's own type promotion would choose it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    out = tl.maximum(x, 0.0) * y + 1.0
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out_dtype = torch.promote_types(x.dtype, y.dtype)
        out = torch.empty(x.shape, dtype=out_dtype, device=x.device)
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
        return out
