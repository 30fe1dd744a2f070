import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_elements,
    # meta
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 4096),)](x, out, n, BLOCK_SIZE=4096, num_warps=8)
        return out
