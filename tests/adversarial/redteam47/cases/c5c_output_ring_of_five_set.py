"""Class 5 (outputs that alias kept memory), against the newer checks. Trick: a ring of five
buffers, each output handed out as a fresh tensor object that shares a ring buffer's storage
(``torch.empty(0).set_(buffer)``: allowed ops, and no ``_base``). The candidate process's
reference check (gc referrers of the output object and of its ``_base``) finds nothing holding
the returned object, and the judge re-checks at most the 4 previous outputs (PREVIOUS_KEPT on
cpu; 2 on cuda), so a ring one longer than that is never seen overwriting a held result."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused", "class": "5 output ring",
        "targets": ["cpu"]}

RING = 5


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
        out = torch.empty(0, dtype=x.dtype)
        out.set_(self.rings[key][self.calls % RING])
        self.calls += 1
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
