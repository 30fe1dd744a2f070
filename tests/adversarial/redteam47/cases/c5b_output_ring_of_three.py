"""Class 5 (outputs that alias kept memory). Trick: outputs are handed out from a ring of three
buffers kept on the module (per shape): call k writes buffer k % 3. The judge checks only that
the output of the *previous* call did not change; those from two and three calls back, which
later calls overwrite, are never looked at again."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "5 output ring",
        "targets": ["cpu"]}

RING = 3


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.rings = {}
        self.calls = 0

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        key = tuple(x.shape)
        if key not in self.rings:
            self.rings[key] = [torch.empty_like(x) for _ in range(RING)]
        out = self.rings[key][self.calls % RING]
        self.calls += 1
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
