import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def step_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_elements,
    # meta
    BLOCK_SIZE: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 0.5 + 1.0, mask=mask)


class ModelNew(nn.Module):
    """One launch per step: correct, and dominated by launch overhead."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        bufs = [torch.empty_like(x), torch.empty_like(x)]
        src = x
        for i in range(self.steps):
            dst = bufs[i % 2]
            step_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK_SIZE=1024, num_warps=4)
            src = dst
        return src.clone() if src is x else src
