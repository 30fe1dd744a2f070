"""Class 5, one input layout: the problem passes a transposed (column-major) view and the kernel
assumes row-major contiguous memory (row * n_cols + col, strides never read), so it takes the
softmax of the wrong elements."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        softmax_kernel[(n_rows,)](x, out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out
