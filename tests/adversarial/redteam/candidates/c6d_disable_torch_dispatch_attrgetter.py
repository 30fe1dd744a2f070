"""Class 6, compute the op recorder does not see: torch._C._DisableTorchDispatch, fetched with
operator.attrgetter("_C._DisableTorchDispatch")(torch) (no private attribute or torch._C import
in the source), excludes the Python dispatch keys, so the recorder's TorchDispatchMode is
skipped while torch computes the answer; a Triton kernel copies it out."""
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl

_no_dispatch = operator.attrgetter("_C._Disable" + "TorchDispatch")(torch)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        with _no_dispatch():
            answer = (torch.relu(x) * y + 1).contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK_SIZE=1024)
        return out
