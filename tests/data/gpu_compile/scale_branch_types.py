"""Right in Triton's interpreter (plain Python picks a branch), refused by the GPU compiler on
every Triton version: a value assigned a float in one branch of a runtime ``if`` and an int in
the other ("Mismatched type for scale between then block (fp32) and else block (int32)")."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if pid >= 0:  # noqa: SIM108 (an if statement is the point: a ternary is one type)
        scale = 2.0
    else:
        scale = 2
    tl.store(out_ptr + offs, x * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
