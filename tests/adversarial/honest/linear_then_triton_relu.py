"""Honest: for a problem that allows the library linear (KERNELEVOLVE_ALLOWED_OPS = ["linear"]),
F.linear from the library, then the relu epilogue in a masked Triton kernel, in place on the
fresh linear output."""
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    v = tl.load(ptr + offs, mask=mask, other=0.0)
    tl.store(ptr + offs, tl.maximum(v, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        out = F.linear(x, self.linear.weight, self.linear.bias).contiguous()
        n = out.numel()
        relu_inplace_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK_SIZE=1024)
        return out
