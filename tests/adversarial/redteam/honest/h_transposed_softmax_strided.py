"""Honest: row softmax that reads the input through its strides, so the transposed view the
problem passes is handled without a copy."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_xr, stride_xc, stride_out,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_xr + cols * stride_xc, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride_out + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
        softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), x.stride(1), out.stride(0),
                                  BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out
