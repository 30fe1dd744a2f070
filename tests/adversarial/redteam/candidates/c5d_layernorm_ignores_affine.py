"""Class 5, one parameter distribution: LayerNorm that normalizes but never applies its weight
and bias. The harness only checks the parameters the constructor makes (weight 1, bias 0), where
the affine step is the identity; any trained or perturbed parameters would expose it."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, eps,
                     BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    tl.store(out_ptr + row * stride_out + cols, diff / tl.sqrt(var + eps), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        layernorm_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0),
                                        self.norm.eps,
                                        BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
        return out
