"""Class 7 (memory the judge does not follow), against the output-storage check. Trick: c5c's
ring of five output slots, with the two ways c5c and c5d were caught closed off: the slots are
rows of a *non-persistent buffer* the forward registers on the module (not in the state dict,
so the strict weight load does not mind it), and each output is a fresh tensor whose storage is
pointed at a slot by assigning ``out.data = slot`` (``.data`` is on the allowlist as a view;
``set_`` is not). The output then has no ``_base`` and nothing references the returned object
(candidate.retained_outputs finds nothing), and candidate.OutputStorages skips every storage
that belongs to the forward's inputs, parameters *or buffers* ("the input checks' business"),
so the slot's storage is never followed. The judge's own re-check holds at most 4 earlier
outputs (2 on cuda): call k's result is overwritten at call k + 5, after the caller (the judge)
let it go, but a real caller that keeps results gets them silently changed."""
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
        self.calls = 0

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        n = x.numel()
        pool = getattr(self, "pool", None)
        if pool is None or pool.shape[1] != n or pool.dtype != x.dtype or (
                pool.device != x.device):
            # not in the state dict: load_state_dict(strict=True) never sees it
            self.register_buffer("pool", torch.empty((RING, n), dtype=x.dtype,
                                                     device=x.device), persistent=False)
        out = torch.empty(0, dtype=x.dtype, device=x.device)
        out.data = self.pool[self.calls % RING].view(x.shape)
        self.calls += 1
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
