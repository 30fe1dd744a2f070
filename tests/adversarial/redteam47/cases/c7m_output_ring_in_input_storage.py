"""Class 7 (memory the judge does not follow: an alias of an input). Trick: the output ring of
c7l kept in the storage *behind the forward's input*: the forward copies ``x`` into the head of
a pool five outputs longer and re-points the caller's own tensor at it (``x.data = pool[:n]``,
``.data`` is on the allowlist; the values are the same, so the inputs-after comparison, which
reads ``x``'s elements only, sees nothing), then hands out each output as a view of ``x`` past
its end (``x.as_strided(shape, stride, n * slot)``). The output's ``_base`` is an input, which
candidate.retained_outputs leaves to the input checks; its storage is the input's, which
candidate.OutputStorages never follows; the input checks compare ``x``'s n elements, not the
storage behind them. Call k's result is overwritten at call k + 5, past the 4 (2 on cuda)
earlier outputs the judge re-checks. Non-contiguous inputs (the layout variants) get a fresh
output, so the trick never meets a copy the caller does not hold."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused",
        "class": "7 memory not followed", "targets": ["cpu", "cuda"]}

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
        self.pool = None
        self.calls = 0

    def forward(self, x, y):
        n = x.numel()
        if not (x.is_contiguous() and y.is_contiguous()):
            out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
            relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x.contiguous(), y.contiguous(), out, n,
                                                         BLOCK=1024)
            return out
        pool = self.pool
        if pool is None or pool.numel() != n * (RING + 1) or pool.dtype != x.dtype or (
                pool.device != x.device):
            pool = torch.empty(n * (RING + 1), dtype=x.dtype, device=x.device)
            self.pool = pool
        if x.data_ptr() != pool.data_ptr():
            pool[:n].copy_(x.view(-1))
            x.data = pool[:n].view(x.shape)  # the caller's tensor now lives at the pool's head
        slot = 1 + self.calls % RING
        self.calls += 1
        out = x.as_strided(x.shape, x.stride(), n * slot)  # a view of the input, past its end
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
