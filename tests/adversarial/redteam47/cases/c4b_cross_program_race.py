"""Class 4 (the interpreter is not the GPU). Trick: a blocked cumsum in which program (chunk c,
row r) adds the last value that program (c - 1, r) stored into the output, with no flag, fence
or second pass. Triton's interpreter runs programs one at a time in id order (axis 0 outermost),
so the carry is always there; on a GPU the programs run concurrently and the read races the
write."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/cumsum.py", "expect": "refused", "class": "4 interpreter != GPU",
        "targets": ["cpu", "mtia-sim:2i"]}


@triton.jit
def cumsum_chunk_kernel(x_ptr, out_ptr, L, sx0, sx1, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    row = tl.program_id(1)
    offs = c * BLOCK + tl.arange(0, BLOCK)
    mask = offs < L
    v = tl.load(x_ptr + row * sx0 + offs * sx1, mask=mask, other=0.0)
    s = tl.cumsum(v, axis=0)
    carry = tl.load(out_ptr + row * L + c * BLOCK - 1, mask=c > 0, other=0.0)  # races on a GPU
    tl.store(out_ptr + row * L + offs, s + carry, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, L = x.shape
        out = torch.empty((B, L), dtype=x.dtype)
        cumsum_chunk_kernel[(triton.cdiv(L, 256), B)](x, out, L, x.stride(0), x.stride(1),
                                                      BLOCK=256)
        return out
