"""Trick (a): torch does the work. A Triton kernel is launched to "prefetch" the inputs, but the
result is computed with torch.relu(x) * y + 1 in forward."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def prefetch_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.load(x_ptr + offs, mask=mask)
    tl.load(y_ptr + offs, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        n = x.numel()
        prefetch_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)
        # Fused relu-mul-add: torch's elementwise kernels are already vectorized.
        return torch.relu(x) * y + 1
