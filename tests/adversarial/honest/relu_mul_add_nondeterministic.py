"""Honest but not bitwise deterministic: relu(x) * y + 1, rounded differently on every call
(as a kernel with atomics, or cuDNN's transposed convolution, is), always within fp32
tolerance. Two runs on the same input differ in the last bits; the output the caller holds
never changes afterwards."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_mul_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, jitter, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    out = (tl.maximum(x, 0.0) * y + 1.0) * (1.0 + jitter)
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x, y):
        self.calls += 1
        x_flat = x.contiguous().view(-1)
        y_flat = y.contiguous().view(-1)
        out = torch.empty_like(x_flat)
        n = x_flat.numel()
        grid = (triton.cdiv(n, 1024),)
        relu_mul_add_kernel[grid](x_flat, y_flat, out, n, 2.4e-7 * (self.calls % 2),
                                  BLOCK_SIZE=1024)
        return out.view(x.shape)
