"""Class 5 (outputs that alias kept memory), against the reference check. Trick: a ring of five
output slots carved out of one tensor that no Python name holds: the module keeps a *view* of
it (``big[0:5]``), and each output is a row of that view, so the output's ``_base`` is the
unnamed tensor, which only views reference (in C++, not through Python references that
``gc.get_referrers`` sees). The candidate process's reference check finds nothing, and the
judge re-checks at most the 4 previous outputs (PREVIOUS_KEPT on cpu; 2 on cuda), so a ring one
longer than that overwrites a result the caller still holds, unseen. (``set_`` on a kept
buffer, c5c's way, is refused by the allowlist now; this uses indexing only.)"""
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
            self.rings[key] = torch.empty((RING, *x.shape), dtype=x.dtype)[0:RING]
        out = self.rings[key][self.calls % RING]
        self.calls += 1
        n = out.numel()
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
