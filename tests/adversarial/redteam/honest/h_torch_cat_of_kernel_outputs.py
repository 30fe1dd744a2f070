"""Honest: relu(x) * y + 1 computed by one kernel launch per half of the rows, the two halves
joined with torch.cat (a copy, no arithmetic)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0, mask=mask)


def _relu_mul_add(x, y):
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = out.numel()
    relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        half = x.shape[0] // 2
        top = _relu_mul_add(x[:half], y[:half])
        bottom = _relu_mul_add(x[half:], y[half:])
        return torch.cat([top, bottom], dim=0)
