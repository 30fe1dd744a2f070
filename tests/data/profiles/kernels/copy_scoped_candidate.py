import torch
import torch.nn as nn
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def copy_scoped_kernel(
    # pointers
    x_ptr, out_ptr,
    # sizes
    n_elements,
    # meta
    BLOCK_SIZE: tl.constexpr,
):
    # The copy kernel with Proton intra-kernel scopes around its load and its store; they
    # record cycles only while a Proton instrumentation session runs.
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    with pl.scope("load"):
        x = tl.load(x_ptr + offs, mask=mask)
    with pl.scope("store"):
        tl.store(out_ptr + offs, x, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        copy_scoped_kernel[(triton.cdiv(n, 4096),)](x, out, n, BLOCK_SIZE=4096, num_warps=8)
        return out
