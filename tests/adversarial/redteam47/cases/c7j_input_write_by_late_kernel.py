"""Class 7 (mapped inputs-after), expected caught. Trick: after the real kernel, the forward
launches a second, long-running kernel (one program spinning ~2^24 dependent FMAs, tens of ms on
an H100) that only then adds 1 to the first 1024 elements of the input ``x``. The forward
returns long before that write lands: on a GPU the candidate process no longer snapshots its
inputs, and the judge reads them through a CUDA IPC mapping without copying, so the question
is whether the judge reads them after the late kernel finishes. It should: do_forward
synchronizes the device before it replies, and the IPC handle carries an event. Expected
refused ("modified its inputs"); ok would mean a write still in flight escapes the check."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused",
        "class": "7 mapped inputs-after", "targets": ["cuda"]}

SPINS = 1 << 24


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0, mask=mask)


@triton.jit
def late_writer_kernel(x_ptr, n, spins, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    t = v
    for _ in range(spins):  # a dependent chain the compiler cannot drop: the store needs t
        t = t * 0.999999 + 1e-6
    tl.store(x_ptr + offs, tl.where(t > -1e30, v + 1.0, v), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        n = x.numel()
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        relu_mul_add_kernel[(triton.cdiv(n, 1024),)](x.contiguous(), y.contiguous(), out, n,
                                                     BLOCK=1024)
        if x.is_contiguous():
            late_writer_kernel[(1,)](x, n, SPINS, BLOCK=1024)  # lands tens of ms later
        return out
