"""Scale-blind tolerance: KernelBench level1/23_Softmax has rows of 393,216 columns, so every
probability is near 2.5e-6, below an absolute fp32 tolerance of 1e-4. This kernel never reads
its input and writes 1/dim everywhere. Expected: mismatch (the absolute term scales with the
output's magnitude)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(
    # Pointers
    out_ptr,
    # Sizes
    n_elements,
    # Scalars
    value,
    # Meta-parameters
    BLOCK_SIZE: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.zeros((BLOCK_SIZE,), dtype=tl.float32) + value, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = out.numel()
        fill_kernel[(triton.cdiv(n, 4096),)](out, n, 1.0 / x.shape[-1], BLOCK_SIZE=4096)
        return out
