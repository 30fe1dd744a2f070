"""Class 4, sizes: a batch of 8 hard-wired. Sizes of 8 or less were once never perturbed
(MIN_SCALABLE_SIZE); now a small size moves (8 -> 5) where it shapes an input. The kernel
launches a fixed grid of 8 programs; the row length is read from the input and masked, so only
the moved batch catches it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

N_ROWS = 8


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride_out + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(N_ROWS,)](x, out, x.shape[1], x.stride(0), out.stride(0),
                                  BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
        return out
