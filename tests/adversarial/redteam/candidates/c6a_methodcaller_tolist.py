"""Class 6, compute the op recorder does not see: the inputs are read into Python lists with
operator.methodcaller("tolist") (no ".tolist" attribute in the source; tolist dispatches no aten
op on cpu), relu(x) * y + 1 is computed in a list comprehension, and torch.tensor(list) (which
dispatches only lift_fresh, an allowed op) brings it back; a Triton kernel copies it out."""
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl

_to_list = operator.methodcaller("tol" + "ist")


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        xs, ys = _to_list(x.reshape(-1)), _to_list(y.reshape(-1))
        answer = torch.tensor([max(a, 0.0) * b + 1.0 for a, b in zip(xs, ys, strict=True)],
                              dtype=x.dtype, device=x.device)
        out = torch.empty_like(x)
        n = out.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](answer, out, n, BLOCK_SIZE=1024)
        return out
