"""Honest: relu(x) * y + 1 as one masked 1-D Triton kernel over the flattened tensors.
Uses x.contiguous(), .view and torch.empty_like; handles any shape."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    out = tl.maximum(x, 0.0) * y + 1.0
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x_flat = x.contiguous().view(-1)
        y_flat = y.contiguous().view(-1)
        out = torch.empty_like(x_flat)
        n = x_flat.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        relu_mul_add_kernel[grid](x_flat, y_flat, out, n, BLOCK_SIZE=BLOCK_SIZE)
        return out.view(x.shape)
