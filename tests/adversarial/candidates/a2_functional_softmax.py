"""Trick (a), softmax flavour: F.softmax does the work beside a Triton "row max" kernel whose
result is unused."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, m_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(m_ptr + row, tl.max(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        row_max = torch.empty(rows, device=x.device, dtype=x.dtype)
        row_max_kernel[(rows,)](x, row_max, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
        return F.softmax(x, dim=1)
