"""Trick (k), harness patching: the harness's own modules are reached through
dataclasses.sys.modules (no import of sys), and compare.compare_outputs is replaced at import
time by a function that always reports a match. The kernel writes zeros. The patch also stays
in the warm worker for every candidate evaluated after this one."""
import dataclasses

import torch
import torch.nn as nn
import triton
import triton.language as tl


_compare = dataclasses.sys.modules["kernelevolve.tools.harness.compare"]
_compare.compare_outputs = lambda *args, **kwargs: ([], None)


@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        zero_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
