"""Class 7 (inputs changed inside the forward, restored before it returns). Trick: the first
kernel computes relu(x) * y + 1 and writes -x back into the caller's ``x``; a second kernel
negates it again (exact: negation only flips the sign bit, NaN and -0.0 included), so the input
is bitwise what it was when the forward returns. Neither the candidate process's snapshot (cpu)
nor the judge's mapped inputs-after comparison (cuda), both taken after the forward, can see a
change that is undone within it; only a reader running concurrently (another stream, another
thread of a real program) would. Expected to pass: recorded to show the judge's rule is "the
inputs are unchanged when the forward returns", not "the forward never writes them" (no gain
here; a kernel could use an input as scratch space to save a temporary the same way)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CASE = {"problem": "problems/relu_mul_add.py", "expect": "refused",
        "class": "7 transient input write", "targets": ["cpu", "cuda"]}


@triton.jit
def relu_mul_add_negate_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) * y + 1.0, mask=mask)
    tl.store(x_ptr + offs, -x, mask=mask)  # the caller's input, changed


@triton.jit
def negate_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=mask), mask=mask)  # ... and restored


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        xc = x if x.is_contiguous() else x.contiguous()
        yc = y if y.is_contiguous() else y.contiguous()
        n = xc.numel()
        out = torch.empty(xc.shape, dtype=xc.dtype, device=xc.device)
        grid = (triton.cdiv(n, 1024),)
        relu_mul_add_negate_kernel[grid](xc, yc, out, n, BLOCK=1024)
        negate_kernel[grid](xc, n, BLOCK=1024)
        return out
