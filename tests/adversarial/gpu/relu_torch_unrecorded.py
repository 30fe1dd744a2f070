"""Red team (GPU): ReLU done by torch with the candidate process's Python op recorder switched
off (``_disable_current_modes`` pops the dispatch mode it records with), beside a Triton kernel
that copies, so the launch counter sees a launch of the candidate's own. The static check
refuses the import; past it, the device profiler must still see aten's kernel do the work."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils._python_dispatch import _disable_current_modes


@triton.jit
def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        with _disable_current_modes():
            return torch.relu(out)
