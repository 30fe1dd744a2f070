"""Class 3 (inputs a kernel can predict). Trick: the judge's other-value variants are fixed
transforms (inputs x100 and inputs + 4), so a kernel can recognise them: a first Triton kernel
measures max|x| and mean(x) and writes a flag; the second takes an exact path only when the flag
says "x100 or +4", and otherwise a "fast" path that returns 0.5 wherever |x| > 5.5 (never the
case for randn inputs, wrong for any input spread wider, e.g. x * 10)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/sigmoid.py", "expect": "refused", "class": "3 predictable inputs",
        "targets": ["cpu"]}


@triton.jit
def detect_kernel(x_ptr, flag_ptr, n, BLOCK: tl.constexpr):
    big = 0.0
    total = 0.0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        big = tl.maximum(big, tl.max(tl.abs(v), axis=0))
        total += tl.sum(v, axis=0)
    judged = (big > 20.0) | (total / n > 2.0)
    tl.store(flag_ptr, judged.to(tl.int32))


@triton.jit
def sigmoid_kernel(x_ptr, flag_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    exact = 1.0 / (1.0 + tl.exp(-v))
    judged = tl.load(flag_ptr)
    fast = tl.where(tl.abs(v) > 5.5, 0.5, exact)
    tl.store(out_ptr + offs, tl.where(judged != 0, exact, fast), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n = x.numel()
        flag = torch.zeros(1, dtype=torch.int32)
        detect_kernel[(1,)](x, flag, n, BLOCK=1024)
        out = torch.empty_like(x)
        sigmoid_kernel[(triton.cdiv(n, 1024),)](x, flag, out, n, BLOCK=1024)
        return out
