"""Class 7, interpreter only: the @triton.jit body loads a row and hands it to a plain Python
helper that computes the whole softmax with ndarray methods on the interpreter's numpy buffer
and swaps the result in (x.handle.data = ...). No tl.max, tl.exp or tl.sum runs; on a GPU the
JIT would refuse the call to a non-jit function."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _softmax_on_host(x):
    row = x.handle.data
    e = 2.718281828459045 ** (row - row.max())
    x.handle.data = (e / e.sum()).astype(row.dtype)
    return x


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    tl.store(out_ptr + row * stride_out + cols, _softmax_on_host(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0),
                                      BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
        return out
